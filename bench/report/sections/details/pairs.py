"""Every framework pair: which is faster, by how much, with the interval and the verdict."""

from __future__ import annotations

from ...tables import ratios_for_display
from ..base import Section, Table, heading

INTRO = ("Which is faster and by how much, with a 95% interval over fresh processes whose between-process spread is "
         "moderated by the whole sweep (the verdict's), and beside it the interval from each config's own processes "
         "alone (Welch); the verdict (winner, equivalent, undecided) and its reason; blank where a side is not sound.")


def render(d) -> Section:
    return Section([heading("Every framework pair", INTRO),
                    Table(ratios_for_display(d.ratios), "no configuration was measured with two frameworks yet")])
