"""Latency at batch size 1: p50 bars with p90/p99 markers."""

from __future__ import annotations

from ...estimates import P99_MIN_TIMED
from ...figures import latency_batch1
from ..base import Figures, Section, heading

INTRO = ("p50 bars with p90/p99 markers over the timed iterations of the processes that make each config's number "
         f"(the rule in the report's methodology); a p99 only where they timed at least {P99_MIN_TIMED} iterations "
         "(below that it is the slowest iteration or next to it).")


def render(d) -> Section:
    return Section([heading("Latency at batch size 1", INTRO), Figures(latency_batch1(d.configs), "latency_batch1")])
