"""Appendix: every published row, with its source (published, not measured here)."""

from __future__ import annotations

from ... import scaling
from ...tables import published_for_display
from ..base import Section, Table, Text, heading

INTRO = ("**Published, not measured here.** Single-device throughput, distributed scaling points, and the 2019 "
         "study's own measurements.")


def said_once(table):
    """A table less its columns that hold one value on every row, and those values in a line said once above it
    (the 2019 study's 144 rows share one note: one line, not a wrapped note per row)."""
    if table is None or table.empty or len(table) < 2:
        return [Table(table, "none")]
    same = [c for c in table.columns if table[c].nunique(dropna=False) == 1]
    if not same:
        return [Table(table, "none")]
    line = "; ".join(f"*{c}*: {table[c].iloc[0]}" for c in same)
    return [Text(f"Every row below: {line}."), Table(table.drop(columns=same), "none")]


def render(d) -> Section:
    return Section([heading("Appendix: every published row, with its source", INTRO),
                    *said_once(published_for_display(d.published)), *said_once(scaling.published_scaling()),
                    *said_once(d.seed)])
