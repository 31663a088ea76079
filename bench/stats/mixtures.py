"""Two groups among a config's processes: a gap between neighbouring process values well beyond the spread the
sweep's prior says processes have (e.g. 30.0, 30.1 against 33.6-35.5 img/s), which a t interval over its processes
does not describe. Such a config keeps its own spread (never a borrowed narrow one) and says so.

The gap is judged against the prior's between-process SD, which rests on the whole pool's degrees of freedom, not
the config's few, taken at its upper 75% confidence bound (Prior.sd_upper: an SD fitted to few degrees of freedom
is often too small): with sigma known, the largest gap between neighbours of n normal values (either side at least
one value) exceeds 2.9 sigma with probability under 1% for n = 4 to 12 (2.86 sigma at n = 4, 2.18 at n = 12;
simulated, 20,000 draws per n), hence GAP_SIGMAS = 3."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

GAP_SIGMAS = 3.0
MIN_VALUES = 4  # fewer processes give no two groups to tell from one


@dataclass(frozen=True)
class Groups:
    """A config's processes split at the largest gap: the values below it and above it, and the gap in units of
    the prior's between-process SD."""

    low: tuple[float, ...]
    high: tuple[float, ...]
    sigmas: float

    def describe(self) -> str:
        """'2 processes at 30-30.1 against 4 at 33.6-35.5 (a gap of 4.1 SDs of the sweep's process spread)'."""
        def span(v):
            return f"{min(v):.3g}" if len(v) == 1 else f"{min(v):.3g}-{max(v):.3g}"
        return (f"{len(self.low)} process{'es' * (len(self.low) != 1)} at {span(self.low)} against "
                f"{len(self.high)} at {span(self.high)} (a gap of {self.sigmas:.1f} SDs of the sweep's process "
                "spread)")


def two_groups(values: Sequence[float], sd_log: float | None, limit: float = GAP_SIGMAS) -> Groups | None:
    """The two groups of `values` (images/s, one per process) where the largest gap between neighbours on the log
    scale exceeds `limit` times `sd_log` (the prior's between-process SD of log values); None otherwise, with fewer
    than MIN_VALUES values or without a prior's SD."""
    if sd_log is None or not sd_log > 0 or len(values) < MIN_VALUES or min(values) <= 0:
        return None
    ordered = sorted(float(v) for v in values)
    logs = [math.log(v) for v in ordered]
    gaps = [b - a for a, b in zip(logs, logs[1:])]
    k = max(range(len(gaps)), key=gaps.__getitem__)
    sigmas = gaps[k] / sd_log
    if sigmas <= limit:
        return None
    return Groups(tuple(ordered[:k + 1]), tuple(ordered[k + 1:]), sigmas)
