"""Flagged numbers: configs a guard flagged and every process left out of its config's number."""

from __future__ import annotations

from ...tables import flagged_table
from ..base import Section, Table, heading

INTRO = "Configs a guard flagged, and every process left out of its config's number, with the reason."


def render(d) -> Section:
    return Section([heading("Flagged numbers", INTRO),
                    Table(flagged_table(d.configs, d.processes), "no number was flagged")])
