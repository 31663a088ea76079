"""Published figures beside ours: the reference tables overlaid on our measurements, and the 2019 study then and now."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .data import ok_runs
from .figures import _best_batch, _flagged
from .style import (
    FLAGGED_NOTE,
    flag_points,
    footnote,
    framework_colour,
    grid,
    mark_flags,
    model_mode_grid,
    plain_numbers,
    plain_text,
    series_framework,
    series_styles,
)
from .style import canonical_framework as _canonical


def _published_label(r) -> str:
    n = pd.to_numeric(r.get("accelerators"), errors="coerce")
    hardware = plain_text(r["hardware"])[:40]
    if pd.isna(n) or n < 1:
        device = hardware  # a CPU row: no accelerator count to give
    elif re.match(rf"^{int(n)}\s*x\s", hardware):
        device = hardware  # the hardware name already says how many
    else:
        device = f"{int(n)}x {hardware}"
    batch = str(r.get("batch_per_device") or "").strip()
    parts = [f"published: {plain_text(r['framework'])} {r['mode']}", device, str(r["precision"])]
    if batch and batch.lower() != "nan":
        parts.append(f"bs{batch}")
    return ", ".join(parts)


def published_overlay(runs: pd.DataFrame, published: pd.DataFrame):
    """Our best measured images/s (filled, framework colour) beside published figures for the same models
    (hatched, not measured here), one published row per device."""
    best = _best_batch(runs)
    if best.empty or published is None or published.empty:
        return None
    models = sorted(set(best["model"]) & set(published["model"]))
    if not models:
        return None
    pub = published_condensed(published[published["model"].isin(models)])
    styles = series_styles(best)
    rows_per_model = max(len(best[best["model"] == m]) + len(pub[pub["model"] == m]) for m in models)
    # a page wide for one model (its labels are long), half each for two: labels stay legible at the PDF's size
    fig, axes = grid(1, len(models), w=8.0 if len(models) == 1 else 5.6, h=0.27 * max(rows_per_model, 6) + 1.5)
    used, drawn = {}, []
    for ax, model in zip(axes.flat, models):
        ours = best[best["model"] == model]
        theirs = pub[pub["model"] == model]
        labels, values, looks = [], [], []
        for _, r in ours.iterrows():
            drawn.append(_flagged(r))
            labels.append(plain_text(f"{'! ' if drawn[-1] else ''}measured here: {r['series']} {r['mode']} "
                                     f"bs{r['batch_size']} ({plain_text(r['platform'])[:24]})"))
            values.append(r["images_per_sec_median"])
            colour = styles[r["series"]]["color"]
            looks.append({"marker": "o", "mfc": "white" if _flagged(r) else colour, "mec": colour})
            used[_canonical(r.get("framework", series_framework(r["series"])))] = colour
        for _, r in theirs.iterrows():
            labels.append(_published_label(r))
            values.append(r["images_per_sec"])
            colour = framework_colour(r["framework"])
            looks.append({"marker": "D", "mfc": "white", "mec": colour})
            used[_canonical(r["framework"])] = colour
        y = np.arange(len(labels))
        # points, not bars: a log axis has no zero for a bar to start from (a cut origin makes lengths meaningless)
        for yi, v, look in zip(y, values, looks):
            ax.plot([v], [yi], ls="none", ms=7, mew=1.5, **look)
        ax.set_yticks(y, labels=labels, fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("images/s (log scale)")
        ax.set_title(f"{model}: measured here vs published", fontsize=9)
        ax.invert_yaxis()
        if any(look["marker"] == "o" and look["mfc"] == "white" for look in looks):
            footnote(ax, FLAGGED_NOTE)
    fig.tight_layout()
    handles = [Patch(facecolor=c, edgecolor=c, label=fw) for fw, c in sorted(used.items())]
    handles += [Line2D([], [], ls="none", marker="o", color="#888888", label="measured here (filled circle)"),
                Line2D([], [], ls="none", marker="D", mfc="white", mec="#888888",
                       label="published, not measured here (open diamond)")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(handles)),
               fontsize=8, frameon=False)
    return mark_flags(fig, drawn)


def then_and_now(runs: pd.DataFrame, seed: pd.DataFrame):
    """The 2019 study's numbers (dashed, published) beside this machine's (solid), per model x mode, each
    framework in its own colour."""
    ok = ok_runs(runs)
    if ok.empty or seed is None or seed.empty:
        return None
    panels = sorted(set(zip(ok["model"], ok["mode"])) & set(zip(seed["model"], seed["mode"])))
    if not panels:
        return None
    styles = series_styles(ok)
    # Hardware of 2019 by thin markers that no series style uses, so they never read as an engine.
    hw_markers = dict(zip(sorted(seed["hardware"].unique()), ["x", "+", "2", "3", "4", "|", "_"] * 4))
    drawn: list[bool] = []

    def draw(ax, model, mode):
        old = seed[(seed["model"] == model) & (seed["mode"] == mode)]
        for (hw, fw), s in old.groupby(["hardware", "framework"]):
            s = s.sort_values("batch_size")
            ax.plot(s["batch_size"], s["images_per_sec"], ls="--", lw=1.2, marker=hw_markers[hw], ms=6,
                    color=framework_colour(fw), label=f"2019 published: {_canonical(fw)}, {plain_text(hw)[:30]}")
        now = ok[(ok["model"] == model) & (ok["mode"] == mode)]
        for (platform, series), s in now.groupby(["platform", "series"]):
            s = s.sort_values("batch_size")
            st = styles[series]
            flagged = np.array([_flagged(r) for _, r in s.iterrows()], dtype=bool)
            drawn.extend(flagged)
            ax.plot(s["batch_size"], s["images_per_sec_median"], ls="-", lw=2.2, marker=st["marker"], ms=4,
                    markevery=list(~flagged), color=st["color"],
                    label=f"measured here: {plain_text(series)}, {plain_text(platform)[:30]}")
            if flag_points(ax, s["batch_size"], s["images_per_sec_median"], flagged, st["color"], st["marker"]):
                footnote(ax, FLAGGED_NOTE)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted(set(old["batch_size"]) | set(now["batch_size"]))
        ax.set_xticks(ticks, labels=[str(int(b)) for b in ticks])
        plain_numbers(ax.yaxis)
        ax.set_xlabel("batch size")
        ax.set_ylabel("images/s")
        ax.set_title(f"{model} - {mode}" + (" (2019 'training' had no optimizer update)" if mode == "training" else ""),
                     fontsize=8)

    extra = [Line2D([], [], color="#555555", ls="-", lw=2.2, label="solid: measured here"),
             Line2D([], [], color="#555555", ls="--", lw=1.2, label="dashed: 2019 published")]
    return mark_flags(model_mode_grid(ok, draw, "Then and now: the 2019 study's published numbers beside this machine",
                                      panels=panels, w=5.5, h=3.6, extra_legend=extra), drawn)


def published_condensed(published: pd.DataFrame) -> pd.DataFrame:
    """One comparable row per device: single-device rows only (a multi-GPU or multi-node figure is a scaling point,
    in the scaling section), and per model, mode and hardware the row with the highest published images/s (its
    precision and batch in its label; the full table is the details' appendix)."""
    if published is None or published.empty:
        return published
    keys = ["model", "mode", "hardware"]
    values = pd.to_numeric(published["images_per_sec"], errors="coerce")
    devices = pd.to_numeric(published["accelerators"], errors="coerce")
    ranked = published.assign(_ips=values)[devices.isna() | (devices <= 1)].dropna(subset=["_ips"])
    # Sorting, then keeping the first row per key, also keeps rows whose key has a missing part.
    ranked = ranked.sort_values("_ips", ascending=False, kind="stable").drop_duplicates(keys)
    ranked = ranked.assign(images_per_sec=ranked["_ips"]).drop(columns="_ips")
    return ranked.sort_values(["model", "mode", "images_per_sec"], ascending=[True, True, False]).reset_index(drop=True)
