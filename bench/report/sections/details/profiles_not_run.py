"""Each named profile no sweep in these results ran, and the command that adds it."""

from __future__ import annotations

from ...not_run import not_run_table
from ..base import Section, Table, heading

INTRO = ("Each named profile no sweep in these results ran: what it holds and the command that adds it to the "
         "report.")


def render(d) -> Section:
    return Section([heading("Profiles not run here", INTRO),
                    Table(not_run_table(d.sweeps), "every named profile ran here")])
