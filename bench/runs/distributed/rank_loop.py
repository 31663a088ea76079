"""The one rank loop: every framework's ranks run their adapter's RankGroup through it, and its result per rank is
the record's `Rank` section, carried to the launcher with the per-step times the run's global numbers come from."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from ...adapters.ranks import RankGroup, Replica
from ...ranks import rankio
from ...results.record import Energy, Memory, Rank

# Per-step phase seconds a step may report; a rank's section keeps each one's median in milliseconds.
PHASES = ("forward_s", "backward_s", "forward_backward_s", "update_s", "exposed_comm_s", "other_s", "comm_s",
          "overlap_s")
# Roles that train on no samples: the asynchronous chief, Sandblaster's coordinator and parameter servers
COORDINATING = ("chief", "coordinator", "server")
RESULT = "result"  # the key of what travels beside the section (never written into the record as such)


@dataclass
class RankResult:
    """One rank's outcome: its record section, and what the run's sections are built from (its per-step and warm-up
    seconds, its machine, the group's facts, the accuracy it measured)."""

    section: Rank
    steps: list[dict[str, float]]
    warmup_s: list[float]
    host: str | None
    settings: dict[str, Any] | None
    params: int | None
    grad_bytes: int | None
    backend: str | None
    input_placement: dict | None = None
    accuracy: list[dict] | None = None

    def to_json(self) -> dict:
        extra = {k: getattr(self, k) for k in ("steps", "warmup_s", "host", "settings", "params", "grad_bytes",
                                               "backend", "input_placement", "accuracy")}
        return {**self.section.to_json(), RESULT: extra}

    @classmethod
    def from_json(cls, data: dict) -> RankResult:
        return cls(section=Rank.from_json({k: v for k, v in data.items() if k != RESULT}), **data[RESULT])


def rank_section(replica: Replica, steps: list[dict], samples_per_step: int, threads: Any, window: dict,
                 checksums: tuple[float | None, float | None], energy: dict | None, memory: dict | None) -> Rank:
    """The record's section of one rank from its timed steps (a chief coordinates: it trains on no samples)."""
    medians = {k[:-2]: statistics.median(s[k] for s in steps) * 1e3 for k in PHASES if steps and k in steps[0]}
    per_step_bytes = [s["comm_bytes"] for s in steps if "comm_bytes" in s]
    trains = replica.role not in COORDINATING
    return Rank(
        rank=replica.rank, role=replica.role, node=replica.node, pid=os.getpid(), threads=threads, steps=len(steps),
        samples=samples_per_step * len(steps) * (1 if trains else 0), phases_median_ms=medians or None,
        comm_bytes_per_step=statistics.median(per_step_bytes) if per_step_bytes else None,
        buckets_per_step=statistics.median(s["buckets"] for s in steps) if steps and "buckets" in steps[0] else None,
        peak_rss_bytes=rankio.peak_rss_bytes(), window=window, checksum_before=checksums[0],
        checksum_after=checksums[1], loss_last=steps[-1].get("loss") if steps else None, device=replica.device,
        energy=Energy.from_json(energy) if energy is not None else None,
        memory=Memory.from_json(memory) if memory is not None else None,
        images_per_sec=samples_per_step / statistics.median(s["step_s"] for s in steps)
        if steps and samples_per_step and trains else None,
    )


def run_group(group: RankGroup, config, spec: dict) -> list[RankResult]:
    """Warm-up steps, the timed steps between barriers with the energy and memory readings around them, the
    weights' checksums before and after; every rank's result written by the process that gathers them."""
    warmup_n, timed_n = group.counts(config.warmup, config.iterations)
    warmup = [group.step()["step_s"] for _ in range(warmup_n)]
    before = group.checksums()
    group.barrier()
    accuracy, eval_s, steps = [], 0.0, []
    with group.readings() as readings:
        w0, cpu0 = time.perf_counter(), rankio.cpu_seconds()
        for i in range(timed_n):
            steps.append(group.step())
            e0 = time.perf_counter()
            point = group.evaluate(i + 1)
            if point is not None:  # evaluation is outside the training time it is plotted against
                accuracy.append({"train_s": e0 - w0 - eval_s, **point})
                eval_s += time.perf_counter() - e0
        group.barrier()
        w1, cpu1 = time.perf_counter(), rankio.cpu_seconds()
    after = group.checksums()
    window = {"start": w0, "end": w1, "cpu_s": cpu1 - cpu0, **({"eval_s": eval_s} if group.evaluates else {})}
    facts = group.facts
    results = []
    for k, replica in enumerate(group.replicas):
        energy, memory = readings.replica(k)
        section = rank_section(replica, steps, facts.samples_per_step, facts.threads, window,
                               (before[k], after[k]), energy, memory)
        results.append(RankResult(section, steps, warmup, replica.host, facts.settings, facts.params,
                                  facts.grad_bytes, facts.backend, facts.input_placement,
                                  (accuracy or None) if k == 0 else None))
    for data in group.gather([r.to_json() for r in results]):
        rankio.write_result(spec, "chief" if data["role"] == "chief" else f"rank{data['rank']}", data)
    group.finish()
    return results
