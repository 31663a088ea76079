"""One record per distributed run, from the ranks' results: the global numbers use the slowest rank
per step; every rank keeps its own section (role, node, samples, phases, memory)."""

from __future__ import annotations

import statistics

from ...adapters.base import CertificateFacts
from ...host.devices import gpu_interconnect, is_gpu
from ...host.energy import total
from ...measurement.flags import flag
from ...results.record import Distributed, Flag, Memory, Phases, Rank, Samples
from ..fill import Measured
from .rank_loop import RankResult

AGREE_TOLERANCE = 1e-4  # relative difference of the ranks' weight checksums after training


def global_steps(config, ranks: list[RankResult]) -> list[float]:
    """Seconds per global step: the slowest rank's time for each step (the chief's chunks for ps_async)."""
    trainers = [r for r in ranks if r.steps]
    n = min(len(r.steps) for r in trainers)
    return [max(r.steps[i]["step_s"] for r in trainers) for i in range(n)]


def overlap_share(ranks: list[RankResult]) -> float | None:
    comm = sum(s.get("comm_s", 0.0) for r in ranks for s in r.steps)
    over = sum(s.get("overlap_s", 0.0) for r in ranks for s in r.steps)
    return over / comm if comm > 0 else None


def distributed_flags(config, ranks: list[Rank], fallback: str | None) -> list[Flag]:
    out = []
    if fallback:
        out.append(flag("no_emulated_link", f"asked for {config.nodes} emulated nodes, ran on loopback: {fallback}"))
    trainers = [r for r in ranks if r.checksum_after is not None]
    if any(r.checksum_after == r.checksum_before for r in trainers):
        out.append(flag("weights_unchanged", "a rank's weights did not change over the timed loop"))
    if config.strategy_of.synchronous and len(trainers) > 1:
        ref = trainers[0].checksum_after
        worst = max(abs(r.checksum_after - ref) / max(abs(ref), 1e-12) for r in trainers)
        if worst > AGREE_TOLERANCE:
            out.append(flag("ranks_disagree", f"synchronous ranks' weights differ after training "
                                              f"(relative {worst:.1e} > {AGREE_TOLERANCE:g})"))
    return out


def gpu_link(ranks: list[RankResult]) -> dict:
    """GPU runs: how many GPUs the ranks used and how they are connected (nothing for CPU runs): the report labels
    a GPU row with its GPUs' model, count, interconnect and precision."""
    used = {(r.host, r.section.device) for r in ranks if r.section.device and is_gpu(r.section.device)}
    if not used:
        return {}
    hosts = {h for h, _ in used}
    trainers = [r for r in ranks if r.section.device and is_gpu(r.section.device)]
    here = sorted(int(d.split(":")[1]) for h, d in used if h == trainers[0].host)  # the lead rank's machine
    if len(used) == 1 and len(trainers) > 1:
        interconnect = f"one GPU shared by {len(trainers)} ranks"
    else:
        interconnect = gpu_interconnect(here)
        if len(hosts) > 1:
            interconnect += f" within a machine, {len(hosts)} machines over their network"
    return {"gpus": len(used), "interconnect": interconnect}


def measured(config, ranks: list[RankResult], servers: list[dict], interference: dict) -> Measured:
    """What a finished distributed run measured, from its ranks: one global step is the slowest rank's."""
    steps = global_steps(config, ranks)
    warm = [r.warmup_s for r in ranks if r.warmup_s]
    sections = [r.section for r in ranks]
    phase_ranks = [s.phases_median_ms for s in sections if s.phases_median_ms]
    phases = None
    if phase_ranks:
        keys = [k for k in ("forward", "backward", "forward_backward", "update", "exposed_comm", "other")
                if k in phase_ranks[0]]
        phases = Phases(iterations=len(steps),
                        method="every timed step on every rank; per phase the median over ranks of "
                               "each rank's median (communication: the part not hidden behind compute)",
                        median_ms={k: statistics.median(p[k] for p in phase_ranks) for k in keys})
    peaks = [s.peak_rss_bytes for s in sections if s.peak_rss_bytes] + \
            [s["peak_rss_bytes"] for s in servers if s.get("peak_rss_bytes")]
    gpu_peaks = [s.memory.peak_bytes for s in sections if s.memory and s.memory.peak_bytes]
    if gpu_peaks:  # GPU ranks: the device memory, as a single GPU run records it (each rank's RSS stays in its section)
        memory = Memory(peak_bytes=max(gpu_peaks), total_peak_bytes=sum(gpu_peaks),
                        kind="largest and summed per-GPU peak over ranks ("
                             + next(s.memory.kind for s in sections if s.memory) + ")")
    else:
        memory = Memory(peak_bytes=max(peaks) if peaks else None, total_peak_bytes=sum(peaks) if peaks else None,
                        kind="largest and summed per-process peak RSS over ranks and servers")
    lead = ranks[0]  # rank 0, or the asynchronous chief: the certificate's facts are its
    return Measured(
        samples=Samples(warmup_s=[max(w[i] for w in warm) for i in range(min(map(len, warm)))] if warm else [],
                        timed_s=steps, warmup_stop="fixed count, the same on every rank",
                        timed_stop="fixed count, the same on every rank", timed_wall_s=sum(steps)),
        images_per_step=config.global_batch,
        # every reading is of its own GPU, or of a machine's CPU packages read by one rank: they add up
        energy=total([s.energy.to_json() for s in sections if s.energy], config.global_batch * len(steps)),
        memory=memory, interference=interference,
        settings={**(lead.settings or {}), "threads_per_worker": config.threads,
                  "stop_rule": "fixed warm-up and timed step counts on every rank, between barriers"},
        facts=CertificateFacts.of(lead.settings or {}), params=lead.params,
        weights=(lead.section.checksum_before, lead.section.checksum_after),
        placement=lead.input_placement, phases=phases)


def distributed_section(config, ranks: list[RankResult], servers: list[dict], link: dict, launch: str) -> Distributed:
    """The record's `distributed` section: strategy, workers, link, and every rank's own section."""
    return Distributed(
        strategy=config.strategy, workers=config.workers, nodes=config.nodes,
        scaling=config.scaling, worker_batch=config.worker_batch, global_batch=config.global_batch,
        launch=launch, backend=ranks[0].backend, link={**link, **gpu_link(ranks)},
        params=ranks[0].params, grad_bytes=ranks[0].grad_bytes,
        overlap_share=overlap_share(ranks), ranks=[r.section for r in ranks], servers=servers,
        accuracy=next((r.accuracy for r in ranks if r.accuracy), None),
        global_step=config.strategy_of.global_step,
    )
