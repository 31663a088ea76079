"""Start-up cost: building the model and the first iteration, apart from steady-state throughput."""

from __future__ import annotations

from ...tables import startup_for_display
from ..base import Section, Table, heading

INTRO = ("Building the model (for ONNX Runtime and OpenVINO: the ONNX export and session compile) and the first "
         "iteration, at each series' largest batch; medians over processes.")


def render(d) -> Section:
    return Section([heading("Start-up cost", INTRO),
                    Table(startup_for_display(d.configs), "no start-up times recorded")])
