"""The report's figures. Each function takes tidy tables and returns matplotlib figures (none without data)."""

from __future__ import annotations

import math
import re
import zlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from .data import GROUP, ok_runs
from .style import FALLBACK_COLOUR, FRAMEWORK_COLOURS, framework_colour  # noqa: F401  (figures. colour map)
from .style import canonical_framework as _canonical

PHASE_ORDER = ["h2d", "forward", "backward", "update", "communication"]
# Phases: browns only, so a phase bar is never mistaken for a framework (null's grey included).
PHASE_COLOURS = {"h2d": "#f6e8c3", "forward": "#dfc27d", "backward": "#bf812d", "update": "#8c510a",
                 "communication": "#543005"}
FLAGGED_NOTE = "hollow: flagged, not used for findings"
FLAGGED_BAR_NOTE = "cross-hatched with '!': flagged, not used for findings"
FLAGGED_HATCH = "xx"
BEST_BATCH_HATCH = "//"
# Variants of one framework: the engine picks the line style, the precision the marker row, both the hatch.
# A series label names an engine only when it is not the framework's default, so any named engine is a
# variant (tensorflow's 'eager' included). Known names get fixed slots so the common ones never collide.
_ENGINE_SLOT = {"compile": 1, "xla": 1, "jit": 1, "eager": 2, "trt": 3, "tensorrt": 3}
_PRECISION_SLOT = {"fp32": 0, "bf16": 1, "fp16": 2, "amp-fp16": 2, "int8": 3}
_ENGINE_LS = ["-", "--", ":", "-."]
_ENGINE_HATCH = ["", "||", "--", "++"]
_PRECISION_HATCH = ["", "..", "\\\\", "**"]
_MARKERS = [["o", "D", "^", "v"], ["s", "d", ">", "<"], ["P", "X", "h", "p"], ["*", "H", "8", "1"]]
# An absolute POSIX, home or drive path: figures must not show where files live on some host.
_PATH = re.compile(r"(?<![\w.\-+])(?:[A-Za-z]:[\\/]|~[\\/]|/)[^\s,;:()\[\]]+")


def framework_of(series: str) -> str:
    """The framework part of a series label ('torch/compile bf16' -> 'torch')."""
    return series.split("/")[0].split(" ")[0]


def _slot(name: str, known: dict[str, int]) -> int:
    """0 for the default (no name), a fixed slot for known names, else a stable hashed one of 1-3."""
    if not name:
        return 0
    return known.get(name, 1 + zlib.crc32(name.encode()) % 3)  # crc32: stable across runs, unlike hash()


def series_style(series: str, framework: str | None = None) -> dict:
    """Matplotlib styling for one series: `color` from its framework; `ls` (engine), `marker` (engine and
    precision) and `hatch` (None for the default variant) tell a framework's engines and precisions apart."""
    fw = _canonical(framework) if framework else _canonical(framework_of(series))
    label = str(series).strip()
    rest = label[len(label.split("/")[0].split(" ")[0]):]
    engine, precision = "", rest.strip()
    if rest.startswith("/"):
        engine, _, precision = rest[1:].partition(" ")
    e = _slot(engine.strip().lower(), _ENGINE_SLOT)
    p = _slot(precision.strip().lower(), _PRECISION_SLOT)
    return {"color": framework_colour(fw), "ls": _ENGINE_LS[e], "marker": _MARKERS[e][p],
            "hatch": (_ENGINE_HATCH[e] + _PRECISION_HATCH[p]) or None}


def _series_frameworks(df: pd.DataFrame) -> dict[str, str]:
    """series -> framework, from the `framework` column when the table has one."""
    if "framework" in df.columns:
        return dict(zip(df["series"], df["framework"].astype(str)))
    return {s: framework_of(s) for s in df["series"]}


def _styles(df: pd.DataFrame) -> dict[str, dict]:
    return {s: series_style(s, fw) for s, fw in _series_frameworks(df).items()}


def colours(series) -> dict[str, str]:
    """Each series in its framework's colour, the same in every figure."""
    return {s: series_style(s)["color"] for s in set(series)}


def linestyles(series) -> dict[str, str]:
    """The framework's default series solid; its other engines dashed, dotted, ..."""
    return {s: series_style(s)["ls"] for s in set(series)}


def _plain(text) -> str:
    """Figure text without filesystem paths (they say nothing to a reader and can leak a host's layout)."""
    out = _PATH.sub("", str(text))
    return re.sub(r"\s{2,}", " ", out).replace("[ ", "[").replace(" ]", "]").strip()


def _flagged(row) -> bool:
    """Drawn hollow: a number kept out of the findings (a throughput flag). A flag on something else (the
    phase breakdown, say) leaves the throughput sound and the point solid."""
    sound = row.get("sound")
    if isinstance(sound, (bool, np.bool_)):
        return not sound
    flags = row.get("flags")
    return bool(flags.strip()) if isinstance(flags, str) else False


def _best_batch(runs: pd.DataFrame) -> pd.DataFrame:
    """Like data.best_batch, but a config's flagged rows only win when it has no clean one, so a disturbed
    or jumping number is not presented as the best batch size."""
    ok = ok_runs(runs)
    if ok.empty:
        return ok
    clean = np.array([not _flagged(r) for _, r in ok.iterrows()], dtype=bool)
    if "sound" in ok.columns:
        clean &= ok["sound"].eq(True).to_numpy()
    keys = GROUP + ["series"]
    ranked = ok.assign(_clean=clean).sort_values(["_clean", "images_per_sec_median"], ascending=False)
    return ranked.drop_duplicates(keys).drop(columns="_clean").sort_values(keys).reset_index(drop=True)


def _legend_below(fig, axes, extra: list | None = None) -> None:
    """One de-duplicated legend under the panels, never over the data."""
    handles, labels = {}, []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles and not lab.startswith("_"):
                handles[lab] = h
                labels.append(lab)
        if ax.get_legend():
            ax.get_legend().remove()
    for h in extra or []:
        if h.get_label() not in handles:
            handles[h.get_label()] = h
            labels.append(h.get_label())
    if labels:
        # as many columns as the figure's width holds at this font size (long labels get fewer columns)
        fits = int(fig.get_figwidth() * 13 // (max(len(lab) for lab in labels) + 4))
        fig.legend([handles[lab] for lab in labels], labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=max(1, min(4, len(labels), fits)), fontsize=8, frameon=False)


def _footnote(ax, text: str) -> None:
    """A small note under the panel's x label (below the axes, so it never covers data or the label)."""
    # x in axes fractions, y relative to the x label's box: placed at draw time, whatever the tick labels' height.
    ax.annotate(text, xy=(1.0, 0.0), xycoords=("axes fraction", ax.xaxis.label), xytext=(0, -2),
                textcoords="offset points", ha="right", va="top", fontsize=6, color="#444444")


def _plain_numbers(axis) -> None:
    """'16' rather than '2^4' or '1.6x10^1' on a log axis; minor ticks labelled at 2 and 5 only, to stay legible."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:e}"[0] in "25" else ""))


def _grid(n_rows: int, n_cols: int, w: float = 4.2, h: float = 3.0):
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False)
    return fig, axes


def _panels(df: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(set(zip(df["model"], df["mode"])))


def _model_mode_grid(df: pd.DataFrame, draw, title: str, panels=None, n_cols: int = 2, w: float = 4.2,
                     h: float = 3.0, extra_legend: list | None = None):
    """A figure with one panel per (model, mode); `draw(ax, model, mode)` fills each panel."""
    panels = panels if panels is not None else _panels(df)
    n_cols = min(n_cols, len(panels))
    fig, axes = _grid(math.ceil(len(panels) / n_cols), n_cols, w=w, h=h)
    for ax, (model, mode) in zip(axes.flat, panels):
        draw(ax, model, mode)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    fig.suptitle(_plain(title), fontsize=11)
    fig.tight_layout()
    _legend_below(fig, axes, extra_legend)
    return fig


def _platform_rows(df: pd.DataFrame, draw, title: str, w: float, h: float):
    """A figure with one row per platform; `draw(ax, platform_rows)` fills each."""
    platforms = sorted(df["platform"].unique())
    fig, axes = _grid(len(platforms), 1, w=w, h=h)
    for ax, platform in zip(axes.flat, platforms):
        draw(ax, df[df["platform"] == platform])
        ax.set_title(_plain(platform), fontsize=10)
    fig.suptitle(_plain(title), fontsize=11)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig


def _legend_patch(ax, label: str, colour: str, hatch: str | None) -> None:
    """A legend entry for bars drawn in the series' own style, so a flagged first bar (cross-hatched)
    does not become the legend's swatch. It precedes the bars among the axes' handles, so it wins the
    de-duplication; zero-sized, it draws nothing and leaves the data limits alone."""
    ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=colour, edgecolor="white" if hatch else colour, hatch=hatch,
                           linewidth=0.5, label=label))


def _flag_bar(ax, rect, flagged: bool) -> None:
    if flagged:
        ax.annotate("!", (rect.get_x() + rect.get_width() / 2, rect.get_height()), ha="center", va="bottom",
                    fontsize=9, fontweight="bold", color="black")


def _grouped_bars(ax, g: pd.DataFrame, value: str, markers: dict | None = None) -> None:
    """Bars of `value` per (model, mode) group, a framework colour per series (variants hatched), flagged
    bars cross-hatched with '!'; optional extra columns drawn as black markers."""
    groups = _panels(g)
    styles = _styles(g)
    series = sorted(g["series"].unique())
    width = 0.8 / len(series)
    any_flagged = False
    for s in series:  # all swatches first, so the legend lists the series before the p90/p99 markers
        _legend_patch(ax, _plain(s), styles[s]["color"], styles[s]["hatch"])
    for i, s in enumerate(series):
        st = styles[s]
        for j, (model, mode) in enumerate(groups):
            r = g[(g["series"] == s) & (g["model"] == model) & (g["mode"] == mode)]
            if r.empty:
                continue
            r = r.iloc[0]
            xpos = j - 0.4 + width * (i + 0.5)
            flagged = _flagged(r)
            any_flagged |= flagged
            hatch = (st["hatch"] or "") + (FLAGGED_HATCH if flagged else "") or None
            bars = ax.bar(xpos, r[value], width=width, color=st["color"], label=_plain(s), hatch=hatch,
                          edgecolor="white" if hatch else st["color"], linewidth=0.5)
            _flag_bar(ax, bars[0], flagged)
            for column, style in (markers or {}).items():
                label = column.rsplit("_", 1)[-1] if (i, j) == (0, 0) else None
                ax.plot([xpos], [r[column]], style, ms=4, label=label)
    ax.set_xticks(range(len(groups)), labels=[f"{m}\n{mo}" for m, mo in groups], fontsize=8)
    if any_flagged:
        _footnote(ax, FLAGGED_BAR_NOTE)


WIDE_CI_CUT = 1.5  # y axis top, in units of the panel's largest estimate, when an interval reaches beyond it


def _lines_vs_batch(ok: pd.DataFrame, value: str, ylabel: str, title: str, scale: float = 1.0,
                    ci: tuple[str, str] | None = None, **grid) -> list:
    """A figure per platform, a panel per model x mode, a line per series of `value` (x `scale`) against
    batch size on a log2 axis, with CI bars when `ci` names the low/high columns; flagged points hollow."""
    figs = []
    if ok.empty:
        return figs
    styles = _styles(ok)
    for platform, g in ok.groupby("platform"):
        def draw(ax, model, mode, g=g):
            p = g[(g["model"] == model) & (g["mode"] == mode)]
            any_flagged = False
            notes, top, ci_top = [], 0.0, 0.0
            for series, s in p.groupby("series"):
                st = styles[series]
                s = s.sort_values("batch_size")
                x = s["batch_size"].to_numpy()
                y = s[value].to_numpy(dtype=float) * scale
                if ci is not None:
                    err = [y - s[ci[0]].to_numpy(dtype=float) * scale, s[ci[1]].to_numpy(dtype=float) * scale - y]
                    ax.errorbar(x, y, yerr=np.clip(np.nan_to_num(err), 0, None), fmt="none", capsize=3,
                                ecolor=st["color"], elinewidth=0.8)
                    ci_top = max(ci_top, float(np.nanmax(y + np.nan_to_num(err[1]))))
                top = max(top, float(np.nanmax(y)) if len(y) else 0.0)
                flagged = np.array([_flagged(r) for _, r in s.iterrows()], dtype=bool)
                any_flagged |= bool(flagged.any())
                # The line and its clean points carry the legend entry; flagged points are drawn hollow on top.
                ax.plot(x, y, color=st["color"], ls=st["ls"], marker=st["marker"], ms=5, markevery=list(~flagged),
                        label=_plain(series))
                if flagged.any():
                    ax.plot(x[flagged], y[flagged], ls="none", marker=st["marker"], ms=6, color=st["color"],
                            markerfacecolor="none", markeredgewidth=1.3)
            if any_flagged:
                notes.append(FLAGGED_NOTE)
            # one interval from two processes can be wider than every estimate: cut it, say so, keep the data readable
            cut = ci_top > WIDE_CI_CUT * top > 0
            if cut:
                notes.append(f"intervals cut at {WIDE_CI_CUT:g}x the largest estimate (few processes: very wide)")
            if notes:
                _footnote(ax, "; ".join(notes))
            ticks = sorted(p["batch_size"].unique())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, labels=[str(b) for b in ticks])
            ax.set_xlabel("batch size")
            ax.set_ylabel(ylabel)
            ax.set_ylim(0, WIDE_CI_CUT * top if cut else None)
            ax.set_title(f"{model} - {mode}", fontsize=9)

        figs.append(_model_mode_grid(g, draw, f"{title} on {platform}", **grid))
    return figs


def per_hardware(runs: pd.DataFrame) -> list:
    """2019 Figures 3-8: images/s vs batch size, a colour per framework, a panel per model x mode, per device."""
    return _lines_vs_batch(ok_runs(runs), "images_per_sec_median",
                           "images/s (geo. mean, 95% CI)",
                           "Throughput vs batch size", ci=("images_per_sec_ci_low", "images_per_sec_ci_high"))


def per_framework(runs: pd.DataFrame, common_batch: int = 32) -> list:
    """2019 Figures 9-11, one figure per device (a CPU's bars would vanish on a GPU's scale): a panel per
    model x mode, a bar pair per framework/engine: batch 32 (plain, the framework's colour) and the device's
    best batch (hatched, its batch size written above). A series not run at batch 32 says so instead of a bar."""
    ok = ok_runs(runs)
    if ok.empty:
        return []
    if ok["platform"].nunique() > 1:
        return [fig for p in sorted(ok["platform"].unique())
                for fig in per_framework(ok[ok["platform"] == p], common_batch)]
    best = _best_batch(ok)
    styles = _styles(ok)

    def draw(ax, model, mode):
        sub = ok[(ok["model"] == model) & (ok["mode"] == mode)]
        top = best[(best["model"] == model) & (best["mode"] == mode)]
        slots = sorted(sub["series"].unique())
        any_flagged = False
        _legend_patch(ax, f"batch {common_batch}", "#888888", None)
        _legend_patch(ax, "best batch (hatched)", "#888888", BEST_BATCH_HATCH)
        for xi, series in enumerate(slots):
            colour = styles[series]["color"]
            c = sub[(sub["series"] == series) & (sub["batch_size"] == common_batch)]
            b = top[top["series"] == series]
            for offset, df, hatch, is_best in ((-0.2, c, None, False), (0.2, b, BEST_BATCH_HATCH, True)):
                label = "best batch (hatched)" if is_best else f"batch {common_batch}"
                if df.empty:
                    ax.annotate(f"bs {common_batch} not run", (xi + offset, 0), ha="center", va="bottom",
                                fontsize=6, rotation=90)
                    continue
                r = df.iloc[0]
                flagged = _flagged(r)
                any_flagged |= flagged
                h = (hatch or "") + (FLAGGED_HATCH if flagged else "") or None
                bars = ax.bar(xi + offset, r["images_per_sec_median"], width=0.4, color=colour, hatch=h,
                              edgecolor="white" if h else colour, linewidth=0.5, label=label, gid=series)
                _flag_bar(ax, bars[0], flagged)
                if is_best:
                    ax.annotate(f"bs={int(r['batch_size'])}", (xi + offset, r["images_per_sec_median"]),
                                xytext=(0, 9 if flagged else 0), textcoords="offset points", ha="center",
                                va="bottom", fontsize=6)
        if any_flagged:
            _footnote(ax, FLAGGED_BAR_NOTE)
        ax.set_xticks(range(len(slots)), labels=slots, fontsize=7, rotation=40, ha="right")
        ax.set_title(f"{model} - {mode}", fontsize=10)
        ax.set_ylabel("images/s")
        ax.margins(y=0.12)  # room for the batch-size and '!' notes above the tallest bar

    width = max(4.2, 0.7 * ok.groupby(["model", "mode"])["series"].nunique().max())
    title = f"Each framework and engine on {ok['platform'].iloc[0]}: batch {common_batch} and best batch"
    return [_model_mode_grid(ok, draw, title, n_cols=1 if width > 5 else 2, w=min(width, 11.0), h=3.2)]


def latency_batch1(runs: pd.DataFrame):
    """Batch-1 latency p50 (bar) with p90 and p99 (markers), per model x mode, a panel per device, log axis."""
    ok = ok_runs(runs)
    b1 = ok[ok["batch_size"] == 1] if not ok.empty else ok
    if b1.empty:
        return None

    def draw(ax, g):
        _grouped_bars(ax, g, "latency_ms_p50", markers={"latency_ms_p90": "k^", "latency_ms_p99": "kv"})
        low = pd.to_numeric(g["latency_ms_p50"], errors="coerce")
        low = low[low > 0].min()
        high = pd.to_numeric(g["latency_ms_p99"], errors="coerce").max()
        if pd.isna(low) or pd.isna(high) or high / low < 10:  # within a decade a log axis has no labels to read
            ax.set_ylim(bottom=0)
            ax.set_ylabel("latency at batch 1 (ms)")
            return
        # Frameworks' batch-1 latencies differ by orders of magnitude; a linear axis hides the small ones.
        ax.set_yscale("log")
        # Bars on a log axis start at its bottom: a decade boundary below the smallest value keeps them long
        # enough to compare instead of stubs on the autoscaled limit.
        ax.set_ylim(bottom=10 ** math.floor(math.log10(low * 0.99)))
        _plain_numbers(ax.yaxis)
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
    best = _best_batch(runs)
    best = best[best["utilisation"].notna()] if not best.empty else best
    if best.empty:
        return None

    def draw(ax, g):
        _grouped_bars(ax, g.assign(utilisation_pct=100 * g["utilisation"]), "utilisation_pct")
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
    top = top.assign(bar=top["series"].map(_plain) + " " + top["model"] + " " + top["mode"].str[:5] + " bs" +
                     top["batch_size"].astype(str))

    def draw(ax, g):
        g = g.sort_values("bar")
        left = np.zeros(len(g))
        for c in cols:
            v = g[c].fillna(0).to_numpy(dtype=float)
            name = c.removeprefix("phase_").removesuffix("_ms")
            ax.barh(g["bar"], v, left=left, label=name, color=PHASE_COLOURS.get(name, "#a6761d"),
                    edgecolor="white")
            left += v
        for y, (_, r) in enumerate(g.iterrows()):
            if "phase_sum_mismatch" in str(r.get("flags", "")):
                ax.annotate(" ! phases do not add up to the step (flagged)", (left[y], y), va="center",
                            fontsize=7, color="black")
        ax.set_xlabel("median ms per iteration")
        ax.tick_params(axis="y", labelsize=8)

    return _platform_rows(top, draw, "Where an iteration's time goes (instrumented pass)", w=10,
                          h=0.45 * top.groupby("platform").size().max() + 1.6)


def _published_label(r) -> str:
    n = pd.to_numeric(r.get("accelerators"), errors="coerce")
    hardware = _plain(r["hardware"])[:26]
    if pd.isna(n) or n < 1:
        device = hardware  # a CPU row: no accelerator count to give
    elif re.match(rf"^{int(n)}\s*x\s", hardware):
        device = hardware  # the hardware name already says how many
    else:
        device = f"{int(n)}x {hardware}"
    batch = str(r.get("batch_per_device") or "").strip()
    parts = [f"published: {_plain(r['framework'])} {r['mode']}", device, str(r["precision"])]
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
    styles = _styles(best)
    rows_per_model = max(len(best[best["model"] == m]) + len(pub[pub["model"] == m]) for m in models)
    fig, axes = _grid(1, len(models), w=5.6, h=0.3 * max(rows_per_model, 6) + 1.5)
    used = {}
    for ax, model in zip(axes.flat, models):
        ours = best[best["model"] == model]
        theirs = pub[pub["model"] == model]
        labels, values, looks = [], [], []
        for _, r in ours.iterrows():
            labels.append(_plain(f"measured here: {r['series']} {r['mode']} bs{r['batch_size']} "
                                 f"({_plain(r['platform'])[:24]})"))
            values.append(r["images_per_sec_median"])
            colour = styles[r["series"]]["color"]
            looks.append({"color": colour, "edgecolor": colour, "hatch": FLAGGED_HATCH if _flagged(r) else None})
            used[_canonical(r.get("framework", framework_of(r["series"])))] = colour
        for _, r in theirs.iterrows():
            labels.append(_published_label(r))
            values.append(r["images_per_sec"])
            colour = framework_colour(r["framework"])
            looks.append({"color": "white", "edgecolor": colour, "hatch": "////"})
            used[_canonical(r["framework"])] = colour
        y = np.arange(len(labels))
        for yi, v, look in zip(y, values, looks):
            ax.barh(yi, v, linewidth=1.0, **look)
        ax.set_yticks(y, labels=labels, fontsize=6)
        ax.set_xscale("log")
        ax.set_xlabel("images/s (log scale)")
        ax.set_title(f"{model}: measured here vs published", fontsize=9)
        ax.invert_yaxis()
    fig.tight_layout()
    handles = [Patch(facecolor=c, edgecolor=c, label=fw) for fw, c in sorted(used.items())]
    handles += [Patch(facecolor="#888888", label="measured here (filled)"),
                Patch(facecolor="white", edgecolor="#888888", hatch="////",
                      label="published, not measured here (hatched)")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(handles)),
               fontsize=8, frameon=False)
    return fig


def then_and_now(runs: pd.DataFrame, seed: pd.DataFrame):
    """The 2019 study's numbers (dashed, published) beside this machine's (solid), per model x mode, each
    framework in its own colour."""
    ok = ok_runs(runs)
    if ok.empty or seed is None or seed.empty:
        return None
    panels = sorted(set(zip(ok["model"], ok["mode"])) & set(zip(seed["model"], seed["mode"])))
    if not panels:
        return None
    styles = _styles(ok)
    # Hardware of 2019 by thin markers that no series style uses, so they never read as an engine.
    hw_markers = dict(zip(sorted(seed["hardware"].unique()), ["x", "+", "2", "3", "4", "|", "_"] * 4))

    def draw(ax, model, mode):
        old = seed[(seed["model"] == model) & (seed["mode"] == mode)]
        for (hw, fw), s in old.groupby(["hardware", "framework"]):
            s = s.sort_values("batch_size")
            ax.plot(s["batch_size"], s["images_per_sec"], ls="--", lw=1.2, marker=hw_markers[hw], ms=6,
                    color=framework_colour(fw), label=f"2019 published: {_canonical(fw)}, {_plain(hw)[:30]}")
        now = ok[(ok["model"] == model) & (ok["mode"] == mode)]
        for (platform, series), s in now.groupby(["platform", "series"]):
            s = s.sort_values("batch_size")
            st = styles[series]
            ax.plot(s["batch_size"], s["images_per_sec_median"], ls="-", lw=2.2, marker=st["marker"], ms=4,
                    color=st["color"], label=f"measured here: {_plain(series)}, {_plain(platform)[:30]}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted(set(old["batch_size"]) | set(now["batch_size"]))
        ax.set_xticks(ticks, labels=[str(int(b)) for b in ticks])
        _plain_numbers(ax.yaxis)
        ax.set_xlabel("batch size")
        ax.set_ylabel("images/s")
        ax.set_title(f"{model} - {mode}" + (" (2019 'training' had no optimizer update)" if mode == "training" else ""),
                     fontsize=8)

    extra = [Line2D([], [], color="#555555", ls="-", lw=2.2, label="solid: measured here"),
             Line2D([], [], color="#555555", ls="--", lw=1.2, label="dashed: 2019 published")]
    return _model_mode_grid(ok, draw, "Then and now: the 2019 study's published numbers beside this machine",
                            panels=panels, w=5.5, h=3.6, extra_legend=extra)


def published_condensed(published: pd.DataFrame) -> pd.DataFrame:
    """One comparable row per device: per model, mode, hardware, accelerator count and precision, the row
    with the highest published images/s (the full table is the report's appendix)."""
    if published is None or published.empty:
        return published
    keys = ["model", "mode", "hardware", "accelerators", "precision"]
    values = pd.to_numeric(published["images_per_sec"], errors="coerce")
    ranked = published.assign(_ips=values).dropna(subset=["_ips"])
    # Sorting, then keeping the first row per key, also keeps rows whose key has a missing part.
    ranked = ranked.sort_values("_ips", ascending=False, kind="stable").drop_duplicates(keys)
    ranked = ranked.assign(images_per_sec=ranked["_ips"]).drop(columns="_ips")
    return ranked.sort_values(["model", "mode", "images_per_sec"], ascending=[True, True, False]).reset_index(drop=True)
