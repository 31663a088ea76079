"""How the report draws: one colour per framework (from the adapters' declarations and the historical systems), each
series' line style, marker and hatch, the flag marks, and the layout helpers every figure shares."""

from __future__ import annotations

import math
import re
import zlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from ..adapters import ADAPTERS, framework_of
from .marks import ALL_FLAGGED, mark_flags  # noqa: F401 - the figures' one flag helper, stated here too
from .systems import HISTORICAL

# A name no adapter and no historical system answers to; not among the colours a new framework package may be
# given (bench/adapters/base.py: SPARE_COLOURS), so an unknown name never looks like a registered framework.
FALLBACK_COLOUR = "#393b79"
# One colour per framework in every figure: a reader learns the mapping once. Engines and precisions of one
# framework differ by line style, marker and hatch instead (bench/report/figures.py: series_style).
FRAMEWORK_COLOURS = {**{n: ADAPTERS.get(n).colour for n in ADAPTERS}, **{s.key: s.colour for s in HISTORICAL},
                     "other": FALLBACK_COLOUR}


def canonical_framework(name: str) -> str:
    """The registered name of a framework from any name a source uses ('PyTorch', 'pytorch' -> 'torch')."""
    return framework_of(str(name).strip().lower())


def framework_colour(framework: str) -> str:
    """The framework's colour in every figure; unknown names share the fallback colour."""
    return FRAMEWORK_COLOURS.get(canonical_framework(framework), FALLBACK_COLOUR)


PHASE_ORDER = ["h2d", "forward", "backward", "update", "communication"]


# Phases: browns only, so a phase bar is never mistaken for a framework (null's grey included).
PHASE_COLOURS = {"h2d": "#f6e8c3", "forward": "#dfc27d", "backward": "#bf812d", "update": "#8c510a",
                 "communication": "#543005"}


# The one flag style of every figure (drawn by the helpers at the end of this module): a flagged point is hollow,
# a flagged bar cross-hatched with '!', and a figure whose every input is flagged says so in its title.
FLAGGED_NOTE = "hollow: flagged, not a finding"


FLAGGED_BAR_NOTE = "cross-hatched '!': flagged, not a finding"


FLAGGED_HATCH = "xx"


# Under a phase chart with a flagged breakdown: its bars are drawn, but marked as not a measurement.
PHASES_FLAGGED_NOTE = "cross-hatched '!': phase breakdown flagged (guard named beside the bar), not a measurement"


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


def series_framework(series: str) -> str:
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
    fw = canonical_framework(framework) if framework else canonical_framework(series_framework(series))
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
    return {s: series_framework(s) for s in df["series"]}


def series_styles(df: pd.DataFrame) -> dict[str, dict]:
    return {s: series_style(s, fw) for s, fw in _series_frameworks(df).items()}


def plain_text(text) -> str:
    """Figure text without filesystem paths (they say nothing to a reader and can leak a host's layout)."""
    out = _PATH.sub("", str(text))
    return re.sub(r"\s{2,}", " ", out).replace("[ ", "[").replace(" ]", "]").strip()


def legend_below(fig, axes, extra: list | None = None) -> None:
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


def footnote(ax, text: str) -> None:
    """A small note under the panel's x label (below the axes, so it never covers data or the label)."""
    # x in axes fractions, y relative to the x label's box: placed at draw time, whatever the tick labels' height.
    ax.annotate(text, xy=(1.0, 0.0), xycoords=("axes fraction", ax.xaxis.label), xytext=(0, -2),
                textcoords="offset points", ha="right", va="top", fontsize=6, color="#444444")


def plain_numbers(axis) -> None:
    """'16' rather than '2^4' or '1.6x10^1' on a log axis; minor ticks labelled at 2 and 5 only, to stay legible."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:e}"[0] in "25" else ""))


def grid(n_rows: int, n_cols: int, w: float = 4.2, h: float = 3.0):
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False)
    return fig, axes


def model_mode_panels(df: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(set(zip(df["model"], df["mode"])))


def model_mode_grid(df: pd.DataFrame, draw, title: str, panels=None, n_cols: int = 2, w: float = 4.2,
                     h: float = 3.0, extra_legend: list | None = None):
    """A figure with one panel per (model, mode); `draw(ax, model, mode)` fills each panel."""
    panels = panels if panels is not None else model_mode_panels(df)
    n_cols = min(n_cols, len(panels))
    fig, axes = grid(math.ceil(len(panels) / n_cols), n_cols, w=w, h=h)
    for ax, (model, mode) in zip(axes.flat, panels):
        draw(ax, model, mode)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    fig.suptitle(plain_text(title), fontsize=11)
    fig.tight_layout()
    legend_below(fig, axes, extra_legend)
    return fig


def platform_rows(df: pd.DataFrame, draw, title: str, w: float, h: float):
    """A figure with one row per platform; `draw(ax, platform_rows)` fills each."""
    platforms = sorted(df["platform"].unique())
    fig, axes = grid(len(platforms), 1, w=w, h=h)
    for ax, platform in zip(axes.flat, platforms):
        draw(ax, df[df["platform"] == platform])
        ax.set_title(plain_text(platform), fontsize=10)
    fig.suptitle(plain_text(title), fontsize=11)
    fig.tight_layout()
    legend_below(fig, axes)
    return fig


def legend_patch(ax, label: str, colour: str, hatch: str | None) -> None:
    """A legend entry for bars drawn in the series' own style, so a flagged first bar (cross-hatched)
    does not become the legend's swatch. It precedes the bars among the axes' handles, so it wins the
    de-duplication; zero-sized, it draws nothing and leaves the data limits alone."""
    ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=colour, edgecolor="white" if hatch else colour, hatch=hatch,
                           linewidth=0.5, label=label))


def flag_bar(ax, rect, flagged: bool) -> None:
    """A flagged bar: cross-hatched (the caller adds FLAGGED_HATCH to its hatch) with '!' above it."""
    if flagged:
        ax.annotate("!", (rect.get_x() + rect.get_width() / 2, rect.get_height()), ha="center", va="bottom",
                    fontsize=9, fontweight="bold", color="black")


def flag_points(ax, x, y, flagged, colour: str, marker: str) -> bool:
    """Flagged points drawn hollow over their line (whose markers skip them: markevery=~flagged); True if any."""
    flagged = np.asarray(flagged, dtype=bool)
    if flagged.any():
        ax.plot(np.asarray(x)[flagged], np.asarray(y)[flagged], ls="none", marker=marker, ms=6, color=colour,
                markerfacecolor="none", markeredgewidth=1.3)
    return bool(flagged.any())


