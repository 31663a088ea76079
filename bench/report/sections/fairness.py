"""Fairness and parity: the same work in every framework (parameter counts, the per-run certificate's checks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...adapters import measures_a_framework
from ...measurement.certificate import CERTIFICATE_CHECKS
from ..tables import parity
from .base import Section, Table, heading

if TYPE_CHECKING:
    from ...results.record import Record


def fairness_summary(records: list[Record]) -> pd.DataFrame:
    """Per-run certificate checks aggregated: how many runs passed, failed, or had no such check."""
    checks = list(CERTIFICATE_CHECKS)
    counts = {c: {"passed": 0, "failed": 0, "not applicable": 0} for c in checks}
    for r in records:
        if r.status != "ok" or not measures_a_framework(r.config.framework):
            continue
        for c in checks:
            v = r.fairness.check(c) if r.fairness else None  # no certificate: no check applied
            counts[c]["not applicable" if v is None else "passed" if v else "failed"] += 1
    return pd.DataFrame(counts).T


def render(d) -> Section:
    return Section([heading("Fairness and parity"), Table(parity(d.configs), "no successful runs"),
                    Table(fairness_summary(d.records).reset_index(names="check"), "no successful runs")])
