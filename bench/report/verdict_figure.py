"""Page 1's picture: every comparison page 1 judges as a speed-up with its 95% interval (a forest plot), the
equivalence band shaded, a colour per verdict: each row's fastest against its runner-up, against PyTorch where
PyTorch is neither, and int8 against the same framework's fastest fp32 (the largest lever is often there)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import NullLocator

from ..stats.judge import Judge
from ..stats.verdicts import EQUIVALENT, SMALL, UNDECIDED, WINNER
from .answer import page_rows
from .estimates import NOT_COMPARED, REFERENCE
from .style import mark_flags, plain_numbers, series_framework

COLOURS = {WINNER: "#1b7837", SMALL: "#e08214", EQUIVALENT: "#2166ac", UNDECIDED: "#8c8c8c"}


def _known(lo) -> bool:
    return lo is not None and lo == lo


def labels(points: list[dict]) -> list[str]:
    """Each point's 'inference bs16: onnxruntime / torch', leaving out what every point shares (one model, one
    precision), which page 1 says once."""
    parts = [list(p["where"][:3]) + ["best batch" if p["where"][3] == "best" else f"bs{p['where'][3]}"]
             for p in points]
    varies = [len({row[i] for row in parts}) > 1 or i == 3 for i in range(4)]
    return [" ".join(v for v, keep in zip(row, varies) if keep) + f": {p['pair']}" for row, p in zip(parts, points)]


def verdict_points(summary: pd.DataFrame, best: pd.DataFrame | None, grid: list[dict],
                   int8: list[tuple]) -> list[dict]:
    """The plotted comparisons, in page 1's order: label, speed-up, interval and verdict of each (only those with
    an interval: a side not sound or a single process has none, and page 1's table says why)."""
    rows = page_rows(summary, best)
    by_key = {(g["platform"], g["model"], g["mode"], g["precision"], g["batch_size"]): g for g in grid}
    points = []
    if not rows.empty:
        for _, r in rows.sort_values(["platform", "model", "mode", "_order", "precision"]).iterrows():
            if r["verdict"] == NOT_COMPARED or not _known(r["ci_low"]) or list(r.get("unsound_flags") or []):
                continue
            b = r["batch_size"] if r["batch_size"] == "best" else int(r["batch_size"])
            where = (r["model"], r["mode"], r["precision"], b)
            points.append({"where": where, "pair": f"{r['fastest']} / {r['runner_up']}", "ratio": r["speedup"],
                           "low": r["ci_low"], "high": r["ci_high"], "verdict": r["verdict"]})
            g = by_key.get((r["platform"], r["model"], r["mode"], r["precision"], b))
            c = g and g["reference"]
            if c and series_framework(r["runner_up"]) != REFERENCE and _known(c["speedup_ci_low"]):
                points.append({"where": where, "pair": f"{c['faster']} / {c['slower']}", "ratio": c["speedup"],
                               "low": c["speedup_ci_low"], "high": c["speedup_ci_high"], "verdict": c["verdict"]})
    for q, _, c in int8:
        if c is not None and _known(c["ci_low"]):
            points.append({"where": (q["model"], q["mode"], "int8", int(q["batch_size"])),
                           "pair": f"{q['framework']} int8 / its fp32", "ratio": c["ratio_a_over_b"],
                           "low": c["ci_low"], "high": c["ci_high"], "verdict": c["verdict"]})
    # a best-batch row that is a batch row again (the same pair, the same configs) is drawn once
    seen, unique = set(), []
    for p in points:
        key = (p["pair"], round(p["ratio"], 9), round(p["low"], 9), round(p["high"], 9))
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


TICKS = (0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.5, 2, 3, 4, 5, 7, 10, 20, 30, 50, 100)


def ticks(low: float, high: float, most: int = 9) -> list[float]:
    """Readable speed-up ticks between `low` and `high` on a log axis, 1x always among them, at most `most`."""
    inside = [t for t in TICKS if low <= t <= high]
    while len(inside) > most:
        keep = inside[::2]
        inside = keep if 1 in keep else inside[1::2]
    return inside


LABEL_PT = 9  # the labels' size: readable once the figure is scaled to the PDF's page width


def _panel(ax, points: list[dict], judge: Judge, xlabel: str) -> None:
    """One forest: log speed-up axis, 1x and the band [1/(1+m), 1+m] shaded, its own x range."""
    n = len(points)
    lo_band, hi_band = judge.band
    ax.axvspan(lo_band, hi_band, color="#dddddd", zorder=0, label=f"equivalence band {judge.within}")
    ax.axvline(1.0, color="#555555", lw=0.8, zorder=1)
    for i, p in enumerate(points):
        y = n - 1 - i
        colour = COLOURS.get(p["verdict"], COLOURS[UNDECIDED])
        ax.plot([p["low"], p["high"]], [y, y], color=colour, lw=2, solid_capstyle="butt", zorder=2)
        ax.plot([p["ratio"]], [y], "o", color=colour, ms=5, zorder=3)
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(reversed(labels(points))), fontsize=LABEL_PT)
    ax.set_xscale("log")
    lows = [p["low"] for p in points] + [lo_band]
    highs = [p["high"] for p in points] + [hi_band]
    ax.set_xlim(min(lows) / 1.05, max(highs) * 1.05)
    ax.set_xticks(ticks(*ax.get_xlim()))
    ax.xaxis.set_minor_locator(NullLocator())
    plain_numbers(ax.xaxis)
    ax.tick_params(axis="x", labelsize=LABEL_PT, which="both")
    ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    ax.set_ylim(-0.7, n - 0.3)
    ax.grid(axis="x", which="both", color="#eeeeee", lw=0.5, zorder=0)


def verdict_forest(points: list[dict], judge: Judge):
    """The forest plot of `points` (None without any); int8 against its fp32 on a panel of its own below, so its
    large speed-up does not squeeze the frameworks' comparisons and their band to a sliver."""
    if not points:
        return None
    frameworks = [p for p in points if p["where"][2] != "int8"]
    int8 = [p for p in points if p["where"][2] == "int8"]
    panels = [(part, text) for part, text in (
        (frameworks, "speed-up (x) of the first named over the second, 95% interval over fresh processes; log scale"),
        (int8, "int8's speed-up (x) over the same framework's fp32; log scale")) if part]
    heights = [0.9 + 0.25 * len(part) for part, _ in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (part, text) in zip(axes[:, 0], panels):
        _panel(ax, part, judge, text)
    handles = [plt.Line2D([], [], color=COLOURS[v], lw=2, marker="o", ms=5, label=v)
               for v in (WINNER, SMALL, EQUIVALENT, UNDECIDED) if any(p["verdict"] == v for p in points)]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="#dddddd", label=f"equivalence band {judge.within}"))
    axes[0, 0].legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(handles),
                      fontsize=LABEL_PT, frameon=False)
    fig.tight_layout()
    # every point drawn compares two sound sides (a side not sound has no interval here): none is flagged
    return mark_flags(fig, [False] * len(points))
