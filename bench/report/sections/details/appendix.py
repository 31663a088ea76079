"""Appendix: every published row, with its source (published, not measured here)."""

from __future__ import annotations

from ... import scaling
from ...tables import published_for_display
from ..base import Section, Table, heading

INTRO = ("**Published, not measured here.** Single-device throughput, distributed scaling points, and the 2019 "
         "study's own measurements.")


def render(d) -> Section:
    return Section([heading("Appendix: every published row, with its source", INTRO),
                    Table(published_for_display(d.published), "none"), Table(scaling.published_scaling(), "none"),
                    Table(d.seed, "none")])
