"""Sweep planning: interleaved repetitions, a duration estimate, and a budget that drops configs.

Every config runs in `repeats` fresh processes. Round r holds one repetition of every config in an
order shuffled with the seed (order_seed, r), so slow drift of the machine (a busy period, thermal
state, a neighbour on the VM) touches every framework alike instead of falling on one.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..config import RunConfig

# Seconds a sweep spends per run outside the harness's own measurement (papermill, kernel start,
# imports): measured 3-5 s here; records' duration_s covers the rest.
PROCESS_OVERHEAD_S = 5.0
# Without earlier records an iteration is estimated from FLOPs at this share of the measured peak
# (measured here: inference 60-75%, training 40-55%); a little cautious, so the estimate errs long.
ASSUMED_EFFICIENCY = {"inference": 0.55, "training": 0.4}
# The phase pass of a training step times forward, forward+backward and a whole step.
PHASE_STEP_COST = {"inference": 1.0, "training": 2.5}


@dataclass(frozen=True)
class Task:
    """One fresh process: a config's repetition `repeat`, attempt `attempt` (0 unless retried)."""

    config: RunConfig
    repeat: int
    round: int
    attempt: int = 0


def comparison_group(config: RunConfig) -> tuple:
    """What a config is compared within: everything but the framework and engine."""
    d = config.to_dict()
    return tuple((k, v) for k, v in sorted(d.items()) if k not in ("framework", "engine", "extra"))


def interleaved_order(configs: Iterable[RunConfig], repeats: int, seed: int,
                      done: set[tuple[str, int]] = frozenset()) -> list[Task]:
    """Round-robin over configs, shuffled per round with a seed; repetitions already done are left out."""
    configs = list(configs)
    tasks = []
    for r in range(repeats):
        order = list(configs)
        random.Random(f"{seed}:{r}").shuffle(order)
        tasks += [Task(c, r, r) for c in order if (c.key, r) not in done]
    return tasks


DISTRIBUTED_START_S = 10.0  # launcher, torchrun / TF servers, every rank importing its framework


def estimate_run_s(config: RunConfig, repeat: int, history_s: list[float], flops_per_image: float | None,
                   peak_flops: float | None) -> float:
    """Seconds one process of `config` will take: from its earlier runs here, else from FLOPs and peak."""
    if history_s:
        return statistics.median(history_s) + PROCESS_OVERHEAD_S
    if config.distributed:  # fixed step counts; every rank's process starts its framework
        step = flops_per_image * config.global_batch / (peak_flops * ASSUMED_EFFICIENCY["training"]) \
            if flops_per_image and peak_flops else 0.5
        return PROCESS_OVERHEAD_S + DISTRIBUTED_START_S + step * (config.warmup + config.iterations)
    if not flops_per_image or not peak_flops:
        return PROCESS_OVERHEAD_S + (config.time_budget_s or 10.0)
    iteration = flops_per_image * config.batch_size / (peak_flops * ASSUMED_EFFICIENCY[config.mode])
    if config.protocol == "seed":
        loop = iteration * (config.warmup + config.iterations)
    else:  # at least two warm-ups and the minimum iterations; the budget when the CI target is not met
        loop = max(iteration * (min(config.warmup, 3) + config.iterations), config.time_budget_s)
    phases = iteration * config.phase_iterations * PHASE_STEP_COST[config.mode] if repeat == 0 else 0.0
    return PROCESS_OVERHEAD_S + loop + phases


def fit_budget(configs: list[RunConfig], tasks: list[Task], estimate: Callable[[Task], float],
               budget_s: float) -> tuple[list[Task], list[RunConfig], float]:
    """Drop whole comparison groups, lowest priority first, until the estimated time fits `budget_s`.

    Returns (tasks kept, configs dropped, estimated seconds of the kept tasks). A budget of 0 keeps all.
    A higher-priority group is never dropped while a lower-priority one is kept.
    """
    cost: dict[tuple, float] = {}
    for t in tasks:
        g = comparison_group(t.config)
        cost[g] = cost.get(g, 0.0) + estimate(t)
    groups = list(dict.fromkeys(comparison_group(c) for c in configs))  # priority order
    total = sum(cost.values())
    while budget_s and groups and total > budget_s:
        total -= cost.get(groups.pop(), 0.0)
    keep = set(groups)
    kept = [t for t in tasks if comparison_group(t.config) in keep]
    dropped = [c for c in configs if comparison_group(c) not in keep]
    return kept, dropped, total
