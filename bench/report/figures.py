"""The report's figures. Each function takes tidy tables and returns matplotlib figures (none without data)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .data import best_batch, ok_runs

PHASE_ORDER = ["h2d", "forward", "backward", "update", "communication"]
# One colour per framework in every figure; engines and precisions of a framework differ by line style.
FRAMEWORK_COLOURS = {"torch": "#ee4c2c", "tensorflow": "#1f77b4", "jax": "#2ca02c", "onnxruntime": "#9467bd",
                     "openvino": "#17becf", "mxnet": "#e6ab02", "caffe2": "#8c564b", "null": "#7f7f7f",
                     "other": "#bcbd22"}
# Phases: earth tones and greys that no framework uses.
PHASE_COLOURS = {"h2d": "#d9d9d9", "forward": "#a6761d", "backward": "#666666", "update": "#e7d4b5",
                 "communication": "#000000"}
_STYLES = ["-", "--", ":", "-."]
FLAGGED_NOTE = "hollow: flagged, not used for findings"


def framework_of(series: str) -> str:
    """The framework part of a series label ('torch/compile bf16' -> 'torch')."""
    return series.split("/")[0].split(" ")[0]


def colours(series) -> dict[str, str]:
    """Each series in its framework's colour, the same in every figure."""
    return {s: FRAMEWORK_COLOURS.get(framework_of(s), FRAMEWORK_COLOURS["other"]) for s in set(series)}


def linestyles(series) -> dict[str, str]:
    """The framework's default series solid; its other engines/precisions dashed, dotted, ..."""
    out, seen = {}, {}
    for s in sorted(set(series), key=lambda s: (framework_of(s), s != framework_of(s), s)):
        fw = framework_of(s)
        out[s] = _STYLES[seen.get(fw, 0) % len(_STYLES)]
        seen[fw] = seen.get(fw, 0) + 1
    return out


def _flagged(row) -> bool:
    return bool(row.get("flags")) if isinstance(row.get("flags"), str) else False


def _legend_below(fig, axes) -> None:
    """One de-duplicated legend under the panels, never over the data."""
    handles, labels = {}, []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
        if ax.get_legend():
            ax.get_legend().remove()
    if labels:
        fig.legend([handles[lab] for lab in labels], labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=min(4, len(labels)), fontsize=8, frameon=False)


def _grid(n_rows: int, n_cols: int, w: float = 4.2, h: float = 3.0):
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False)
    return fig, axes


def _panels(df: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(set(zip(df["model"], df["mode"])))


def _model_mode_grid(df: pd.DataFrame, draw, title: str, panels=None, n_cols: int = 2, w: float = 4.2,
                     h: float = 3.0):
    """A figure with one panel per (model, mode); `draw(ax, model, mode)` fills each panel."""
    panels = panels if panels is not None else _panels(df)
    n_cols = min(n_cols, len(panels))
    fig, axes = _grid(math.ceil(len(panels) / n_cols), n_cols, w=w, h=h)
    for ax, (model, mode) in zip(axes.flat, panels):
        draw(ax, model, mode)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig


def _platform_rows(df: pd.DataFrame, draw, title: str, w: float, h: float):
    """A figure with one row per platform; `draw(ax, platform_rows)` fills each."""
    platforms = sorted(df["platform"].unique())
    fig, axes = _grid(len(platforms), 1, w=w, h=h)
    for ax, platform in zip(axes.flat, platforms):
        draw(ax, df[df["platform"] == platform])
        ax.set_title(platform, fontsize=10)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig


def _grouped_bars(ax, g: pd.DataFrame, value: str, col: dict, markers: dict | None = None) -> None:
    """Bars of `value` per (model, mode) group, one colour per series; optional extra columns as markers."""
    groups = _panels(g)
    series = sorted(g["series"].unique())
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        for j, (model, mode) in enumerate(groups):
            r = g[(g["series"] == s) & (g["model"] == model) & (g["mode"] == mode)]
            if r.empty:
                continue
            r = r.iloc[0]
            xpos = j - 0.4 + width * (i + 0.5)
            flagged = _flagged(r)
            ax.bar(xpos, r[value], width=width, color=col[s], label=s, hatch="xx" if flagged else None,
                   edgecolor="white" if flagged else None)
            if flagged:
                ax.annotate("!", (xpos, r[value]), ha="center", va="bottom", fontsize=9, color="red")
            for column, style in (markers or {}).items():
                label = column.rsplit("_", 1)[-1] if (i, j) == (0, 0) else None
                ax.plot([xpos], [r[column]], style, ms=4, label=label)
    ax.set_xticks(range(len(groups)), labels=[f"{m}\n{mo}" for m, mo in groups], fontsize=8)
    ax.legend(fontsize=8)


def _lines_vs_batch(ok: pd.DataFrame, value: str, ylabel: str, title: str, scale: float = 1.0,
                    ci: tuple[str, str] | None = None, **grid) -> list:
    """A figure per platform, a panel per model x mode, a line per series of `value` (x `scale`) against
    batch size on a log2 axis, with CI bars when `ci` names the low/high columns."""
    figs = []
    if ok.empty:
        return figs
    col, style = colours(ok["series"]), linestyles(ok["series"])
    for platform, g in ok.groupby("platform"):
        def draw(ax, model, mode, g=g):
            p = g[(g["model"] == model) & (g["mode"] == mode)]
            for series, s in p.groupby("series"):
                s = s.sort_values("batch_size")
                y = s[value].to_numpy() * scale
                err = None if ci is None else [y - s[ci[0]].to_numpy() * scale, s[ci[1]].to_numpy() * scale - y]
                ax.errorbar(s["batch_size"], y, yerr=err, capsize=3, label=series, color=col[series],
                            ls=style[series])
                flagged = np.array([_flagged(r) for _, r in s.iterrows()], dtype=bool)
                for mask, face in ((~flagged, col[series]), (flagged, "none")):
                    if mask.any():
                        ax.plot(s["batch_size"].to_numpy()[mask], y[mask], "o", color=col[series],
                                markerfacecolor=face, ls="none")
                if flagged.any():
                    ax.text(0.99, 0.02, FLAGGED_NOTE, transform=ax.transAxes, ha="right", va="bottom", fontsize=6)
            ticks = sorted(p["batch_size"].unique())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, labels=[str(b) for b in ticks])
            ax.set_xlabel("batch size")
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            ax.set_title(f"{model} - {mode}", fontsize=9)
            ax.legend(fontsize=8)

        figs.append(_model_mode_grid(g, draw, f"{title} on {platform}", **grid))
    return figs


def per_hardware(runs: pd.DataFrame) -> list:
    """2019 Figures 3-8: images/s vs batch size, a colour per framework, a panel per model x mode, per device."""
    return _lines_vs_batch(ok_runs(runs), "images_per_sec_median", "images/s (median, 95% CI)",
                           "Throughput vs batch size", ci=("images_per_sec_ci_low", "images_per_sec_ci_high"))


def per_framework(runs: pd.DataFrame, common_batch: int = 32) -> list:
    """2019 Figures 9-11: each framework's images/s on every device, at batch 32 and at each device's best batch."""
    ok = ok_runs(runs)
    figs = []
    if ok.empty:
        return figs
    best = best_batch(ok)
    for series, g in ok.groupby("series"):
        colour = colours([series])[series]

        def draw(ax, model, mode, g=g, series=series, colour=colour):
            b = best[(best["series"] == series) & (best["model"] == model) & (best["mode"] == mode)]
            c = g[(g["model"] == model) & (g["mode"] == mode) & (g["batch_size"] == common_batch)]
            platforms = sorted(set(b["platform"]) | set(c["platform"]))
            x = np.arange(len(platforms))
            for offset, (df, label, hatch) in zip((-0.2, 0.2), ((c, f"batch {common_batch}", None),
                                                                (b, "best batch (hatched)", "//"))):
                vals = [df.loc[df["platform"] == p, "images_per_sec_median"] for p in platforms]
                heights = [v.iloc[0] if len(v) else 0 for v in vals]
                bars = ax.bar(x + offset, heights, width=0.4, label=label, color=colour, hatch=hatch,
                              edgecolor="white" if hatch else None)
                for rect, p, h in zip(bars, platforms, heights):
                    centre = rect.get_x() + rect.get_width() / 2
                    if label == "best batch" and h:
                        bs = int(df.loc[df["platform"] == p, "batch_size"].iloc[0])
                        ax.annotate(f"bs={bs}", (centre, h), ha="center", va="bottom", fontsize=7)
                    elif not h:
                        ax.annotate("not run", (centre, 0), ha="center", va="bottom", fontsize=7, rotation=90)
            ax.set_xticks(x, labels=[p[:38] for p in platforms], fontsize=7, rotation=10)
            ax.set_title(f"{model} - {mode}", fontsize=10)
            ax.set_ylabel("images/s")
            ax.legend(fontsize=8)

        figs.append(_model_mode_grid(g, draw, f"{series}: throughput on each device", w=5.0))
    return figs


def latency_batch1(runs: pd.DataFrame):
    """Batch-1 latency p50 (bar) with p90 and p99 (markers), per model x mode, a panel per device."""
    ok = ok_runs(runs)
    b1 = ok[ok["batch_size"] == 1] if not ok.empty else ok
    if b1.empty:
        return None
    col = colours(ok["series"])

    def draw(ax, g):
        _grouped_bars(ax, g, "latency_ms_p50", col, markers={"latency_ms_p90": "k^", "latency_ms_p99": "kv"})
        ax.set_yscale("log")
        ax.set_ylabel("latency at batch 1 (ms, log scale)")

    return _platform_rows(b1, draw, "Latency at batch size 1: p50 bars, p90/p99 markers", w=9, h=3.4)


def memory_vs_batch(runs: pd.DataFrame) -> list:
    """Peak memory vs batch size (CPU: the run process's peak RSS; GPU: the allocator's peak)."""
    ok = ok_runs(runs)
    ok = ok[ok["peak_memory_bytes"].notna()] if not ok.empty else ok
    return _lines_vs_batch(ok, "peak_memory_bytes", "peak memory (GiB)", "Peak memory", scale=2.0**-30,
                           n_cols=3, w=3.6, h=2.8)


def utilisation(runs: pd.DataFrame):
    """Model FLOP/s at each series' best batch size as a share of the device's measured matmul peak."""
    best = best_batch(runs)
    best = best[best["utilisation"].notna()] if not best.empty else best
    if best.empty:
        return None
    col = colours(best["series"])

    def draw(ax, g):
        _grouped_bars(ax, g.assign(utilisation_pct=100 * g["utilisation"]), "utilisation_pct", col)
        ax.set_ylabel("% of measured matmul peak")

    return _platform_rows(best, draw, "Utilisation at the best batch size", w=9, h=3.2)


def phase_breakdown(runs: pd.DataFrame):
    """Stacked median phase times per iteration (from the separate instrumented pass), largest batch per series."""
    ok = ok_runs(runs)
    cols = [f"phase_{p}_ms" for p in PHASE_ORDER if f"phase_{p}_ms" in ok.columns]
    if ok.empty or not cols:
        return None
    ok = ok[ok[cols].notna().any(axis=1)]
    if ok.empty:
        return None
    top = ok.loc[ok.groupby(["platform", "model", "mode", "series"])["batch_size"].idxmax()]
    top = top.assign(bar=top["series"] + " " + top["model"] + " " + top["mode"].str[:5] + " bs" +
                     top["batch_size"].astype(str))

    def draw(ax, g):
        g = g.sort_values("bar")
        left = np.zeros(len(g))
        for c in cols:
            v = g[c].fillna(0).to_numpy()
            name = c.removeprefix("phase_").removesuffix("_ms")
            ax.barh(g["bar"], v, left=left, label=name, color=PHASE_COLOURS.get(name, "#999999"),
                    edgecolor="white")
            left += v
        for y, (_, r) in enumerate(g.iterrows()):
            if "phase_sum_mismatch" in str(r.get("flags", "")):
                ax.annotate(" ! phases do not add up to the step (flagged)", (left[y], y), va="center",
                            fontsize=7, color="red")
        ax.set_xlabel("median ms per iteration")
        ax.legend(fontsize=8)
        ax.tick_params(axis="y", labelsize=8)

    return _platform_rows(top, draw, "Where an iteration's time goes (instrumented pass)", w=10,
                          h=0.45 * top.groupby("platform").size().max() + 1.6)


def published_overlay(runs: pd.DataFrame, published: pd.DataFrame):
    """Our best measured images/s beside published figures for the same models (published: hollow, labelled)."""
    best = best_batch(runs)
    if best.empty:
        return None
    models = sorted(set(best["model"]) & set(published["model"]))
    if not models:
        return None
    pub = published_condensed(published[published["model"].isin(models)])
    fig, axes = _grid(1, len(models), w=5.2, h=0.32 * max(len(pub), 6) + 1.5)
    for ax, model in zip(axes.flat, models):
        ours = best[best["model"] == model]
        theirs = pub[pub["model"] == model]
        labels, values, kinds = [], [], []
        for _, r in ours.iterrows():
            labels.append(f"measured here: {r['series']} {r['mode']} bs{r['batch_size']} ({r['platform'][:24]})")
            values.append(r["images_per_sec_median"])
            kinds.append("measured")
        for _, r in theirs.iterrows():
            labels.append(f"published: {r['framework']} {r['mode']}, {r['accelerators']}x {r['hardware'][:22]}, "
                          f"{r['precision']}, bs{r['batch_per_device']}")
            values.append(r["images_per_sec"])
            kinds.append("published")
        y = np.arange(len(labels))
        for yi, v, k in zip(y, values, kinds):
            ax.barh(yi, v, color="#444444" if k == "measured" else "white",
                    edgecolor="#444444" if k == "measured" else "grey", hatch=None if k == "measured" else "//")
        ax.set_yticks(y, labels=labels, fontsize=6)
        ax.set_xscale("log")
        ax.set_xlabel("images/s (log scale)")
        ax.set_title(f"{model}: measured here vs published (hatched: published, not measured here)", fontsize=8)
        ax.invert_yaxis()
    fig.tight_layout()
    return fig


def then_and_now(runs: pd.DataFrame, seed: pd.DataFrame):
    """The 2019 study's numbers (dashed, published) beside this machine's (solid), per model x mode."""
    ok = ok_runs(runs)
    if ok.empty:
        return None
    panels = sorted(set(zip(ok["model"], ok["mode"])) & set(zip(seed["model"], seed["mode"])))
    if not panels:
        return None

    markers = dict(zip(sorted(seed["hardware"].unique()), "s^vDP*"))

    def draw(ax, model, mode):
        for (hw, fw), s in seed[(seed["model"] == model) & (seed["mode"] == mode)].groupby(["hardware", "framework"]):
            s = s.sort_values("batch_size")
            ax.plot(s["batch_size"], s["images_per_sec"], ls="--", lw=1, marker=markers[hw], ms=4, alpha=0.8,
                    color=FRAMEWORK_COLOURS.get(fw, FRAMEWORK_COLOURS["other"]),
                    label=f"2019 published: {fw}, {hw[:30]}")
        for (platform, series), s in ok[(ok["model"] == model) & (ok["mode"] == mode)].groupby(["platform", "series"]):
            s = s.sort_values("batch_size")
            ax.plot(s["batch_size"], s["images_per_sec_median"], lw=2.4, marker="o", color=colours([series])[series],
                    label=f"measured here: {series}, {platform[:30]}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("images/s")
        ax.set_title(f"{model} - {mode}" + (" (2019 'training' had no optimizer update)" if mode == "training" else ""),
                     fontsize=8)
        ax.legend(fontsize=6)

    return _model_mode_grid(ok, draw, "Then and now: the 2019 study's published numbers beside this machine",
                            panels=panels, w=5.5, h=3.6)


def published_condensed(published: pd.DataFrame) -> pd.DataFrame:
    """One comparable row per device: per model, mode and hardware, the highest published images/s
    (its GPU count, precision and batch go into the label; the full table is the report's appendix)."""
    if published.empty:
        return published
    keys = ["model", "mode", "hardware"]
    idx = published.groupby(keys)["images_per_sec"].idxmax()
    return published.loc[idx].sort_values(["model", "mode", "images_per_sec"]).reset_index(drop=True)
