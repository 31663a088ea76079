"""Distributed: the alpha-beta link model fitted per link, and its prediction against the measured step."""

from __future__ import annotations

from ... import scaling, scaling_text
from ...scaling_figures import network_fit, predicted_vs_measured
from ..base import Figures, Section, Table, distributed_ran, heading

INTRO = ("gloo's ring all-reduce and a point-to-point ping-pong over message sizes on each link, fitted as t = "
         "alpha + M/B; then the prediction (compute + modelled communication x (1 - overlap)) against the measured "
         "step.")


def render(d) -> Section:
    if not distributed_ran(d):
        return Section()  # nothing ran: the report's *Not run* says what would
    return Section([heading("Distributed: communication model", INTRO),
                    Table(scaling.network_table(d.scaling.networks), "no link measured yet"),
                    Figures(network_fit(d.scaling.networks), "network_fit"),
                    Table(scaling_text.predictions_for_display(d.scaling.predictions),
                          "no synchronous multi-worker run with a fitted link yet"),
                    Figures(predicted_vs_measured(d.scaling.predictions), "predicted_vs_measured")])
