"""Where a process's seconds go in the latest sweep: the configs that got processes beyond the minimum, and why."""

from __future__ import annotations

from ...overhead import extra_processes_text
from ..base import Section, Text, heading

INTRO = ("The latest sweep's processes, per component (medians and totals; `share`: of the processes' wall time), "
         "and the configs that got processes beyond the minimum, with the reason.")


def render(d) -> Section:
    # The per-component table (overhead.latest_sweep_overhead) is not shown: the notebook cell this replaces built
    # it but never displayed it, and this refactor keeps the page as it was (see the report of issue 27).
    return Section([heading("Where a process's seconds go", INTRO),
                    Text(extra_processes_text(d.sweeps) or "*No extra processes (a fixed number per config).*")])
