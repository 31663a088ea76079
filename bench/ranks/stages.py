"""Pipeline stages, whatever the framework: the cut of a model's units into stages (balanced by counted FLOPs, or
given), and one stage's step summarised from the clock reads around each of its actions (compute, send/receive
waits, idle: the bubble).

Run-side code: imports nothing heavy, so a rank can use it before its framework is up.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..strategies import REGISTRY
from .timeline import union_length

BACKWARD_WEIGHT = "backward_weight"  # a zero-bubble schedule's weight-gradient half of a backward
COMPUTE = ("forward", "backward", BACKWARD_WEIGHT, "loss")  # the timeline's kinds that are the stage's own arithmetic
WAIT = "wait"  # a wait on a send or receive (the transfer, and the peer not being ready: where the bubble shows)
UPDATE = "update"


@dataclass(frozen=True)
class Cut:
    """Where each stage begins in the model's list of units, and how the cut was chosen."""

    starts: tuple[int, ...]  # the first unit of each stage; starts[0] == 0
    units: int
    rule: str

    def bounds(self) -> list[tuple[int, int]]:
        ends = (*self.starts[1:], self.units)
        return list(zip(self.starts, ends))


# The schedules that put v model chunks (stages) on each worker: p workers run p x v stages (interleaved 1F1B and
# interleaved zero-bubble round-robin, ZB-V in a V); every other pipeline strategy holds one stage per worker.
PIPELINE_CHUNKS = {name: s.chunks_per_worker for name, s in REGISTRY.items() if s.chunks_per_worker > 1}

TIMED = "time"  # the config's pipeline_cut that asks for the cut balanced by measured time


def balanced_cut(costs: list[float], stages: int,
                 rule: str = "balanced by counted forward FLOPs per stage (least largest stage)") -> Cut:
    """The contiguous cut of units with `costs` into `stages` that makes the costliest stage as cheap as it can be
    (the linear-partition dynamic programme; ties go to the earlier cut). Every stage gets at least one unit."""
    n = len(costs)
    if not 1 <= stages <= n:
        raise ValueError(f"cannot cut {n} units into {stages} stages")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[k][i]: the least largest stage cost of the first i units in k stages; where[k][i]: the last stage's start
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    where = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for i in range(k, n + 1):
            for j in range(k - 1, i):
                value = max(best[k - 1][j], prefix[i] - prefix[j])
                if value < best[k][i]:
                    best[k][i], where[k][i] = value, j
    starts, i = [], n
    for k in range(stages, 0, -1):
        i = where[k][i]
        starts.append(i)
    return Cut(tuple(reversed(starts)), n, rule)


def given_cut(text: str, units: int, stages: int) -> Cut:
    """The cut a config gives as "a,b,...": the unit index where each stage after the first begins."""
    starts = (0, *(int(t) for t in text.split(",") if t.strip()))
    if len(starts) != stages or list(starts) != sorted(set(starts)) or starts[-1] >= units:
        raise ValueError(f"pipeline_cut {text!r} does not cut {units} units into {stages} stages "
                         f"(valid: {stages - 1} increasing unit indices from 1 to {units - 1}, comma-separated)")
    return Cut(starts, units, f"given in the config: stages begin at units {', '.join(map(str, starts))}")


def stage_summary(actions: list[tuple[str, float, float]], start: float, end: float) -> dict[str, float]:
    """One stage's step from its timeline (kind, start, end): seconds of compute (forward, backward, loss), of waits
    on sends and receives, of the update, and idle (the rest of the schedule's span: the bubble, plus the waits'
    share that is the peer not being ready). `bubble_share`: the share of the schedule's span (the step without the
    update) in which this stage computed nothing."""
    compute = union_length([(a, b) for k, a, b in actions if k in COMPUTE])
    waits = union_length([(a, b) for k, a, b in actions if k == WAIT])
    update = union_length([(a, b) for k, a, b in actions if k == UPDATE])
    span = max(1e-12, (end - start) - update)
    return {"compute_s": compute, "wait_s": waits, "update_s": update,
            "idle_s": max(0.0, span - compute), "bubble_share": max(0.0, 1.0 - compute / span)}


def bubble_formula(stages: int, micro_batches: int, chunks: int = 1) -> float:
    """GPipe's and 1F1B's idle share (p-1)/(m+p-1); with v interleaved chunks per stage (p-1)/(vm+p-1): the fill and
    drain shrink to (p-1)/v micro-batch times beside m of work (the idle share of torch's interleaved 1F1B order
    with equal stages; (p-1)/(m+p-1)/v, the usual shorthand, is below it: 10% against 11.1% at p = 2, m = 4)."""
    return (stages - 1) / (chunks * micro_batches + stages - 1)
