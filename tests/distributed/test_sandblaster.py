"""Sandblaster L-BFGS (bench/ranks/workunits.py, bench/adapters/torch/sandblaster.py,
bench/runs/distributed/sandblaster.py): the work units' hand-out (every unit once, own shard first, a faster worker
takes more), the config's checks and the record's section; in the full tier, the real processes converge to the
loss single-process L-BFGS reaches on the same problem."""

from __future__ import annotations

import heapq
import os
import socket

import pytest

from bench.config import make_config
from bench.errors import ConfigError
from bench.ranks.workunits import WorkUnits, unit_bounds

SANDBLASTER = dict(framework="torch", model="digits_mlp", mode="training", image_size=8, batch_size=64, workers=2,
                   strategy="sandblaster")


def test_units_cover_the_training_set_once():
    assert unit_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    units = WorkUnits(1347, 64, 2)
    got = []
    while (b := units.take(len(got) % 2)) is not None:
        got.append(b)
    assert sorted(got) == unit_bounds(1347, 64)
    assert units.take(0) is None and units.take(1) is None and units.left == 0


def test_a_worker_takes_its_own_shard_first():
    units = WorkUnits(100, 10, 2)  # worker 0 owns units 0, 2, 4, ...; worker 1 units 1, 3, 5, ...
    assert [units.take(0) for _ in range(5)] == [(0, 10), (20, 30), (40, 50), (60, 70), (80, 90)]
    assert units.stolen == [0, 0]
    assert units.take(0) == (90, 100)  # its shard done: the far end of the other's
    assert units.stolen == [1, 0] and units.taken == [6, 0]


def _hand_out(seconds_per_unit: list[float], samples: int = 1347, unit: int = 32) -> WorkUnits:
    """Workers asking for their next unit as they finish one (an event simulation): a faster worker asks more often."""
    units = WorkUnits(samples, unit, len(seconds_per_unit))
    free = [(0.0, w) for w in range(len(seconds_per_unit))]
    while free:
        t, w = heapq.heappop(free)
        if units.take(w) is not None:
            heapq.heappush(free, (t + seconds_per_unit[w], w))
    return units


def test_a_faster_worker_takes_more_units():
    units = _hand_out([1.0, 3.0])
    assert sum(units.taken) == len(unit_bounds(1347, 32))
    assert units.taken[0] > 2 * units.taken[1]  # three times as fast: about three times the units
    assert units.stolen[0] > 0 and units.stolen[1] == 0
    even = _hand_out([1.0, 1.0])
    assert abs(even.taken[0] - even.taken[1]) <= 1 and even.stolen == [0, 0]


def test_sandblaster_settings_are_validated():
    config = make_config(**SANDBLASTER)
    assert config.strategy == "sandblaster"
    with pytest.raises(ConfigError, match="digits_mlp"):
        make_config(**{**SANDBLASTER, "model": "tiny_cnn", "image_size": 32})
    with pytest.raises(ConfigError, match="nodes 1"):
        make_config(**SANDBLASTER, nodes=2)


def test_the_launch_counts_the_coordinator_and_the_server():
    from bench.adapters.torch import launch, sandblaster

    assert sandblaster.processes(2) == 4  # as Downpour's run: 2 workers, a ps and a chief
    assert [sandblaster.role_of(r) for r in range(4)] == ["coordinator", "server", "worker", "worker"]
    assert sandblaster.shard_sizes(10, 3) == [4, 3, 3]
    tasks = launch.torchrun_tasks(make_config(**SANDBLASTER), "bench.runs.distributed.rank_main", {}, None)
    assert "--nproc-per-node=4" in tasks[0].argv


def test_the_certificate_takes_lbfgs_as_sandblasters_recipe():
    from bench.adapters.base import OPTIMIZER, SANDBLASTER_OPTIMIZER
    from bench.measurement.certificate import run_checks

    def recipe(config, optimizer):
        facts = {"optimizer": optimizer, "loss": "CrossEntropyLoss", "intra_op_threads": config.threads}
        return run_checks(config, facts, 1, None, (1.0, 2.0)).recipe_match

    assert recipe(make_config(**SANDBLASTER), SANDBLASTER_OPTIMIZER)
    assert not recipe(make_config(**SANDBLASTER), OPTIMIZER)
    assert not recipe(make_config(**{**SANDBLASTER, "strategy": "allreduce"}), SANDBLASTER_OPTIMIZER)


def test_the_record_section_says_who_ran_and_who_took_the_units():
    from bench.results.record import Rank
    from bench.runs.distributed import sandblaster
    from bench.runs.distributed.rank_loop import RankResult

    def result(rank, role, steps):
        section = Rank(rank=rank, role=role, node=0, samples=0, phases_median_ms=None, peak_rss_bytes=None,
                       pid=100 + rank, threads=1, steps=len(steps),
                       window={"start": 0.0, "end": 2.0, "cpu_s": 0.5 if role == "worker" else 0.1})
        return RankResult(section, steps, [], "h", {}, None, None, "gloo")

    coordinator = [{"step_s": 0.1, "forward_backward_s": 0.0, "evaluations": 2, "units_taken": [30, 14],
                    "units_stolen": [8, 0], "loss": 0.5}] * 3
    worker = [{"step_s": 0.1, "forward_backward_s": 0.03, "units": 30}]
    out = sandblaster.section([result(0, "coordinator", coordinator), result(1, "server", [{"step_s": 0.1}]),
                               result(2, "worker", worker), result(3, "worker", worker)])
    assert out["units_per_worker"] == [90, 42] and out["units_stolen_per_worker"] == [24, 0]
    assert out["evaluations_per_iteration"] == 2 and out["iterations"] == 3
    assert [p["role"] for p in out["processes"]] == ["coordinator", "server", "worker", "worker"]
    assert out["processes"][2]["cpu_share_of_one_core"] == pytest.approx(0.25)
    assert out["worker_ms_per_unit"] == [pytest.approx(1.0)] * 2 and "4 processes" in out["core_sharing"]


# ---- real processes (full tier) ----

ITERATIONS = 15


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sandblaster_rank(rank: int, port: int, out) -> None:
    """One process of a 4-process Sandblaster run (coordinator, server, 2 workers): ITERATIONS L-BFGS iterations;
    the coordinator puts its loss after each and the units each worker took."""
    os.environ.update(RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      LOCAL_RANK=str(rank), GLOO_SOCKET_IFNAME="lo")
    from bench.adapters import ADAPTERS
    from bench.adapters.torch.sandblaster import SandblasterRanks

    group = SandblasterRanks(ADAPTERS.get("torch"), make_config(**SANDBLASTER, threads=1), {"timeout_s": 120})
    losses = [group.step().get("loss") for _ in range(ITERATIONS)]
    before = group.checksums()[0]
    if rank == 0:
        out.put((losses, group.protocol.units_taken, before))
    group.dist.destroy_process_group()


@pytest.mark.full
def test_sandblaster_converges_to_the_single_process_lbfgs_loss():
    """The same model (same seed), data and L-BFGS settings in one process, the gradient over the whole training set
    at once: the loss after each iteration matches. Tolerance 1e-3 relative: the runs differ only in the order of
    the gradient's float32 sums (unit by unit in float64 against one batch), about 1e-7 relative per evaluation,
    which L-BFGS's curvature pairs amplify over the iterations; a different path (a wrong gradient, a lost or
    doubled unit, a stale parameter) moves the loss by far more: it falls by over 1e-2 per iteration here."""
    import torch
    import torch.multiprocessing as mp

    from bench.adapters import ADAPTERS
    from bench.adapters.torch.sandblaster import LBFGS
    from bench.ranks import digits

    config = make_config(**SANDBLASTER, threads=1)
    model = ADAPTERS.get("torch").distributed.prepare_rank(config.for_rank(0, "cpu")).module
    x, y = (torch.from_numpy(a) for a in digits.load(channels_last=False, seed=config.seed)["train"])
    opt = torch.optim.LBFGS(model.parameters(), **LBFGS)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    reference = [float(opt.step(closure)) for _ in range(ITERATIONS)]
    ctx, port = mp.get_context("spawn"), _free_port()
    queue = ctx.Queue()
    procs = [ctx.Process(target=_sandblaster_rank, args=(r, port, queue)) for r in range(4)]
    for p in procs:
        p.start()
    losses, taken, _ = queue.get(timeout=300)
    for p in procs:
        p.join(30)
    assert reference[-1] < 0.5 * reference[0]  # it trains
    assert losses == pytest.approx(reference, rel=1e-3)
    assert sum(taken) >= ITERATIONS * len(digits.load(False)["train"][1]) // 64  # every unit of every evaluation


def test_the_batch_method_table_reads_the_typed_section_of_a_record(tmp_path):
    from bench.report.context import load_scaling
    from bench.report.scaling_text import sandblaster_for_display
    from bench.results.record import BatchMethod, Record
    from bench.stats.judge import Judge
    from tests.synthetic import dist_record

    rec = dist_record("sandblaster", 2, 400.0, model="digits_mlp", image_size=8)
    rec["distributed"]["sandblaster"] = {
        "processes": [{"rank": 0, "role": "coordinator", "cpu_share_of_one_core": 0.1},
                      {"rank": 1, "role": "worker", "cpu_share_of_one_core": 0.9}],
        "cores": 2, "units_per_worker": [7, 5], "units_stolen_per_worker": [2, 0], "worker_ms_per_unit": [1.5, 2.25],
        "evaluations_per_iteration": 1.5, "iterations": 4}
    record = Record.from_json(rec)
    assert isinstance(record.distributed.sandblaster, BatchMethod) and record.to_json() == rec
    table = sandblaster_for_display(load_scaling([record], tmp_path, Judge()).processes)
    [row] = table.to_dict("records")
    assert row["processes on cores"] == "2 on 2"
    assert row["units per worker (taken from another's shard)"] == "7 (2), 5 (0)"
    assert row["CPU of one core (timed window)"] == "coordinator 10%, worker 90%"
    assert row["evaluations per iteration"] == 1.5
