"""Each framework at batch 32 and at its best batch, per device (the 2019 study's Figures 9-11)."""

from __future__ import annotations

from ..figures import per_framework
from .base import Figures, Section, heading

INTRO = ("Per device (the form of the 2019 study's Figures 9-11; a comparison across hardware needs results from "
         "several machines merged into one results folder).")


def render(d) -> Section:
    return Section([heading("Each framework at batch 32 and at its best batch", INTRO),
                    Figures(per_framework(d.configs), "per_framework")])
