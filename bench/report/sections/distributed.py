"""Distributed data-parallel training: findings, the scaling table and its two figures (never mixed with the
single-process tables)."""

from __future__ import annotations

from .. import scaling_text
from ..scaling_figures import efficiency, throughput_and_comm
from .base import Figures, Section, Table, bullets, distributed_ran, heading

INTRO = ("Training across worker processes on this machine (and across emulated nodes joined by a shaped link): "
         "synchronous all-reduce, parameter servers and an *independent* baseline whose workers never communicate, "
         "so communication cost is measured, not guessed. Weak scaling (batch per worker fixed); threads per "
         "worker = cores / workers, so the *independent* run at the same N, not 100%, is the ceiling a strategy "
         "can reach here. These runs never enter the single-process tables above; the step breakdown, the link "
         "model, predicted against measured and accuracy over time are in the details.")


def render(d) -> Section:
    if not distributed_ran(d):
        return Section()  # nothing to compare: the distributed configs a profile dropped are under *Not run*
    table = scaling_text.data_parallel(d.scaling.table)
    return Section([heading("Distributed data-parallel training", INTRO), bullets(scaling_text.findings(d.scaling)),
                    Table(scaling_text.scaling_for_display(table), "no distributed runs yet"),
                    Figures(throughput_and_comm(table), "scaling_throughput"),
                    Figures(efficiency(table), "scaling_efficiency")])
