"""Sandblaster L-BFGS runs (bench/adapters/torch/sandblaster.py): the record's `sandblaster` section from its
processes' results: who ran, how they shared the cores (each process's CPU seconds over the timed window), the work
units each worker took (load balancing: the faster takes more) and the gradient evaluations per L-BFGS iteration."""

from __future__ import annotations

import statistics

from ...host import devices
from ...results.record import BatchMethod
from .rank_loop import RankResult


def section(ranks: list[RankResult]) -> BatchMethod:
    coordinator = next(r for r in ranks if r.section.role == "coordinator")
    workers = sorted((r for r in ranks if r.section.role == "worker"), key=lambda r: r.section.rank)
    steps = coordinator.steps
    taken = [sum(s["units_taken"][k] for s in steps) for k in range(len(workers))]
    stolen = [sum(s["units_stolen"][k] for s in steps) for k in range(len(workers))]
    processes = []
    for r in sorted(ranks, key=lambda r: r.section.rank):
        window = r.section.window or {}
        wall = window.get("end", 0.0) - window.get("start", 0.0)
        processes.append({"rank": r.section.rank, "role": r.section.role, "pid": r.section.pid,
                          "cpu_s": window.get("cpu_s"),
                          "cpu_share_of_one_core": window["cpu_s"] / wall if wall > 0 and "cpu_s" in window
                          else None})
    cores = devices.usable_cpus()
    per_unit = [sum(s["forward_backward_s"] for s in w.steps) / max(1, sum(s.get("units", 0) for s in w.steps)) * 1e3
                for w in workers]
    return BatchMethod.from_json({
        "processes": processes,
        "cores": cores,
        "core_sharing": f"{len(ranks)} processes (1 coordinator, "
                        f"{sum(r.section.role == 'server' for r in ranks)} parameter server(s), {len(workers)} "
                        f"workers) on {cores} cores, not pinned (the OS schedules them); each with the threads its "
                        f"rank section states ({coordinator.section.threads}); the coordinator and servers block in "
                        "gloo receives between messages, so the workers have the cores most of the time (each "
                        "process's CPU seconds over the timed window say how much each used)",
        "units_per_worker": taken, "units_stolen_per_worker": stolen,
        "worker_ms_per_unit": per_unit,
        "evaluations_per_iteration": statistics.mean(s["evaluations"] for s in steps) if steps else None,
        "iterations": len(steps),
        "loss_last": steps[-1].get("loss") if steps else None,
    })
