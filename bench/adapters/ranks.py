"""The rank contract: what one process of a distributed run hands the rank loop (bench/runs/distributed/rank_loop.py).

An adapter's `rank_group` prepares the ranks this process runs (one rank per process for torchrun and TF_CONFIG
tasks; one per device for a process over its devices) and returns a RankGroup: their step with the strategy's
gradient exchange around the Workload's, their weights' checksums, their energy and memory readings, and how their
results reach the process that writes them. The loop, the timing window and the results are the same for every
framework.
"""

from __future__ import annotations

import contextlib
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .launch import RANK_ENV

if TYPE_CHECKING:  # a rank gets its config and workload handed in: adapters sit below bench.config
    from ..config import RunConfig
    from .workload import Workload


@dataclass
class Replica:
    """One rank this process runs: its number, device and role, and the node and machine it runs on."""

    rank: int
    device: str | None = None
    role: str = "worker"
    node: int = 0
    host: str = field(default_factory=lambda: os.uname().nodename)


class Readings(contextlib.AbstractContextManager):
    """Energy and device memory over the timed steps, per replica (none: a rank that reads neither): `meters`
    (bench/host/energy.py's) run over the steps, after `reset` (device peak-memory counters)."""

    def __init__(self, meters=()) -> None:
        self.meters = list(meters)
        self._stack = contextlib.ExitStack()

    def reset(self) -> None:
        """Before the timed steps: reset what reads a peak."""

    def __enter__(self) -> Readings:
        self.reset()
        for meter in self.meters:
            self._stack.enter_context(meter)
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def replica(self, k: int) -> tuple[dict | None, dict | None]:
        """(energy, memory) of this process's `k`-th replica, read after the timed steps."""
        return None, None


@dataclass
class GroupFacts:
    """What the record says of the ranks beside their steps: the certificate's facts (the settings), the model's
    size, the collectives, the threads each rank ran with, and the images one step of one rank trains on."""

    settings: dict[str, Any]
    params: int | None
    grad_bytes: int | None
    backend: str | None
    threads: Any  # a count, or the intra/inter-op pools
    samples_per_step: int
    input_placement: dict | None = None


class RankGroup(ABC):
    """The ranks of one process, prepared: the rank loop calls `step` `warmup + iterations` times between
    `checksums`, with `readings` around the timed steps and `barrier` before and after them."""

    replicas: list[Replica]
    facts: GroupFacts
    evaluates: bool = False  # it measures test accuracy during the timed steps (their window then says for how long)

    def counts(self, warmup: int, iterations: int) -> tuple[int, int]:
        """(warm-up, timed) steps to run for the config's counts (a coordinator of chunks runs fewer, longer)."""
        return warmup, iterations

    @abstractmethod
    def step(self) -> dict[str, float]:
        """One step of every replica: seconds of the step and its phases, `start`/`end` timestamps, `loss`."""

    @abstractmethod
    def checksums(self) -> list[float | None]:
        """Each replica's sum of |weights| (the ranks' weights are compared after training)."""

    def barrier(self) -> None:
        """Wait for every rank of the run (no-op where this process holds them all, or they never meet)."""

    def readings(self) -> Readings:
        return Readings()

    def evaluate(self, steps_done: int) -> dict | None:
        """{"steps": steps trained, "accuracy": test accuracy} after `steps_done` timed steps, where this group
        evaluates then (None: not now)."""
        return None

    def gather(self, results: list[dict]) -> list[dict]:
        """Every rank's result on the process that writes them ([] on the others); by default this process's own."""
        return results

    def finish(self) -> None:
        """Leave the run's collectives once every result is written."""


class WorkloadRanks(RankGroup):
    """One rank per process, training its Workload alone (the `independent` strategy: no gradient exchange), each
    step timed with the workload's own sync before each clock read. Any framework package can return it from
    `rank_group` with `launch.process_per_rank_plan` as its launch plan: its ranks then need no other code."""

    def __init__(self, workload: Workload, config: RunConfig, rank: int) -> None:
        self.workload = workload
        self.replicas = [Replica(rank, config.device, node=int(os.environ.get("BENCH_NODE", 0)))]
        settings = dict(workload.settings)
        self.facts = GroupFacts(settings=settings, params=workload.params or None, grad_bytes=None, backend=None,
                                threads=settings.get("intra_op_threads"), samples_per_step=config.worker_batch,
                                input_placement=workload.input_placement())

    @classmethod
    def of_this_process(cls, adapter, config: RunConfig) -> WorkloadRanks:
        """The rank the launcher started this process as (its RANK_ENV), training the adapter's rank workload."""
        rank = int(os.environ.get(RANK_ENV, 0))
        return cls(adapter.distributed.prepare_rank(config.for_rank(rank)), config, rank)

    def step(self) -> dict[str, float]:
        workload = self.workload
        workload.sync()
        t0 = time.perf_counter()
        workload.step()
        workload.sync()
        t1 = time.perf_counter()
        return {"start": t0, "end": t1, "step_s": t1 - t0}

    def checksums(self) -> list[float | None]:
        return [self.workload.weights_checksum()]
