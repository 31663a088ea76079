"""What else the machine was doing: each process against its config's mean in run order, and the others' CPU share."""

from __future__ import annotations

from ..diagnostics import drift_timeline
from .base import Figures, Section, heading

INTRO = ("Each process against its config's mean, in run order (a busy period lowers every framework alike), and "
         "other processes' share of the CPUs during each timed loop; crosses are flagged processes.")


def render(d) -> Section:
    return Section([heading("What else the machine was doing", INTRO), Figures(drift_timeline(d.processes), "drift")])
