"""What did not run: configs over the time budget, combinations a framework cannot run here, failed and skipped runs
(each left out when empty)."""

from __future__ import annotations

from ..tables import failures_table, not_applicable_table, over_budget_table
from .base import Section, optional


def render(d) -> Section:
    return (optional("Not run: over budget", over_budget_table(d.sweeps, d.runs),
                     "Configs the sweep dropped to fit its time budget (lowest priority first).")
            + optional("Not applicable", not_applicable_table(d.sweeps),
                       "What a profile asked for that a framework declares it cannot run on this machine, left out "
                       "before any run started.")
            + optional("Failed and skipped runs", failures_table(d.runs)))
