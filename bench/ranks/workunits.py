"""Sandblaster's work units (DistBelief): one gradient evaluation over the training set cut into small units, handed
out by the coordinator one at a time to whichever worker asks, so a faster worker takes more of them.

Each worker owns a shard (every W-th unit) and is handed its own units first; a worker whose shard is done takes
the next unit of the shard with the most left (load balancing: a slow worker's units go to the fast ones). Every
unit is handed out exactly once per evaluation.

Run-side code: imports nothing heavy, so a rank can use it before its framework is up.
"""

from __future__ import annotations

from collections import deque


def unit_bounds(samples: int, unit: int) -> list[tuple[int, int]]:
    """[start, end) of each unit of `unit` samples over `samples` (the last one takes the remainder)."""
    if samples < 1 or unit < 1:
        raise ValueError(f"work units need samples >= 1 and a unit size >= 1 (got {samples}, {unit})")
    return [(a, min(a + unit, samples)) for a in range(0, samples, unit)]


class WorkUnits:
    """One evaluation's hand-out: `take(worker)` gives that worker its next unit's [start, end), or None once every
    unit is out; `taken` counts the units each worker took, `stolen` those it took from another's shard."""

    def __init__(self, samples: int, unit: int, workers: int) -> None:
        if workers < 1:
            raise ValueError("work units need at least one worker")
        self.bounds = unit_bounds(samples, unit)
        self.queues = [deque(range(w, len(self.bounds), workers)) for w in range(workers)]
        self.taken = [0] * workers
        self.stolen = [0] * workers

    def take(self, worker: int) -> tuple[int, int] | None:
        own = self.queues[worker]
        if own:
            index = own.popleft()
        else:
            richest = max(range(len(self.queues)), key=lambda w: len(self.queues[w]))
            if not self.queues[richest]:
                return None
            index = self.queues[richest].pop()  # from the far end: the owner keeps the units it is about to reach
            self.stolen[worker] += 1
        self.taken[worker] += 1
        return self.bounds[index]

    @property
    def left(self) -> int:
        return sum(len(q) for q in self.queues)
