"""Every framework's measured images/s per model, mode and batch size, with its interval: the numbers the report's
throughput figures draw."""

from __future__ import annotations

from ...estimates import MIN_PROCESSES
from ...tables import throughput_table
from ..base import Section, Table, heading

INTRO = ("The numbers the report's throughput figures draw: images/s per framework and batch size, the geometric mean "
         "over processes with its 95% interval [low-high] and, in parentheses, the processes it rests on; '!' marks a "
         f"number that is not sound (fewer than {MIN_PROCESSES} clean processes, or a flag on its throughput: "
         "*Flagged* below says why).")


def render(d) -> Section:
    return Section([heading("Measured images/s, every framework and batch size", INTRO),
                    Table(throughput_table(d.configs), "no successful runs yet")])
