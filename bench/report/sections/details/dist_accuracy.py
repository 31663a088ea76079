"""Distributed: asynchronous against synchronous training, and Sandblaster L-BFGS where it ran, accuracy over time."""

from __future__ import annotations

from ... import scaling_text
from ...scaling_figures import accuracy_over_time
from ..base import Figures, Section, Table, distributed_ran, heading

INTRO = ("scikit-learn's digits, a small MLP, 2 workers: synchronous all-reduce against the asynchronous parameter "
         "server; compare at equal training time (the table's first accuracy column).")
SANDBLASTER = (" Sandblaster L-BFGS (DistBelief's batch method) ran beside them with the asynchronous run's process "
               "count: a coordinator driving L-BFGS, a parameter server and 2 workers computing the gradient in work "
               "units the coordinator hands out. Its step is one L-BFGS iteration over the whole training set; the "
               "second table says how its processes shared the cores and how many units each worker took.")


def render(d) -> Section:
    if not distributed_ran(d):
        return Section()  # nothing ran: the report's *Not run* says what would
    sandblaster = scaling_text.sandblaster_for_display(d.scaling.processes)
    return Section([heading("Distributed: asynchronous vs synchronous accuracy over time",
                            INTRO + (SANDBLASTER if not sandblaster.empty else "")),
                    Figures(accuracy_over_time(d.scaling.curves), "accuracy_over_time"),
                    Table(scaling_text.accuracy_for_display(d.scaling.accuracy), "no accuracy runs yet"),
                    *([Table(sandblaster)] if not sandblaster.empty else [])])
