"""Throughput against batch size: a colour per framework, a panel per model and mode, a figure per device."""

from __future__ import annotations

from ..figures import per_hardware
from .base import Figures, Section, heading

INTRO = ("Images/s (a token model's: sequences/s) against batch size, a colour per framework, a panel per model and "
         "mode, a figure per device (the form of the 2019 study's Figures 3-8; which of its models and batch sizes "
         "these results hold is under *Study coverage*). Points: geometric mean over processes; bars: 95% CI. Every "
         "number drawn, with its interval and the processes it rests on, is in the details' table *Measured images/s, "
         "every framework and batch size*.")


def render(d) -> Section:
    return Section([heading("Throughput vs batch size", INTRO), Figures(per_hardware(d.configs), "per_hardware")])
