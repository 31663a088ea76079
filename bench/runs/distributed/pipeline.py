"""Pipeline runs (model parallel, GPipe, 1F1B, and the interleaved and zero-bubble schedules with v stages per
rank): the record's `pipeline` section from the stages' timelines, the
model's prediction, the schedule's expected timeline, and the hard timeout that ends a run that hangs.

The model (GPipe's paper, and 1F1B's, which keeps the same bubble): with p stages and m micro-batches a stage is
idle a share (p-1)/(m+p-1) of the schedule; one step takes (m+p-1) x the slowest stage's time for one micro-batch
(forward + backward), plus the activations' and gradients' transfer across the p-1 boundaries while the pipeline
fills and drains, 2(p-1) x (alpha + M/B) over the fitted point-to-point link (the steady state's transfers are
non-blocking sends behind the next micro-batch's compute), plus the slowest stage's update.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from ...config import RunConfig
from ...ranks.stages import BACKWARD_WEIGHT, PIPELINE_CHUNKS, bubble_formula
from ...results import link_model as model
from ...results.links import link_key, p2p_link
from ...results.record import Pipeline
from ...strategies import strategy
from .rank_loop import RankResult

# A pipeline run that has not finished in this long is stopped and recorded as an error (gloo's point-to-point
# sends have hung for interleaved schedules upstream): never a hang. Generous beside a small run's seconds.
HARD_TIMEOUT_S = 300.0
# The expected timeline's unit costs when nothing was measured: a backward costs about two forwards.
BACKWARD_PER_FORWARD = 2.0


def is_pipeline(config: RunConfig) -> bool:
    return config.strategy_of.pipeline


def hard_timeout_s(config: RunConfig, default: float) -> float:
    """The launcher's limit for `config`'s run: the pipeline's hard timeout, or `default`."""
    return HARD_TIMEOUT_S if is_pipeline(config) else default


def schedule_order(name: str, stages: int, micro_batches: int) -> list[list[tuple[str, int]]]:
    """Each stage's actions in order, ("F"|"B", micro-batch), as the schedule runs them: GPipe every forward then
    every backward; 1F1B p-1-s forwards to fill, then one forward one backward, then the remaining backwards.
    (torch 2.14.1's `_schedule_visualizer.get_schedule_ops` lists the last 1F1B stage's forwards as 1..m, so the
    order is written here from the schedules' definitions.)"""
    out = []
    for s in range(stages):
        if not strategy(name).one_forward_one_backward:
            out.append([("F", i) for i in range(micro_batches)] + [("B", i) for i in range(micro_batches)])
            continue
        warm = min(stages - 1 - s, micro_batches)
        order = [("F", i) for i in range(warm)]
        f, b = warm, 0
        while b < micro_batches:
            if f < micro_batches:
                order.append(("F", f))
                f += 1
            order.append(("B", b))
            b += 1
        out.append(order)
    return out


def expected_timeline(name: str, forward_s: list[float], backward_s: list[float], micro_batches: int,
                      ops: list[list] | None = None) -> list[list[tuple[str, int, float, float]]]:
    """Each stage's (kind, micro-batch, start, end) if the schedule ran with these per-rank micro-batch times and
    nothing else (no transfer, no jitter): a forward waits for the previous stage's forward of its micro-batch, a
    backward for the next stage's backward of it. `ops`: each rank's actions [kind, micro-batch, stage] in the order
    the schedule runs them (torch's visualiser, for the schedules with v stages per rank: a rank's time is shared by
    its v stages, and a zero-bubble schedule's backward by its input and weight halves); without them the GPipe or
    1F1B order of one stage per rank."""
    p = len(forward_s)
    if ops is None:
        ops = [[["forward" if k == "F" else "backward", i, s] for k, i in order]
               for s, order in enumerate(schedule_order(name, p, micro_batches))]
    n = 1 + max(stage for line in ops for *_, stage in line)
    v = n // p
    split = any(k == BACKWARD_WEIGHT for line in ops for k, *_ in line)
    cost = {"forward": [f / v for f in forward_s], "backward": [b / v / (2 if split else 1) for b in backward_s],
            BACKWARD_WEIGHT: [b / v / 2 for b in backward_s]}
    done: dict[tuple[str, int, int], float] = {}
    clocks, pos = [0.0] * p, [0] * p
    out: list[list] = [[] for _ in range(p)]
    while any(pos[r] < len(ops[r]) for r in range(p)):
        progressed = False
        for r in range(p):
            if pos[r] >= len(ops[r]):
                continue
            kind, i, s = ops[r][pos[r]]
            dep = {"forward": ("forward", i, s - 1) if s > 0 else None,
                   "backward": ("backward", i, s + 1) if s < n - 1 else ("forward", i, s),
                   BACKWARD_WEIGHT: ("backward", i, s)}[kind]
            if dep is None or dep in done:
                start = max(clocks[r], done.get(dep, 0.0))
                end = start + cost[kind][r]
                done[(kind, i, s)], clocks[r] = end, end
                out[r].append((kind, i, start, end))
                pos[r] += 1
                progressed = True
        if not progressed:
            raise ValueError(f"the {name} order deadlocks for {p} ranks and {micro_batches} micro-batches")
    return out


def idle_share(timeline: list[list[tuple[str, int, float, float]]]) -> float:
    """The ranks' mean share of the timeline's span in which they computed nothing."""
    span = max(end for line in timeline for *_, end in line)
    return statistics.mean(1 - sum(b - a for *_, a, b in line) / span for line in timeline)


def _median(ranks: list[RankResult], key: str) -> list[float]:
    return [statistics.median(s[key] for s in r.steps) if r.steps and key in r.steps[0] else 0.0 for r in ranks]


def predict(config: RunConfig, stage_mb_s: list[float], update_s: float, sent_bytes: list[int],
            link: model.Link | None, bubble: float | None = None) -> dict:
    """The model's step time and bubble for `config` from the stages' measured micro-batch times. `bubble`: the
    idle share where no closed form holds (the zero-bubble schedules: their expected timeline's), else the formula's.
    The step: m micro-batches of the slowest rank's work over the share of the span it works, (m+p-1) x its
    micro-batch time for GPipe and 1F1B, (m+(p-1)/v) x for v interleaved chunks."""
    p, m, v = config.workers, config.micro_batches, PIPELINE_CHUNKS.get(config.strategy, 1)
    formula = bubble is None
    bubble = bubble_formula(p, m, v) if formula else bubble
    compute = m * max(stage_mb_s) / (1 - bubble) + update_s
    transfer = 2 * sum(link.p2p_s(b) for b in sent_bytes[:-1]) if link else None
    return {"bubble": bubble, "bubble_source": "formula" if formula else "the expected timeline's idle share "
            "(torch's order; a backward's input and weight halves equal)", "chunks_per_rank": v,
            "compute_step_s": compute,
            "transfer_s": transfer, "step_s": compute + transfer if transfer is not None else None,
            "link": link.source if link else None,
            "form": "(m+p-1) x slowest stage's forward+backward per micro-batch + 2 x sum over boundaries of "
                    "(alpha + M/B) + slowest update; bubble (p-1)/(m+p-1)" if v == 1 else
                    f"m / (1 - bubble) x slowest rank's forward+backward per micro-batch (its v = {v} stages) + 2 x "
                    "sum over rank boundaries of (alpha + M/B) + slowest update; bubble (p-1)/(vm+p-1) or, zero-bubble "
                    "schedules, the expected timeline's"}


def section(config: RunConfig, ranks: list[RankResult], results_dir: Path | str | None) -> Pipeline:
    """The record's `pipeline` section: cut, per-stage times and memory, measured against predicted."""
    stages = sorted(ranks, key=lambda r: r.section.rank)
    setup = dict((stages[0].settings or {}).get("pipeline") or {})
    m, p = config.micro_batches, config.workers
    forward, backward = _median(stages, "forward_s"), _median(stages, "backward_s")
    compute = _median(stages, "stage_compute_s")  # forward, backward and (last stage) the loss
    mb_s = [c / m for c in compute]
    update = _median(stages, "update_s")
    sent = [int(_median([r], "sent_bytes")[0]) for r in stages]
    link = p2p_link(results_dir, link_key(config.workers, config.nodes, config.link_gbit, config.link_delay_ms,
                                          config.cluster)) if results_dir else None
    expected = expected_timeline(config.strategy, [x / m for x in forward], [x / m for x in backward], m,
                                 setup.get("schedule_ops"))
    zero_bubble = any(k == BACKWARD_WEIGHT for line in expected for k, *_ in line)
    prediction = predict(config, mb_s, max(update), sent, link, idle_share(expected) if zero_bubble else None)
    steps = [max(r.steps[i]["step_s"] for r in stages) for i in range(min(len(r.steps) for r in stages))]
    # the share of the stages' time the schedule leaves idle (at m = 1: (p-1)/p whatever the balance)
    measured_bubble = statistics.mean(_median(stages, "stage_bubble_share"))
    per_stage = []
    for r, f, b, c, u, s in zip(stages, forward, backward, compute, update, sent):
        per_stage.append({
            "stage": r.section.rank, "params": r.params, "forward_ms": f * 1e3, "backward_ms": b * 1e3,
            "compute_ms": c * 1e3, "wait_ms": _median([r], "stage_wait_s")[0] * 1e3,
            "idle_ms": _median([r], "stage_idle_s")[0] * 1e3, "update_ms": u * 1e3,
            "bubble_share": _median([r], "stage_bubble_share")[0],
            "activation_bytes_per_micro_batch": int(_median([r], "activation_bytes")[0]),
            "micro_batches_held_max": int(max(s_["in_flight_max"] for s_ in r.steps)) if r.steps else None,
            # what autograd kept for the backward, at most: the micro-batches held x the bytes one of them saves
            "activations_held_peak_bytes": int(max(s_["in_flight_max"] for s_ in r.steps)
                                               * _median([r], "activation_bytes")[0]) if r.steps else None,
            "sent_bytes_per_micro_batch": s, "peak_rss_bytes": r.section.peak_rss_bytes,
            "peak_memory_bytes": r.section.memory.peak_bytes if r.section.memory else None})
    middle = len(steps) // 2
    order = sorted(range(len(steps)), key=steps.__getitem__)
    median_step = order[middle] if steps else 0
    return Pipeline.from_json({**setup, "strategy": config.strategy, "micro_batches": m, "stages_count": p,
            "stages": per_stage, "measured_step_s": statistics.median(steps) if steps else None,
            "measured_bubble": measured_bubble, "predicted": prediction,
            "timeline": [r.steps[median_step].get("timeline") if r.steps else None for r in stages],
            "timeline_step": "the step of median duration",
            "expected_timeline": expected,
            "expected_bubble": idle_share(expected) if expected else None,
            "bubble_method": "per stage 1 - compute / (step - update), median over steps; mean over stages (every "
                             "stage's own in `stages`)"})
