"""Model and pipeline parallelism (bench/adapters/torch/pipeline.py, bench/runs/distributed/pipeline.py,
bench/ranks/stages.py): the cut, the bubble model and the expected timelines; a 2-stage pipeline of a model without
BatchNorm matches the single-process step (GPipe and 1F1B); and in the full tier real runs: the idle share falls as
m grows, a killed stage ends the run with an error and no orphan, a hung stage is ended by the hard timeout."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

from bench.config import make_config
from bench.errors import ConfigError
from bench.ranks.stages import balanced_cut, bubble_formula, given_cut, stage_summary
from bench.results.record import validate_record
from bench.runs.distributed import pipeline
from bench.runs.single import execute
from bench.stats.judge import Judge
from tests.distributed.test_distributed import _our_processes, _wait_for_ranks

MLP = dict(framework="torch", model="digits_mlp", mode="training", image_size=8, batch_size=16, workers=2)


def test_balanced_cut_makes_the_costliest_stage_as_cheap_as_it_can_be():
    cut = balanced_cut([1, 1, 1, 5, 1, 1], 2)
    assert cut.starts == (0, 3) and cut.bounds() == [(0, 3), (3, 6)]  # 3 | 7 beats 8 | 2 and 2 | 8
    assert balanced_cut([4, 1, 1, 1, 1], 2).starts == (0, 1)
    assert balanced_cut([1, 2, 3, 4, 5, 6, 7, 8, 9], 3).bounds() == [(0, 5), (5, 7), (7, 9)]  # 15 | 13 | 17
    with pytest.raises(ValueError):
        balanced_cut([1], 2)


def test_a_given_cut_is_checked():
    assert given_cut("2", 4, 2).starts == (0, 2)
    for bad in ("0", "4", "2,2", "3,1"):
        with pytest.raises(ValueError):
            given_cut(bad, 4, 3 if "," in bad else 2)


def test_pipeline_settings_are_validated():
    assert make_config(**MLP, strategy="gpipe", micro_batches=4).global_batch == 16  # every stage sees the batch
    with pytest.raises(ConfigError, match="micro_batches"):
        make_config(**MLP, strategy="gpipe", micro_batches=5)
    with pytest.raises(ConfigError, match="model_parallel"):
        make_config(**MLP, strategy="model_parallel", micro_batches=2)
    with pytest.raises(ConfigError, match="pipeline strategy"):
        make_config(**MLP, strategy="allreduce", micro_batches=2)


def test_the_cut_balanced_by_measured_time():
    """pipeline_cut "time": the units' measured times decide the cut (not their FLOPs), the rule says so; the timing
    pass leaves weights, gradients and BatchNorm's running statistics as they were."""
    import torch

    from bench.adapters.torch.pipeline import choose_cut, unit_times

    config = make_config(**MLP, strategy="gpipe", micro_batches=4, pipeline_cut="time")
    cut = choose_cut(config, flops=[9.0, 1.0, 1.0, 1.0], unit_s=[1.0, 1.0, 1.0, 3.0])
    assert cut.starts == (0, 3) and "measured time" in cut.rule and "4 images" in cut.rule
    assert choose_cut(make_config(**MLP, strategy="gpipe", micro_batches=4), [9.0, 1.0, 1.0, 1.0]).starts == (0, 1)
    with pytest.raises(ConfigError, match="pipeline_cut"):
        make_config(**MLP, strategy="gpipe", pipeline_cut="fast")
    units = [torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)]
    before = [{k: v.clone() for k, v in u.state_dict().items()} for u in units]
    times = unit_times(torch, units, torch.randn(16, 4))
    assert len(times) == 4 and all(t > 0 for t in times)
    for u, state in zip(units, before):
        assert all(torch.equal(v, u.state_dict()[k]) for k, v in state.items())
        assert all(p.grad is None for p in u.parameters())


@pytest.mark.parametrize("strategy", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", [(2, 1), (2, 4), (3, 8), (4, 2)])
def test_the_expected_timeline_has_the_formula_bubble(strategy, p, m):
    """Equal stages, no transfer: each stage idles (p-1)/(m+p-1) of the span, for GPipe and 1F1B alike."""
    lines = pipeline.expected_timeline(strategy, [1.0] * p, [2.0] * p, m)
    span = max(end for line in lines for *_, end in line)
    for line in lines:
        assert sorted(i for k, i, *_ in line if k == "forward") == list(range(m))
        busy = sum(b - a for *_, a, b in line)
        assert 1 - busy / span == pytest.approx(bubble_formula(p, m))


def test_1f1b_holds_at_most_p_micro_batches_gpipe_all_of_them():
    def held(order):
        return pipeline_in_flight([("forward" if k == "F" else "backward", i, 0, 0) for k, i in order])

    from bench.adapters.torch.pipeline import in_flight_max as pipeline_in_flight
    for s, order in enumerate(pipeline.schedule_order("1f1b", 4, 8)):
        assert held(order) == 4 - s
    assert all(held(order) == 8 for order in pipeline.schedule_order("gpipe", 4, 8))


def test_stage_summary_splits_the_step():
    actions = [("forward", 0, 0.0, 1.0), ("wait", 0, 1.0, 3.0), ("backward", 0, 3.0, 5.0), ("update", 0, 5.0, 6.0)]
    s = stage_summary([(k, a, b) for k, _, a, b in actions], 0.0, 6.0)
    assert s == {"compute_s": 3.0, "wait_s": 2.0, "update_s": 1.0, "idle_s": 2.0, "bubble_share": pytest.approx(0.4)}


def test_the_prediction_adds_the_link_to_the_slowest_stage():
    from bench.results.link_model import Link

    config = make_config(**MLP, strategy="gpipe", micro_batches=4)
    pred = pipeline.predict(config, [0.01, 0.02], 0.003, [1000, 10], Link(1e-4, 1e6))
    assert pred["compute_step_s"] == pytest.approx(5 * 0.02 + 0.003)
    assert pred["transfer_s"] == pytest.approx(2 * (1e-4 + 1000 / 1e6))  # one boundary, forward and back
    assert pred["bubble"] == pytest.approx(0.2)
    assert pipeline.predict(config, [0.01, 0.02], 0.0, [1000, 10], None)["step_s"] is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stage_steps(rank: int, port: int, runs, out) -> None:
    """One pipeline step of rank `rank` for each (strategy, m): its loss (the last stage's rank) and its stages'
    weights after it, {stage: weights}."""
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", LOCAL_RANK=str(rank))
    from bench.adapters import ADAPTERS
    from bench.adapters.torch.pipeline import PipelineRanks

    for k, (strategy, m) in enumerate(runs):
        os.environ["MASTER_PORT"] = str(port + k)
        config = make_config(**MLP, strategy=strategy, micro_batches=m, threads=1)
        group = PipelineRanks(ADAPTERS.get("torch"), config, {"timeout_s": 60})
        result = group.step()
        out.put((strategy, rank, result.get("loss"),
                 {s: [p.detach().numpy().copy() for p in st.submod.parameters()] for s, st in zip(group.mine,
                                                                                                   group.stages)}))
        group.dist.destroy_process_group()


def _match_the_single_process_step(runs) -> None:
    """Each (strategy, m) of `runs` over 2 ranks gives the single process's loss and updated weights."""
    import numpy as np
    import torch.multiprocessing as mp

    from bench.adapters import ADAPTERS
    from bench.adapters.torch.pipeline import model_units

    single = ADAPTERS.get("torch").prepare(make_config(**{**MLP, "workers": 1}, threads=1).for_rank(0))
    loss = float(single._forward(single._input()).detach())
    single.step()
    reference = [p.detach().numpy() for u in model_units(single.module) for p in u.parameters()]
    ctx, port = mp.get_context("spawn"), _free_port()
    queue = ctx.Queue()
    procs = [ctx.Process(target=_stage_steps, args=(r, port, runs, queue)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        got = {(s, r): (loss_r, w) for s, r, loss_r, w in (queue.get(timeout=180) for _ in range(2 * len(runs)))}
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    for strategy, _ in runs:
        assert [v[0] for k, v in got.items() if k[0] == strategy and v[0] is not None] == [
            pytest.approx(loss, rel=1e-5)]
        stages = {**got[strategy, 0][1], **got[strategy, 1][1]}
        weights = [w for s in sorted(stages) for w in stages[s]]
        assert len(weights) == len(reference)
        for a, b in zip(weights, reference):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.full
def test_gpipe_and_1f1b_match_the_single_process_step():
    """A 2-stage pipeline of an MLP (no BatchNorm, whose statistics micro-batches change): the same loss and updated
    weights as one process training the whole model on the same batch."""
    _match_the_single_process_step([("gpipe", 4), ("1f1b", 4), ("model_parallel", 1)])


@pytest.mark.full
@pytest.mark.parametrize("strategy", ["interleaved_1f1b", "interleaved_zb", "zbv"])
def test_the_interleaved_and_zero_bubble_schedules_match_the_single_process_step(strategy):
    """The same with 2 stages per rank, for a schedule whose smoke test passes here (one that hangs over gloo is
    skipped with the smoke test's reason, never waited on); the smoke test is itself this comparison on an MLP with
    weights in each of its 4 stages. The digits MLP's 4 units make 4 stages whose first (Flatten) has no weights:
    interleaved 1F1B matches the single process; the zero-bubble schedules' split backward left the next stage's
    weights unchanged there (torch 2.14.1), so such a cut is refused with that reason."""
    from bench.adapters.torch import pipeline_smoke
    from bench.adapters.torch.pipeline import SCHEDULES, SPLIT_BACKWARD

    smoke = pipeline_smoke.run(SCHEDULES[strategy])
    if not smoke["passed"]:
        pytest.skip(f"{SCHEDULES[strategy]}: {smoke['reason']}")
    if SCHEDULES[strategy] in SPLIT_BACKWARD:
        from bench.adapters.torch.pipeline import choose_cut, split_backward_refusal, unit_flops

        config = make_config(**MLP, strategy=strategy, micro_batches=4)
        cut = choose_cut(config, unit_flops(config.model, config.image_size))
        assert cut.starts == (0, 1, 2, 3)
        assert "has no parameters" in split_backward_refusal(config, cut, [0, 12352, 0, 650], "2.14.1")
        assert split_backward_refusal(config, cut, [1, 12352, 0, 650], "2.14.1") is None
        return
    _match_the_single_process_step([(strategy, 4)])


# ---- real runs through the launcher (full tier) ----

RESNETISH = dict(framework="torch", model="tiny_cnn", mode="training", image_size=64, batch_size=64, workers=2,
                 warmup=1, iterations=4)


@pytest.mark.full
def test_the_measured_idle_share_falls_as_m_grows(tmp_path):
    # the stages overlap only where two cores are free for them: on a machine already loaded beyond its cores every
    # m serialises them, and the test would measure the load, not the schedule
    if os.getloadavg()[0] > (os.cpu_count() or 1) - 1:
        pytest.skip(f"needs two free cores for the stages (load average {os.getloadavg()[0]:.1f})")
    records = {m: execute(make_config(**RESNETISH, strategy="gpipe", micro_batches=m), tmp_path) for m in (1, 4)}
    for record in records.values():
        assert record["status"] == "ok", record["reason"]
        validate_record(record)
        section = record["distributed"]["pipeline"]
        assert len(section["stages"]) == 2 and section["stage_params"] and section["cut_rule"]
        assert not [f for f in record["flags"] if f["name"] == "weights_unchanged"]
    bubbles = {m: r["distributed"]["pipeline"]["measured_bubble"] for m, r in records.items()}
    assert bubbles[4] < bubbles[1]  # at m = 1 one stage works at a time; at 4 both do (two free cores)


def _signal_a_stage(config, tmp_path, stage: int, sig: int) -> dict:
    """Run `config` (long) and send `sig` to stage `stage`'s process mid-run; the record once the launcher returns, and
    no process of the run left behind."""
    out = {}
    runner = threading.Thread(target=lambda: out.update(record=execute(config, tmp_path)))
    runner.start()
    victim = _wait_for_ranks(2)[stage]
    time.sleep(3)
    os.kill(victim.pid, sig)
    runner.join(timeout=120)
    assert not runner.is_alive(), "the launcher did not stop"
    record = out["record"]
    validate_record(record)
    time.sleep(1)
    assert not _our_processes(), "orphaned processes"
    return record


@pytest.mark.full
def test_a_killed_stage_ends_the_run_with_an_error_and_no_orphan(tmp_path):
    config = make_config(**{**RESNETISH, "iterations": 100_000}, strategy="1f1b", micro_batches=4)
    record = _signal_a_stage(config, tmp_path, 1, signal.SIGKILL)
    assert record["status"] == "error" and "distributed run failed" in record["reason"]
    assert "did not finish within" not in record["reason"]  # ended by the death, not by the hard timeout


@pytest.mark.full
def test_a_hung_stage_is_ended_by_the_hard_timeout(tmp_path, monkeypatch):
    """A stage stopped (SIGSTOP) mid-run: its peer blocks in a receive for ever; the hard timeout ends the run as
    an error record, every process stopped."""
    monkeypatch.setattr(pipeline, "HARD_TIMEOUT_S", 40.0)
    config = make_config(**{**RESNETISH, "iterations": 100_000}, strategy="gpipe", micro_batches=2)
    record = _signal_a_stage(config, tmp_path, 0, signal.SIGSTOP)
    assert record["status"] == "error" and "did not finish within 40 s" in record["reason"]


def _pipeline_record(strategy: str, m: int, step_ms: float, repeat: int) -> dict:
    """A synthetic pipeline record (ResNet-18, 2 stages, global batch 32) with the section a run writes."""
    from tests.synthetic import config_key_of, dist_record

    rec = dist_record(strategy, 2, step_ms, repeat=repeat, worker_batch=32)
    rec["config"]["micro_batches"] = m
    rec["config_key"] = config_key_of(rec["config"])
    rec["summary"]["images_per_sec_median"] = 32 / (rec["summary"]["latency_ms_median"] / 1e3)
    line = [("forward", 0, 0.0, 0.01), ("wait", None, 0.01, 0.02), ("backward", 0, 0.02, 0.04)]
    rec["distributed"].update(global_batch=32, pipeline={
        "micro_batches": m, "measured_bubble": 0.3, "measured_step_s": step_ms / 1e3,
        "predicted": {"bubble": bubble_formula(2, m), "step_s": step_ms / 1e3 * 1.1, "compute_step_s": 0.1},
        "cut_rule": "balanced", "cut_starts": [0, 8], "stage_params": [1, 2],
        "stages": [{"micro_batches_held_max": m, "activations_held_peak_bytes": m << 20, "compute_ms": c,
                    "bubble_share": idle} for c, idle in ((70.0, 0.7), (250.0, 0.1))],
        "timeline": [line, line], "expected_timeline": [line, line]})
    return rec


def test_the_parallelism_table_compares_strategies_at_the_same_global_batch(tmp_path):
    from bench.report import parallelism as report
    from bench.report.context import load_scaling
    from bench.results.record import Record
    from tests.synthetic import dist_record

    records = [dist_record("independent", 1, 100.0, repeat=r) for r in range(3)]
    records += [dist_record("allreduce", 2, 120.0, repeat=r) for r in range(3)]
    records += [_pipeline_record("gpipe", 4, 300.0, r) for r in range(3)]
    scaling = load_scaling([Record.from_json(r) for r in records], tmp_path, Judge())
    t = scaling.parallelism
    assert list(t["strategy"]) == ["independent", "allreduce", "gpipe"]
    gpipe = t.iloc[2]
    assert gpipe["verdict_vs_dp"] and gpipe["bubble_formula"] == pytest.approx(0.2)
    assert gpipe["step_predicted_ms"] == pytest.approx(330.0, rel=0.05)
    assert gpipe["efficiency"] == pytest.approx((32 / 0.3) / (2 * 16 / 0.1), rel=0.05)
    shown = report.for_display(t)
    assert "+10%" in shown.iloc[2]["step ms measured / predicted"]
    assert shown.iloc[2]["activations held (MB)"] == "4"
    assert len(report.timelines(t)) == 1 and report.findings(t)
    # the measured bubble beside the formula's, and the stages' imbalance in time that explains the gap
    said = " ".join(report.findings(t))
    assert "GPipe at m = 4: measured 30% against 20% (+10 percentage points)" in said
    assert "stage 0 computed 70 ms and idled 163 ms (70%)" in said and "stage 1 computed 250 ms" in said


def _said_ms(text: str) -> list[tuple[float, ...]]:
    """Per stage of a bubble finding: (compute, idle, rest, step) in ms as printed."""
    import re

    step = float(re.search(r"of its (\d+) ms step", text).group(1))
    return [(float(c), float(i), float(r), step) for c, i, r in
            re.findall(r"computed (\d+) ms and idled (\d+) ms \(\d+%\), rest (\d+) ms", text)]


def test_the_bubble_finding_adds_up_to_the_tables_step_and_is_said_once(tmp_path):
    """The bubble sentence's numbers are the table's: per stage compute + idle + rest = the step the table shows
    (last session's said 'computed 60, 199 ms per step and stood idle 73%, 7% of it' beside a 223 ms step: 199 ms is
    11% idle of that), the explanation is said once for every pipeline config, the percentage points are points,
    the 'vs data parallel' cell is one of the four verdicts with its side, and the 'not measured here' line lists
    only what was not measured."""
    from bench.report import parallelism as report
    from bench.report.context import load_scaling
    from bench.results.record import Record
    from tests.synthetic import dist_record

    records = [dist_record("independent", 1, 100.0, repeat=r) for r in range(3)]
    records += [dist_record("allreduce", 2, 120.0, repeat=r) for r in range(3)]
    records += [_pipeline_record(s, 4, step, r) for s, step in (("gpipe", 300.0), ("1f1b", 280.0)) for r in range(3)]
    t = load_scaling([Record.from_json(r) for r in records], tmp_path, Judge()).parallelism
    shown = report.for_display(t).set_index("strategy")
    found = report.findings(t)
    bubbles = [f for f in found if "percentage points" in f]
    assert len(bubbles) == 2 and all("% points" not in f for f in found)
    for line in bubbles:
        name = line.split(" at m = ")[0]
        table_step = float(shown.loc[name, "step ms measured / predicted"].split(" / ")[0])
        stages = _said_ms(line)
        assert len(stages) == 2 and stages[0][3] == table_step
        assert all(abs(c + i + r - step) <= 1.5 for c, i, r, step in stages)  # rounding to whole ms
    explained = [f for f in found if "assumes equal stages" in f]
    assert len(explained) == 1 and "GPipe at m = 4, 1F1B at m = 4" in explained[0]
    cell = shown.loc["GPipe", "vs data parallel (strategy / data parallel)"]
    assert cell.split(":")[0].split(" (")[0] in ("winner", "small difference", "equivalent", "undecided")
    assert "slower" not in cell
    assert cell.startswith("winner: data parallel faster (0.")  # 300 ms against 120 ms for the same 32 images
    here = report.coverage_text(t)
    assert "GPipe at m = 4 and 1F1B at m = 4" in here and "model parallel (m = 1)" in here
    assert "GPipe at m = 2 and 8" in here and "at m = 4;" not in here.split("Not measured here")[1]


def test_the_record_section_comes_from_the_stages_timelines():
    """pipeline.section from two stages' per-step results as the ranks send them (no process started)."""
    from bench.results.record import Rank
    from bench.runs.distributed.rank_loop import RankResult

    config = make_config(**MLP, strategy="1f1b", micro_batches=2)
    setup = {"pipeline": {"schedule": "Schedule1F1B", "cut_rule": "balanced", "cut_starts": [0, 2],
                          "stage_params": [10, 20]}}

    def stage(rank: int, compute: float, held: int) -> RankResult:
        step = {"step_s": 1.0, "forward_s": compute / 3, "backward_s": 2 * compute / 3, "update_s": 0.1,
                "stage_compute_s": compute, "stage_wait_s": 0.2, "stage_idle_s": 0.9 - compute,
                "stage_bubble_share": 1 - compute / 0.9, "activation_bytes": 1000, "sent_bytes": 64,
                "in_flight_max": held, "timeline": [["forward", 0, 0.0, 0.1]]}
        return RankResult(Rank(rank=rank, role=f"stage {rank}", node=0, samples=48, phases_median_ms=None,
                               peak_rss_bytes=1 << 30), [step] * 3, [1.0],
                          "h", setup, 10, None, "gloo")

    section = pipeline.section(config, [stage(1, 0.6, 1), stage(0, 0.3, 2)], None)
    assert [s["stage"] for s in section["stages"]] == [0, 1]
    assert [s["activations_held_peak_bytes"] for s in section["stages"]] == [2000, 1000]
    assert section["measured_bubble"] == pytest.approx(1 - 0.45 / 0.9)  # the stages' mean idle share
    assert section["predicted"]["compute_step_s"] == pytest.approx(3 * 0.3 + 0.1)  # (m+p-1) x 0.6 / m + update
    assert section["predicted"]["step_s"] is None  # no link measured
    assert section["measured_step_s"] == 1.0 and section["schedule"] == "Schedule1F1B"
    assert len(section["expected_timeline"]) == 2 and section["timeline"][0] == [["forward", 0, 0.0, 0.1]]


def test_the_timing_pass_runs_through_units_that_start_in_place():
    # ResNet's ReLU(inplace=True) is a unit of its own: timed on an input that needs grad, it must not write into a leaf
    import torch

    from bench.adapters.torch.pipeline import build_torch_model, model_units, unit_times

    units = model_units(build_torch_model("resnet18"))
    before = [p.detach().clone() for u in units for p in u.parameters()]
    times = unit_times(torch, units, torch.randn(2, 3, 32, 32))
    assert len(times) == len(units) and all(t > 0 for t in times)
    assert all(torch.equal(a, p) for a, p in zip(before, (p for u in units for p in u.parameters())))


@pytest.mark.parametrize("single_iterations", [20, 30])
def test_the_data_parallel_baseline_is_the_config_measured_in_the_most_processes(tmp_path, single_iterations):
    """Two data-parallel configs at the pipeline's global batch (the default profile's and PROFILE=parallelism's):
    the one measured in three processes is the baseline, not the one with a single process (which gave every
    pipeline row no interval, commit 44e7447), whichever of the two the scaling table lists first."""
    from bench.report.context import load_scaling
    from bench.results.record import Record
    from tests.synthetic import config_key_of, dist_record

    lone = dist_record("allreduce", 2, 125.0, repeat=0)
    lone["config"]["iterations"] = single_iterations
    lone["config_key"] = config_key_of(lone["config"])
    records = [lone] + [dist_record("allreduce", 2, 120.0, repeat=r) for r in range(3)]
    records += [_pipeline_record("gpipe", 4, 300.0, r) for r in range(3)]
    t = load_scaling([Record.from_json(r) for r in records], tmp_path, Judge()).parallelism
    dp = t[t["strategy"] == "allreduce"]
    assert sorted(dp["processes"]) == [1, 3] and dp.iloc[0]["processes"] == 3
    gpipe = t[t["strategy"] == "gpipe"].iloc[0]
    assert gpipe["verdict_vs_dp"].startswith("winner: data parallel faster")
    assert "no interval" not in str(gpipe["ratio_vs_dp"])
    assert gpipe["ratio_vs_dp"].startswith("0.4")  # 32 images in 300 ms against 32 in 120 ms


def test_the_interleaved_schedules_need_micro_batches_in_rounds_of_the_workers():
    assert make_config(**MLP, strategy="zbv", micro_batches=4).global_batch == 16
    with pytest.raises(ConfigError, match="multiple of workers"):
        make_config(**MLP, strategy="interleaved_1f1b", micro_batches=1)


@pytest.mark.parametrize("p,m", [(2, 4), (2, 8), (4, 8)])
def test_the_expected_timeline_follows_torchs_own_order_for_two_stages_per_rank(p, m):
    """From get_schedule_ops: every rank runs its 2 stages' m forwards each; equal stages leave interleaved 1F1B
    idle (p-1)/(2m+p-1) of the span, below 1F1B's (p-1)/(m+p-1); the zero-bubble schedules, which fill the drain
    with weight gradients, less again."""
    from bench.adapters.torch.pipeline import SCHEDULES, schedule_ops

    shares = {}
    for strategy in ("interleaved_1f1b", "interleaved_zb", "zbv"):
        ops = schedule_ops(SCHEDULES[strategy], p, m, 2)
        lines = pipeline.expected_timeline(strategy, [1.0] * p, [2.0] * p, m, ops)
        assert all(sum(k == "forward" for k, *_ in line) == 2 * m for line in lines)
        shares[strategy] = pipeline.idle_share(lines)
    assert shares["interleaved_1f1b"] == pytest.approx(bubble_formula(p, m, 2)) and bubble_formula(p, m, 2) < \
        bubble_formula(p, m)
    assert shares["interleaved_zb"] < shares["interleaved_1f1b"] and shares["zbv"] < shares["interleaved_1f1b"]
    assert pipeline.idle_share(pipeline.expected_timeline("1f1b", [1.0] * p, [2.0] * p, m)) == pytest.approx(
        bubble_formula(p, m))


def test_a_schedule_that_failed_its_smoke_test_is_refused_before_any_process_starts(tmp_path, monkeypatch):
    from bench.adapters import ADAPTERS

    hung = {"passed": False, "reason": "hung: the step unfinished 30 s after both ranks began it", "version": "torch x",
            "when": "then", "conclusive": True}
    monkeypatch.setattr(type(ADAPTERS.get("torch").distributed), "pipeline_smoke", lambda self, config, cache: hung)
    monkeypatch.setattr(pipeline, "section", lambda *a: pytest.fail("a run started"))
    record = execute(make_config(**MLP, strategy="zbv", micro_batches=4), tmp_path)
    assert record["status"] == "skipped"
    assert "zbv refused on this cpu: its smoke test failed with torch x" in record["reason"]
    assert "hung: the step unfinished" in record["reason"]


def test_the_smoke_test_is_cached_per_torch_version_unless_inconclusive(tmp_path, monkeypatch):
    from bench.adapters.torch import pipeline_smoke

    calls = []

    def fake(schedule):
        calls.append(schedule)
        return {"passed": schedule == "A", "reason": "" if schedule == "A" else "hung", "seconds": 1.0,
                "conclusive": schedule != "C", "check": "", "when": "now"}

    monkeypatch.setattr(pipeline_smoke, "run", fake)
    for _ in range(2):
        assert pipeline_smoke.cached("A", "torch 1", tmp_path)["passed"]
        assert not pipeline_smoke.cached("B", "torch 1", tmp_path)["passed"]
        assert not pipeline_smoke.cached("C", "torch 1", tmp_path)["passed"]  # a start-up too slow: asked again
    assert calls == ["A", "B", "C", "C"]
    pipeline_smoke.cached("A", "torch 2", tmp_path)  # another torch: its own test
    assert calls[-1] == "A" and sorted(json.loads((tmp_path / pipeline_smoke.SMOKE_FILE).read_text())) == [
        "torch 1", "torch 2"]


@pytest.mark.full
def test_a_schedule_that_hangs_its_smoke_test_is_ended_with_the_reason(monkeypatch):
    """A rank that never finishes its step (the smoke test's ranks replaced by one that sleeps in it) is killed at
    the step timeout; the result says where each rank was."""
    from bench.adapters.torch import pipeline_smoke

    monkeypatch.setattr(pipeline_smoke, "MODULE", "tests.hanging_smoke_rank")
    t0 = time.perf_counter()
    result = pipeline_smoke.run("ScheduleInterleaved1F1B", timeout_s=120, step_timeout_s=3)
    assert time.perf_counter() - t0 < 60
    assert not result["passed"] and result["conclusive"]
    assert result["reason"].startswith("hung: the step unfinished 3 s after both ranks began it")
    assert "rank 0 in the schedule's step" in result["reason"] and "rank 1 in the schedule's step" in result["reason"]


def _of_profile(rec: dict, profile: str, iterations: int) -> dict:
    """`rec` as the sweep profile `profile` measures it (its own measurement settings, so its own config)."""
    from tests.synthetic import config_key_of

    rec["config"]["iterations"] = iterations
    rec["config_key"] = config_key_of(rec["config"])
    rec["sweep"] = {"id": f"20260101T000000-{profile[:6]:0<6}", "profile": profile}
    return rec


def test_each_profile_is_judged_against_its_own_one_worker_run(tmp_path):
    """The default and the parallelism profile both run a one-worker baseline, with different measurement settings
    (last session's: 248.7 and 275.9 img/s): every efficiency and every pipeline row is set against its own
    profile's, and each row names its profile once a report holds two."""
    from bench.report import parallelism as report
    from bench.report.context import load_scaling
    from bench.results.record import Record
    from tests.synthetic import dist_record

    records = []
    for profile, iterations, one_ms in (("quick", 12, 100.0), ("parallelism", 20, 80.0)):
        records += [_of_profile(dist_record("independent", 1, one_ms, repeat=r), profile, iterations)
                    for r in range(3)]
        records += [_of_profile(dist_record("allreduce", 2, 120.0, repeat=r), profile, iterations)
                    for r in range(3)]
        records += [_of_profile(_pipeline_record("gpipe", 4, 300.0, r), profile, iterations) for r in range(3)]
    data = load_scaling([Record.from_json(r) for r in records], tmp_path, Judge())
    t = data.parallelism
    for profile, one_ms in (("quick", 100.0), ("parallelism", 80.0)):
        mine = t[t["profile"] == profile].set_index("strategy")
        assert mine.loc["gpipe", "efficiency"] == pytest.approx((32 / 0.3) / (2 * 16 / (one_ms / 1e3)), rel=0.05)
        assert mine.loc["gpipe", "label"] == f"GPipe [{profile} profile]"
        dp = data.table[(data.table["strategy"] == "allreduce") & (data.table["profile"] == profile)].iloc[0]
        assert dp["efficiency"] == pytest.approx((32 / 0.12) / (2 * 16 / (one_ms / 1e3)), rel=0.05)
    assert "profile" in report.for_display(t).columns
