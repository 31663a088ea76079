"""Throughput against batch size: a colour per framework, a panel per model and mode, a figure per device."""

from __future__ import annotations

from ..estimates import MIN_PROCESSES
from ..figures import per_hardware
from ..tables import throughput_table
from .base import Figures, Section, Table, Text, heading

INTRO = ("Images/s against batch size, a colour per framework, a panel per model and mode, a figure per device "
         "(the form of the 2019 study's Figures 3-8; which of its models and batch sizes these results hold is "
         "under *Study coverage*). Points: geometric mean over processes; bars: 95% CI.")


TABLE = ("The numbers drawn: images/s per framework and batch size, the geometric mean over processes with its "
         "95% interval [low-high] and, in parentheses, the processes it rests on; '!' marks a number that is not "
         f"sound (fewer than {MIN_PROCESSES} clean processes, or a flag on its throughput: the details list why).")


def render(d) -> Section:
    return Section([heading("Throughput vs batch size", INTRO), Figures(per_hardware(d.configs), "per_hardware"),
                    Text(TABLE), Table(throughput_table(d.configs), "no successful runs yet")])
