"""Every framework pair: which is faster, by how much, with the interval and the verdict."""

from __future__ import annotations

from ...tables import ratios_for_display
from ..base import Section, Table, heading

INTRO = ("Which is faster and by how much, with a 95% Welch interval over fresh processes; *within noise* when it "
         "includes 1x; blank where a side is not sound (the verdict names it).")


def render(d) -> Section:
    return Section([heading("Every framework pair", INTRO),
                    Table(ratios_for_display(d.ratios), "no configuration was measured with two frameworks yet")])
