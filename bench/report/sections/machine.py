"""What else the machine was doing: each process against its config's mean in run order, and the others' CPU share."""

from __future__ import annotations

from ..diagnostics import drift_timeline
from .base import Figures, Section, heading

INTRO = ("Each process against its config's mean in run order (a busy period lowers every framework alike), and "
         "other processes' CPU share in each timed loop; crosses: flagged processes and attempts a retry replaced; "
         "black line: the sweep's speed reference, a fixed network step that dips where the machine was slow.")


def render(d) -> Section:
    return Section([heading("What else the machine was doing", INTRO),
                    Figures(drift_timeline(d.processes, d.replaced, d.speed_readings), "drift")])
