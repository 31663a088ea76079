"""Distributed: median phase times per step, where the step goes."""

from __future__ import annotations

from ...scaling_figures import phases
from ..base import Figures, Section, distributed_ran, heading

INTRO = ("Median phase times per step (median over ranks); *all-reduce after backward* shows what overlapping "
         "communication with backward buys; bucket size changes how early communication starts.")


def render(d) -> Section:
    if not distributed_ran(d):
        return Section()  # nothing ran: the report's *Not run* says what would
    return Section([heading("Distributed: where the step goes", INTRO),
                    Figures(phases(d.scaling.table), "scaling_phases")])
