"""How much of the iteration-time variance lies between fresh processes rather than within one."""

from __future__ import annotations

from ...tables import variance_table
from ..base import Section, Table, heading

INTRO = ("How much of the iteration-time variance lies between fresh processes rather than within one (Kalibera & "
         "Jones).")


def render(d) -> Section:
    return Section([heading("Between- and within-process variance", INTRO),
                    Table(variance_table(d.configs), "fewer than two processes per config: no variance split")])
