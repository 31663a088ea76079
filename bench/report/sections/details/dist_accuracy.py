"""Distributed: asynchronous against synchronous training, accuracy over time."""

from __future__ import annotations

from ... import scaling
from ...scaling_figures import accuracy_over_time
from ..base import Figures, Section, Table, heading

INTRO = ("scikit-learn's digits, a small MLP, 2 workers: synchronous all-reduce against the asynchronous parameter "
         "server; compare at equal training time (the table's first accuracy column).")


def render(d) -> Section:
    return Section([heading("Distributed: asynchronous vs synchronous accuracy over time", INTRO),
                    Figures(accuracy_over_time(d.scaling.curves), "accuracy_over_time"),
                    Table(scaling.accuracy_for_display(d.scaling.accuracy), "no accuracy runs yet")])
