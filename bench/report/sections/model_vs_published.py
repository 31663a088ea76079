"""The alpha-beta model against published distributed set-ups: where they disagree by more than 2x, and why."""

from __future__ import annotations

from .. import scaling, scaling_text
from ..studies import disagreements
from .base import Section, bullets, heading

INTRO = ("The alpha-beta model, given each published set-up's own single-GPU compute time and bandwidth (1 to 256 "
         "workers), against its published points (**published, not measured here**); where they disagree by more "
         "than 2x it is said here, with the likely reason; the figure is *Distributed: extrapolation to published "
         "set-ups*.")


def render(d) -> Section:
    rows = scaling.extrapolation(*scaling_text.extrapolation_inputs(d.scaling.networks, d.scaling.table)[:2])
    return Section([heading("The model against published set-ups", INTRO, level=3),
                    bullets(disagreements(rows, d.scaling.published)
                            or ["The model and every published point agree within 2x."])])
