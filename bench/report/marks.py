"""Marks a figure or a cell carries whatever made it, with no pandas: the flag helper every figure calls and the
energy cell. The run notebook (bench/report/views.py) imports them in MXNet's lean environment too."""

from __future__ import annotations

ALL_FLAGGED = "every number flagged, none is a finding"
NOT_MEASURED = "not measured"

def mark_flags(fig, flagged):
    """The one place a figure states its flags; every figure function calls it once its figure is drawn.

    `flagged` has one truth value per input drawn (a point, a bar, a process; True: flagged, not a finding).
    When every input is flagged the figure's title says so (ALL_FLAGGED), so a reader who sees only the
    figure is not misled; the figure keeps the counts as `fig.flag_counts` (flagged, inputs)."""
    if fig is None:
        return None
    flags = [bool(f) for f in flagged]
    fig.flag_counts = (sum(flags), len(flags))
    if flags and all(flags):
        title = fig._suptitle  # a figure with panels has a suptitle; a one-panel figure its axes' title
        target = title if title is not None and title.get_text() else next(
            (ax.title for ax in fig.axes if ax.get_visible() and ax.get_title()), None)
        if target is None:
            fig.suptitle(ALL_FLAGGED, fontsize=10)
        elif ALL_FLAGGED not in target.get_text():
            target.set_text(f"{target.get_text()} ({ALL_FLAGGED})")
    return fig


def energy_text(images_per_joule: float | None, reason: str | None) -> str:
    """A cell: images per joule (three significant digits), or why energy was not measured."""
    if images_per_joule is not None and images_per_joule == images_per_joule:  # None and NaN: not measured
        return f"{images_per_joule:.3g}"
    return f"{NOT_MEASURED}: {reason}" if reason else NOT_MEASURED
