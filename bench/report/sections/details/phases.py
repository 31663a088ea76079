"""Median time per phase from a separate instrumented pass."""

from __future__ import annotations

from ...figures import phase_breakdown
from ..base import Figures, Section, heading

INTRO = ("Median time per phase from a separate instrumented pass (the headline numbers are measured without "
         "instrumentation).")


def render(d) -> Section:
    return Section([heading("Phase breakdown", INTRO), Figures(phase_breakdown(d.configs), "phases")])
