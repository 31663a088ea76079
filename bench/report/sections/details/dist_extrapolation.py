"""Distributed: the link model extrapolated to published set-ups, beside their published points."""

from __future__ import annotations

from ... import scaling, scaling_text
from ...scaling_figures import extrapolation
from ..base import Figures, Section, Text, heading

INTRO = ("The same model with the published set-up's own single-GPU compute time and network bandwidth, 1 to 256 "
         "workers (Goyal et al.'s largest run), beside published points (**published, not measured here**). "
         "Latency alpha and the overlap share are this machine's where measured (the line under the figure says "
         "which were assumed).")


def render(d) -> Section:
    alpha, overlap, note = scaling_text.extrapolation_inputs(d.scaling.networks, d.scaling.table)
    return Section([heading("Distributed: extrapolation to published set-ups", INTRO), Text(f"*Model inputs: {note}.*"),
                    Figures(extrapolation(scaling.extrapolation(alpha, overlap), d.scaling.published),
                            "scaling_extrapolation")])
