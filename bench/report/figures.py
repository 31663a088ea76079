"""The report's throughput figures, from tidy tables to matplotlib figures (none without data)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..measurement.flags import FLAG_SCOPE, UTILISATION_LIMIT
from .data import GROUP, ok_runs
from .style import (
    BEST_BATCH_HATCH,
    FLAGGED_BAR_NOTE,
    FLAGGED_HATCH,
    FLAGGED_NOTE,
    PHASE_COLOURS,
    PHASE_ORDER,
    PHASES_FLAGGED_NOTE,
    flag_bar,
    flag_points,
    footnote,
    legend_patch,
    mark_flags,
    model_mode_grid,
    model_mode_panels,
    plain_numbers,
    plain_text,
    platform_rows,
    series_styles,
)
from .units import in_unit, rate_unit


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


def _grouped_bars(ax, g: pd.DataFrame, value: str, markers: dict | None = None) -> list[bool]:
    """Bars of `value` per (model, mode) group, a framework colour per series (variants hatched), flagged
    bars cross-hatched with '!'; optional extra columns drawn as black markers. Returns each bar's flag."""
    groups = model_mode_panels(g)
    styles = series_styles(g)
    series = sorted(g["series"].unique())
    width = 0.8 / len(series)
    any_flagged, drawn = False, []
    for s in series:  # all swatches first, so the legend lists the series before the p90/p99 markers
        legend_patch(ax, plain_text(s), styles[s]["color"], styles[s]["hatch"])
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
            drawn.append(flagged)
            hatch = (st["hatch"] or "") + (FLAGGED_HATCH if flagged else "") or None
            bars = ax.bar(xpos, r[value], width=width, color=st["color"], label=plain_text(s), hatch=hatch,
                          edgecolor="white" if hatch else st["color"], linewidth=0.5)
            flag_bar(ax, bars[0], flagged)
            for column, style in (markers or {}).items():
                label = column.rsplit("_", 1)[-1] if (i, j) == (0, 0) else None
                ax.plot([xpos], [r[column]], style, ms=4, label=label)
    ax.set_xticks(range(len(groups)), labels=[f"{m}\n{mo}" for m, mo in groups], fontsize=8)
    if any_flagged:
        footnote(ax, FLAGGED_BAR_NOTE)
    return drawn


DODGE = 0.08  # log2 units between neighbouring series' points at one batch size
WIDE_CI_CUT = 1.5  # y axis top, in units of the panel's largest estimate, when an interval reaches beyond it


def _wide_cut(top: float, ci_top: float, largest: str) -> str | None:
    """One interval from two processes can be wider than every estimate: where one reaches beyond WIDE_CI_CUT x
    the panel's `largest` (`top`), the note saying the axis is cut there (the caller cuts it); None otherwise."""
    if ci_top > WIDE_CI_CUT * top > 0:
        return f"intervals cut at {WIDE_CI_CUT:g}x {largest} (few processes: very wide)"
    return None


def _lines_vs_batch(ok: pd.DataFrame, value: str, ylabel: str, title: str, scale: float = 1.0,
                    ci: tuple[str, str] | None = None, **grid) -> list:
    """A figure per platform, a panel per model x mode, a line per series of `value` (x `scale`) against
    batch size on a log2 axis, with CI bars when `ci` names the low/high columns; flagged points hollow."""
    figs = []
    if ok.empty:
        return figs
    styles = series_styles(ok)
    for platform, g in ok.groupby("platform"):
        drawn: list[bool] = []

        def draw(ax, model, mode, g=g, drawn=drawn):
            p = g[(g["model"] == model) & (g["mode"] == mode)]
            any_flagged = False
            notes, top, ci_top = [], 0.0, 0.0
            names = sorted(p["series"].unique())
            for series, s in p.groupby("series"):
                st = styles[series]
                s = s.sort_values("batch_size")
                # dodged a little along the log2 axis, so frameworks measured at one batch do not hide each other
                x = s["batch_size"].to_numpy() * 2 ** (DODGE * (names.index(series) - (len(names) - 1) / 2))
                y = s[value].to_numpy(dtype=float) * scale
                if ci is not None:
                    err = [y - s[ci[0]].to_numpy(dtype=float) * scale, s[ci[1]].to_numpy(dtype=float) * scale - y]
                    ax.errorbar(x, y, yerr=np.clip(np.nan_to_num(err), 0, None), fmt="none", capsize=3,
                                ecolor=st["color"], elinewidth=0.8)
                    ci_top = max(ci_top, float(np.nanmax(y + np.nan_to_num(err[1]))))
                top = max(top, float(np.nanmax(y)) if len(y) else 0.0)
                flagged = np.array([_flagged(r) for _, r in s.iterrows()], dtype=bool)
                drawn.extend(flagged)
                # The line and its clean points carry the legend entry; flagged points are drawn hollow on top.
                ax.plot(x, y, color=st["color"], ls=st["ls"], marker=st["marker"], ms=5, markevery=list(~flagged),
                        label=plain_text(series))
                any_flagged |= flag_points(ax, x, y, flagged, st["color"], st["marker"])
            if any_flagged:
                notes.append(FLAGGED_NOTE)
            cut = _wide_cut(top, ci_top, "the largest estimate")
            if cut:
                notes.append(cut)
            if notes:
                footnote(ax, "; ".join(notes))
            ticks = sorted(p["batch_size"].unique())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, labels=[str(b) for b in ticks])
            ax.set_xlabel("batch size")
            ax.set_ylabel(in_unit(ylabel, model))
            ax.set_ylim(0, WIDE_CI_CUT * top if cut else None)
            ax.set_title(f"{model} - {mode}", fontsize=9)

        figs.append(mark_flags(model_mode_grid(g, draw, f"{title} on {platform}", **grid), drawn))
    return figs


def per_hardware(runs: pd.DataFrame) -> list:
    """2019 Figures 3-8: images/s vs batch size, a colour per framework, a panel per model x mode, per device."""
    ok = ok_runs(runs)
    if not ok.empty and ok["precision"].nunique() > 1:
        # a figure per precision: an int8 line beside fp32 ones stretches the axis and flattens every fp32 curve; a
        # precision measured at one batch size draws no curve (its own section shows it: int8)
        order = sorted(ok["precision"].unique(), key=lambda p: (p != "fp32", p))
        keep = [p for p in order if p == order[0] or ok[ok["precision"] == p]["batch_size"].nunique() > 1]
        return [fig for p in keep for fig in per_hardware(ok[ok["precision"] == p])]
    return _lines_vs_batch(ok, "images_per_sec_median",
                           "images/s (geo. mean, 95% CI)",
                           "Throughput vs batch size", ci=("images_per_sec_ci_low", "images_per_sec_ci_high"))


def per_framework(runs: pd.DataFrame, common_batch: int = 32) -> list:
    """2019 Figures 9-11, one figure per device (a CPU's bars would vanish on a GPU's scale): a panel per
    model x mode, a bar pair per framework/engine: batch 32 (plain, the framework's colour) and the device's
    best batch (hatched). The best batch, and a batch 32 not run, are said under each pair, level: text on or
    beside narrow bars ran into each other (the numbers themselves are in the throughput table)."""
    ok = ok_runs(runs)
    if ok.empty:
        return []
    if ok["platform"].nunique() > 1:
        return [fig for p in sorted(ok["platform"].unique())
                for fig in per_framework(ok[ok["platform"] == p], common_batch)]
    # a chart compares one precision: int8 bars beside fp32 ones compare quantisation, not frameworks (fp32 first);
    # a precision only one framework ran compares nothing here (its own section shows it: int8, engines)
    if ok["precision"].nunique() > 1:
        order = sorted(ok["precision"].unique(), key=lambda p: (p != "fp32", p))
        return [fig for p in order if ok[ok["precision"] == p]["framework"].nunique() > 1 or p == order[0]
                for fig in per_framework(ok[ok["precision"] == p], common_batch)]
    best = _best_batch(ok)
    styles = series_styles(ok)
    drawn: list[bool] = []

    def draw(ax, model, mode):
        sub = ok[(ok["model"] == model) & (ok["mode"] == mode)]
        top = best[(best["model"] == model) & (best["mode"] == mode)]
        slots = sorted(sub["series"].unique())
        any_flagged = False
        legend_patch(ax, f"batch {common_batch}", "#888888", None)
        legend_patch(ax, "best batch (hatched)", "#888888", BEST_BATCH_HATCH)
        ticks, tops = [], []
        for xi, series in enumerate(slots):
            colour = styles[series]["color"]
            c = sub[(sub["series"] == series) & (sub["batch_size"] == common_batch)]
            b = top[top["series"] == series]
            ticks.append(per_framework_tick(series, None if b.empty else int(b.iloc[0]["batch_size"]),
                                            not c.empty, common_batch))
            for offset, df, hatch, is_best in ((-0.2, c, None, False), (0.2, b, BEST_BATCH_HATCH, True)):
                if df.empty or (is_best and not c.empty and int(df.iloc[0]["batch_size"]) == common_batch):
                    continue  # a best batch that is the common one is the same config: one bar, its tick says so
                label = "best batch (hatched)" if is_best else f"batch {common_batch}"
                r = df.iloc[0]
                flagged = _flagged(r)
                any_flagged |= flagged
                drawn.append(flagged)
                h = (hatch or "") + (FLAGGED_HATCH if flagged else "") or None
                bars = ax.bar(xi + offset, r["images_per_sec_median"], width=0.4, color=colour, hatch=h,
                              edgecolor="white" if h else colour, linewidth=0.5, label=label, gid=series)
                flag_bar(ax, bars[0], flagged)
                lo, hi = r.get("images_per_sec_ci_low"), r.get("images_per_sec_ci_high")
                if lo is not None and hi is not None and lo == lo and hi == hi:  # its 95% interval over processes
                    y = r["images_per_sec_median"]
                    ax.errorbar(xi + offset, y, yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], fmt="none", ecolor="#333333",
                                elinewidth=0.8, capsize=2)
                    tops.append((y, hi))
        notes = [FLAGGED_BAR_NOTE] if any_flagged else []
        top = max((y for y, _ in tops), default=0)
        if cut := _wide_cut(top, max((h for _, h in tops), default=0), "the tallest bar"):
            ax.set_ylim(0, WIDE_CI_CUT * top)  # one very wide interval must not flatten every bar
            notes.append(f"bars: 95% intervals; {cut}")
        if notes:
            footnote(ax, "; ".join(notes))
        ax.set_xticks(range(len(slots)), labels=ticks, fontsize=7)
        ax.set_xlim(-0.6, len(slots) - 0.4)  # a panel of one pair keeps its bars' width
        ax.set_title(f"{model} - {mode}", fontsize=10)
        ax.set_ylabel(rate_unit(model))
        ax.margins(y=0.12)  # room for the '!' above the tallest bar (a cut axis keeps its limit)

    # a slot an inch wide holds its two-line label level; many slots: one panel per row
    slots = ok.groupby(["model", "mode"])["series"].nunique().max()
    width = max(4.2, 1.05 * slots)
    title = (f"Each framework and engine on {ok['platform'].iloc[0]}, {ok['precision'].iloc[0]}: batch {common_batch} "
             "and best batch")
    one_column = width > 5
    return [mark_flags(model_mode_grid(ok, draw, title, n_cols=1 if one_column else 2, w=min(width, 11.0),
                                       h=2.7 if one_column else 3.2), drawn)]


def per_framework_tick(series: str, best: int | None, has_common: bool, common_batch: int) -> str:
    """A bar pair's label: the series, its best batch and whether it ran at the common batch at all."""
    under = [f"best bs {best}"] if best is not None else []
    if not has_common:
        under.append(f"no bs {common_batch}")
    return "\n".join([plain_text(series), *under])  # a line each: side by side they ran into the next pair's


def latency_batch1(runs: pd.DataFrame):
    """Batch-1 latency p50 (bar) with p90 and p99 (markers), per model x mode, a panel per device, log axis."""
    ok = ok_runs(runs)
    b1 = ok[ok["batch_size"] == 1] if not ok.empty else ok
    if b1.empty:
        return None

    drawn: list[bool] = []

    def draw(ax, g):
        drawn.extend(_grouped_bars(ax, g, "latency_ms_p50", markers={"latency_ms_p90": "k^", "latency_ms_p99": "kv"}))
        low = pd.to_numeric(g["latency_ms_p50"], errors="coerce")
        low = low[low > 0].min()
        # the highest marker drawn: p99 where a config timed enough iterations for one, else p90
        high = pd.concat([pd.to_numeric(g[c], errors="coerce") for c in ("latency_ms_p90", "latency_ms_p99")]).max()
        if pd.isna(low) or pd.isna(high) or high / low < 10:  # within a decade a log axis has no labels to read
            ax.set_ylim(bottom=0)
            ax.set_ylabel("latency at batch 1 (ms)")
            return
        # Frameworks' batch-1 latencies differ by orders of magnitude; a linear axis hides the small ones.
        ax.set_yscale("log")
        # Bars on a log axis start at its bottom: a decade boundary below the smallest value keeps them long
        # enough to compare instead of stubs on the autoscaled limit.
        ax.set_ylim(bottom=10 ** math.floor(math.log10(low * 0.99)))
        plain_numbers(ax.yaxis)
        ax.set_ylabel("latency at batch 1 (ms, log scale)")

    return mark_flags(platform_rows(b1, draw, "Latency at batch size 1: p50 bars, p90/p99 markers", w=9, h=3.4),
                      drawn)


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

    drawn: list[bool] = []

    def draw(ax, g):
        drawn.extend(_grouped_bars(ax, g.assign(utilisation_pct=100 * g["utilisation"]), "utilisation_pct"))
        if (g["utilisation"] > UTILISATION_LIMIT).any():  # plausible, not an error (flags.py: UTILISATION_LIMIT)
            ax.axhline(100 * UTILISATION_LIMIT, color="#444444", lw=0.8, ls="--")
            ax.annotate("this machine's best GEMM", (1.0, 100 * UTILISATION_LIMIT), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize=7, color="#444444")
        ax.set_ylabel("% of measured matmul peak")

    return mark_flags(platform_rows(best, draw, "Utilisation at the best batch size", w=9, h=3.2), drawn)


def _phase_flags(row) -> list[str]:
    """The flags on a row that make its phase breakdown unusable: the phases' own (phase sum, forward over
    backward), and the process's (disturbed, jittery...): its phases were timed in that same process."""
    names = [n.strip() for n in str(row.get("flags", "") or "").split(",")]
    return [n for n in names if FLAG_SCOPE.get(n) in ("phases", "throughput")]


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
    top = top.assign(bar=top["series"].map(plain_text) + " " + top["model"] + " " + top["mode"].str[:5] + " bs" +
                     top["batch_size"].astype(str))

    drawn: list[bool] = []

    def draw(ax, g):
        g = g.sort_values("bar")
        left = np.zeros(len(g))
        flagged = [_phase_flags(r) for _, r in g.iterrows()]
        drawn.extend(bool(f) for f in flagged)
        hatches = [FLAGGED_HATCH if f else None for f in flagged]
        for c in cols:
            v = g[c].fillna(0).to_numpy(dtype=float)
            name = c.removeprefix("phase_").removesuffix("_ms")
            bars = ax.barh(g["bar"], v, left=left, label=name, color=PHASE_COLOURS.get(name, "#a6761d"),
                           edgecolor="white")
            for bar, hatch in zip(bars, hatches):
                bar.set_hatch(hatch)
            left += v
        for y, names in enumerate(flagged):
            if names:
                ax.annotate(f" ! {', '.join(names)} (flagged)", (left[y], y), va="center", fontsize=7,
                            color="black")
        if any(flagged):
            footnote(ax, PHASES_FLAGGED_NOTE)
        ax.set_xlabel("median ms per iteration")
        ax.tick_params(axis="y", labelsize=8)

    return mark_flags(platform_rows(top, draw, "Where an iteration's time goes (instrumented pass)", w=10,
                                    h=0.45 * top.groupby("platform").size().max() + 1.6), drawn)
