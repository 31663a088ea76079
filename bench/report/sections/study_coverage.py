"""Each source study's figures and claims: what these results hold, where, or why not and what would measure it."""

from __future__ import annotations

from ..studies import STUDY_TITLES, coverage_table
from .base import Section, heading, optional

INTRO = ("Each source study's figures and claims: what these results hold, where, or why not and what would "
         "measure it (references at the end).")


def render(d) -> Section:
    out = Section([heading("Study coverage", INTRO)])
    for key, title in STUDY_TITLES.items():
        out += optional(title, coverage_table(d, key), level=3)
    return out
