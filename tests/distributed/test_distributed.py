"""Distributed data-parallel runs: real 2-worker runs with a tiny model (PyTorch DDP, TensorFlow
MultiWorkerMirroredStrategy, asynchronous ParameterServerStrategy), emulated nodes, a worker killed
mid-run, the alpha-beta fit, the scaling tables, and the record format's versions."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import psutil
import pytest

from bench.config import DISTRIBUTED_FIELDS, make_config
from bench.errors import ConfigError
from bench.ranks.timeline import step_phases, union_length
from bench.results import link_model as netmodel
from bench.results.record import validate_record
from bench.runs.distributed import topology
from bench.runs.single import execute

TINY = dict(model="tiny_cnn", mode="training", batch_size=4, image_size=16, warmup=1, iterations=4)
ROOT_ONLY = pytest.mark.skipif(topology.unavailable_reason() is not None,
                               reason=f"emulated nodes: {topology.unavailable_reason()}")


def _dist(framework: str, strategy: str, **kw):
    return make_config(framework=framework, strategy=strategy, workers=2, **{**TINY, **kw})


def _our_processes() -> list[psutil.Process]:
    """Processes started for distributed runs (ranks, torchrun agents, TF servers) still alive."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "bench.runs.distributed." in cmd or ("torch.distributed.run" in cmd and "bench.runs.distributed" in cmd):
            out.append(p)
    return out


def _check_ok(record: dict, ranks: int = 2) -> dict:
    assert record["status"] == "ok", record["reason"]
    validate_record(record)
    d = record["distributed"]
    assert len(d["ranks"]) == ranks  # ranks that report steps (async PS: the chief alone)
    assert record["summary"]["images_per_sec_median"] > 0
    assert not [f for f in record["flags"] if f["name"] in ("ranks_disagree", "weights_unchanged")]
    return d


@pytest.fixture(scope="module")
def ddp_record(tmp_path_factory) -> dict:
    """One tiny DDP run (small buckets), read by several tests: one set of processes."""
    return execute(_dist("torch", "allreduce", bucket_mb=0.01), tmp_path_factory.mktemp("ddp"))


@pytest.fixture(scope="module")
def mirrored_record(tmp_path_factory) -> dict:
    """One tiny MultiWorkerMirroredStrategy run, read by several tests."""
    return execute(_dist("tensorflow", "allreduce"), tmp_path_factory.mktemp("mirrored"))


@pytest.mark.full
def test_ddp_two_workers_give_a_record_with_per_rank_phases(ddp_record):
    record = ddp_record
    d = _check_ok(record)
    for rank in d["ranks"]:
        assert {"forward", "backward", "update", "exposed_comm", "comm", "overlap"} <= set(rank["phases_median_ms"])
        assert rank["samples"] == 4 * 4 and rank["buckets_per_step"] >= 2  # small buckets: several all-reduces
    assert 0.0 <= d["overlap_share"] <= 1.0
    # synchronous: both ranks end with the same weights; the global step is the slowest rank's
    assert d["ranks"][0]["checksum_after"] == pytest.approx(d["ranks"][1]["checksum_after"], rel=1e-6)
    assert record["summary"]["n"] == 4 and record["config"]["threads"] >= 1
    assert "allreduce x2" in record["label"]


@pytest.mark.full
@pytest.mark.parametrize("strategy", ["allreduce_nosync", "ps_sync", "independent"])
def test_other_torch_strategies(tmp_path, strategy):
    d = _check_ok(execute(_dist("torch", strategy), tmp_path))
    share = d["overlap_share"]
    if strategy == "independent":
        assert share is None and all(r["phases_median_ms"]["comm"] == 0 for r in d["ranks"])
    else:  # communication waits for the whole backward: nothing to overlap with
        assert share == 0.0
    if strategy == "ps_sync":
        assert [r["role"] for r in d["ranks"]] == ["server+worker", "worker"]


@pytest.mark.full
def test_multi_worker_mirrored_two_workers(mirrored_record):
    d = _check_ok(mirrored_record)
    for rank in d["ranks"]:
        assert {"forward_backward", "exposed_comm", "update"} <= set(rank["phases_median_ms"])
    assert d["ranks"][0]["checksum_after"] == pytest.approx(d["ranks"][1]["checksum_after"], rel=1e-5)


@pytest.mark.full
@pytest.mark.parametrize("run", ["ddp_record", "mirrored_record"])
def test_a_distributed_record_carries_the_fairness_certificate(run, request):
    record = request.getfixturevalue(run)
    _check_ok(record)
    fairness = record["fairness"]
    assert fairness is not None and fairness["failed"] == []
    assert fairness["threads_match"] and fairness["recipe_match"] and fairness["weights_changed"]
    assert fairness["params"] == record["distributed"]["params"] and fairness["flops_per_image"]
    assert fairness["weights_checksum_before"] == record["distributed"]["ranks"][0]["checksum_before"]
    if record["config"]["framework"] == "torch":  # the rank trains the adapter's workload: its batch is observed
        assert fairness["data_placement_observed"] == {"location": "cpu", "fresh_per_step": False}
        assert fairness["data_placement_match"] is True
        assert "DDP" in fairness["inside_timer"]


@pytest.mark.full
def test_async_parameter_server_learns_digits(tmp_path):
    config = make_config(framework="tensorflow", strategy="ps_async", workers=2, model="digits_mlp", mode="training",
                         batch_size=16, image_size=8, warmup=10, iterations=60)
    record = execute(config, tmp_path)
    d = _check_ok(record, ranks=1)
    assert d["ranks"][0]["role"] == "chief" and {s["task"] for s in d["servers"]} == {"worker0", "worker1", "ps0"}
    curve = d["accuracy"]
    assert len(curve) == 6 and all(0 <= p["accuracy"] <= 1 for p in curve)
    assert curve[-1]["accuracy"] > 0.5  # it learns (chance is 10%)
    assert not _our_processes()


@pytest.mark.full
@ROOT_ONLY
def test_emulated_two_nodes_on_a_shaped_link(tmp_path):
    record = execute(_dist("torch", "allreduce", nodes=2, link_gbit=1.0), tmp_path)
    d = _check_ok(record)
    assert d["link"]["kind"] == "emulated" and d["link"]["gbit"] == 1.0
    assert sorted(r["node"] for r in d["ranks"]) == [0, 1]
    assert not topology.project_namespaces()


@pytest.mark.full
def test_a_killed_worker_stops_the_run_with_a_recorded_error(tmp_path):
    nodes = 2 if topology.unavailable_reason() is None else 1
    config = _dist("torch", "allreduce", iterations=100_000, nodes=nodes)
    out = {}
    runner = threading.Thread(target=lambda: out.update(record=execute(config, tmp_path)))
    runner.start()
    victim = _wait_for_ranks(2)[0]
    time.sleep(3)
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    runner.join(timeout=60)
    assert not runner.is_alive(), "the launcher did not stop within 60 s"
    assert time.monotonic() - killed_at < 60
    record = out["record"]
    assert record["status"] == "error" and "distributed run failed" in record["reason"]
    assert "stopped" in record["reason"]
    validate_record(record)
    time.sleep(1)
    assert not _our_processes(), "orphaned processes"
    if nodes == 2:
        assert not topology.project_namespaces(), "network namespaces left behind"


def test_alpha_beta_fit_recovers_known_parameters():
    rng = np.random.default_rng(0)
    sizes = np.array([4e3, 64e3, 1e6, 4e6, 16e6, 48e6])
    alpha, bw, n = 150e-6, 1.2e9, 2
    t_ar = (2 * (n - 1) * alpha + 2 * (n - 1) / n * sizes / bw) * rng.normal(1, 0.02, sizes.size)
    fit = netmodel.fit_allreduce(sizes, t_ar, n)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.15) and fit.bandwidth_Bps == pytest.approx(bw, rel=0.05)
    t_p2p = (alpha + sizes / bw) * rng.normal(1, 0.02, sizes.size)
    p2p = netmodel.fit_p2p(sizes, t_p2p)
    assert p2p.alpha_s == pytest.approx(alpha, rel=0.15) and p2p.bandwidth_Bps == pytest.approx(bw, rel=0.05)
    link = netmodel.Link(alpha, bw)
    assert netmodel.ring_allreduce_s(link, 1, 1e6) == 0
    assert netmodel.ps_s(link, 4, 1e6) == pytest.approx(2 * alpha + 8e6 / bw)
    assert netmodel.predict_step_s("ring", 0.1, link, 2, 1e6, overlap_share=1.0) == pytest.approx(0.1)


def test_latency_is_read_from_latency_dominated_messages_not_a_shapers_burst():
    # one-way times measured through a 1 Gbit/s token-bucket shaper (emulated nodes on this VM): the
    # bucket's burst lets 64 KiB - 1 MiB through faster than the rate, below the line through the large
    # messages; the latency must still come from the small messages (~0.18 ms), not collapse to 0
    sizes = [1_024, 4_096, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 50_331_648]
    ms = [0.191, 0.199, 0.220, 0.985, 6.887, 33.650, 139.450, 421.349]
    link = netmodel.fit_p2p(sizes, [m / 1e3 for m in ms])
    assert 150e-6 < link.alpha_s < 210e-6
    assert link.bandwidth_Bps * 8 / 1e9 == pytest.approx(0.95, rel=0.05)


def test_overlap_is_compute_plus_comm_minus_their_union():
    assert union_length([(0, 2), (1, 3), (5, 6)]) == 4
    p = step_phases(forward=(0, 1), backward_compute=(1, 3), update=(4, 4.5), comm=[(2, 4)], step=(0, 4.5))
    assert p["comm_s"] == 2 and p["overlap_s"] == 1 and p["exposed_comm_s"] == 1
    assert p["forward_s"] + p["backward_s"] + p["update_s"] + p["exposed_comm_s"] + p["other_s"] == p["step_s"]


@pytest.mark.parametrize("kwargs, needle", [
    (dict(framework="tensorflow", strategy="ps_sync", workers=2), "valid choices: independent, allreduce, ps_async"),
    (dict(framework="torch", strategy="ps_async", workers=2), "valid choices: independent, allreduce"),
    (dict(framework="torch", workers=2), "need a distributed strategy"),
    (dict(framework="torch", strategy="allreduce", workers=2, link_gbit=1.0), "set nodes >= 2"),
    (dict(framework="torch", strategy="allreduce", workers=3, nodes=2), "do not divide evenly"),
    (dict(framework="torch", strategy="allreduce", workers=2, mode="inference"), "needs mode 'training'"),
    (dict(framework="torch", strategy="gossip", workers=2), "invalid strategy 'gossip'"),
    (dict(framework="torch", strategy="allreduce", workers=0), "invalid workers 0"),
    (dict(framework="torch", strategy="allreduce", workers=3, scaling="strong", batch_size=8), "divide evenly"),
])


def test_bad_distributed_settings_are_refused_by_name(kwargs, needle):
    with pytest.raises(ConfigError, match=None) as exc:
        make_config(model="tiny_cnn", **{"mode": "training", **kwargs})
    assert needle in str(exc.value)


def test_single_process_keys_do_not_change_with_the_distributed_fields():
    import hashlib

    c = make_config(framework="torch", model="resnet50", batch_size=8)
    defaults = {f: getattr(type(c), f, None) for f in DISTRIBUTED_FIELDS}
    old = {k: v for k, v in c.to_dict().items() if k not in ("extra", *DISTRIBUTED_FIELDS)}
    from dataclasses import fields
    declared = {f.name: f.default for f in fields(c)}
    old = {k: v for k, v in old.items() if v != declared[k]}
    assert c.key == hashlib.sha1(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16]
    assert all(defaults[f] is not None for f in DISTRIBUTED_FIELDS)
    d = make_config(framework="torch", model="resnet50", batch_size=8, strategy="allreduce", workers=2, mode="training")
    assert d.key != c.key and d.threads == max(1, c.threads // 2) and d.worker_batch == 8 and d.global_batch == 16


def test_scaling_tables_from_known_step_times(tmp_path):
    from bench.report import scaling_text as ST
    from bench.report.context import load
    from tests.synthetic import dist_record, record, write

    recs = []
    for rep in range(3):
        recs += [dist_record("independent", 1, 100.0, rep), dist_record("independent", 2, 150.0, rep),
                 dist_record("allreduce", 2, 200.0, rep, comm_ms=40.0, overlap=0.2),
                 dist_record("ps_sync", 2, 250.0, rep, flags=[{"name": "disturbed", "reason": "busy"}] if rep else []),
                 record(repeat=rep, seed=rep)]
    write(recs, tmp_path)
    d = load(tmp_path)
    assert not any("x2" in label for label in d.runs["label"]), "distributed rows leaked into single-process tables"
    t = d.scaling.table.set_index("strategy", drop=False)
    ar = t[(t["strategy"] == "allreduce")].iloc[0]
    assert ar["comm_cost_ms"] == pytest.approx(50.0, rel=0.03)  # 200 - 150 ms per step
    assert ar["efficiency"] == pytest.approx(100 / 200, rel=0.03)  # 2x the images in 2x the time of 1 worker
    assert ar["eff_ci_low"] < ar["efficiency"] < ar["eff_ci_high"] and ar["sound"]
    ps = t[t["strategy"] == "ps_sync"].iloc[0]
    assert not ps["sound"] and ps["flagged"] == 2  # two of three processes disturbed: not a finding
    text = " ".join(ST.findings(d.scaling))
    assert "allreduce x2 (loopback; 25 MB buckets): scaling efficiency 50%" in text
    assert "ps_sync x2 (loopback): not measured reliably (busy)" in text


def test_profile_distributed_blocks_expand_and_list_what_does_not_apply(tmp_path):
    from bench.sweep.profiles import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("models: [tiny_cnn]\nsettings: {image_size: 32}\ndistributed:\n"
                    "  - frameworks: [torch, tensorflow]\n    models: [tiny_cnn]\n"
                    "    strategies: [allreduce, ps_sync]\n    workers: [2]\n    bucket_mbs: [1, 100]\n")
    p = load_profile(str(path))
    dist = [c for c in p.configs if c.distributed]
    assert {(c.framework, c.strategy, c.bucket_mb) for c in dist} == {
        ("torch", "allreduce", 1), ("torch", "allreduce", 100), ("tensorflow", "allreduce", 1),
        ("tensorflow", "allreduce", 100), ("torch", "ps_sync", 1), ("torch", "ps_sync", 100)}
    [left_out] = p.not_applicable
    assert left_out.startswith("tensorflow ps_sync: tensorflow does not implement ps_sync (it has: independent")
    path.write_text("distributed:\n  - strategies: [allreduce]\n    link: fast\n")
    with pytest.raises(ConfigError, match="may set only"):
        load_profile(str(path))


def test_version_2_records_load_with_no_distributed_section(tmp_path):
    from bench.results.store import load_records
    from tests.synthetic import record

    r = record()
    r["schema_version"] = 2
    del r["distributed"]
    path = tmp_path / "old-host" / "records" / "v2.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(r))
    [loaded] = load_records(tmp_path)
    assert loaded["distributed"] is None


def _wait_for_ranks(n: int, timeout: float = 120) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranks = [p for p in _our_processes() if "torch.distributed.run" not in " ".join(p.cmdline())
                 and "bench.runs.distributed.rank_main" in " ".join(p.cmdline())]
        if len(ranks) == n:
            return ranks
        time.sleep(0.5)
    raise AssertionError("the ranks did not start")


@pytest.mark.full
def test_a_killed_launcher_leaves_no_rank_behind(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    cmd = [sys.executable, "-m", "bench", "run", "--framework", "torch", "--model", "tiny_cnn", "--mode", "training",
           "--batch-size", "4", "--image-size", "16", "--strategy", "allreduce", "--workers", "2",
           "--iterations", "100000", "--results-dir", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_ranks(2)
    proc.kill()  # SIGKILL: no finally, no cleanup in the launcher itself
    proc.wait()
    deadline = time.monotonic() + 30
    while _our_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _our_processes(), "ranks outlived their killed launcher"
    assert not list(tmp_path.rglob("records/*.json"))  # nothing half-written


@pytest.mark.full
@ROOT_ONLY
def test_two_machines_through_the_real_cluster_entry_point(tmp_path):
    """Two `bench run --master-addr ... --node-rank k` commands, each in its own network namespace (two
    machines as far as the network goes): node 0 writes one record holding both machines' ranks."""
    import sys

    from tests.conftest import ROOT, run_on_machines

    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOO_SOCKET_IFNAME": topology.IFNAME}
    with topology.emulated_nodes(2) as nodes:
        outs = run_on_machines(nodes, lambda node: [
            sys.executable, "-m", "bench", "run", "--framework", "torch", "--mode", "training",
            "--model", "tiny_cnn", "--batch-size", "4", "--image-size", "16", "--warmup", "1",
            "--iterations", "4", "--strategy", "allreduce", "--workers", "2", "--nodes", "2",
            "--master-addr", nodes[0].address, "--master-port", "29517", "--node-rank", str(node.index),
            "--results-dir", str(tmp_path / f"machine{node.index}")], env, tmp_path, 240)
    assert "node 1's ranks finished" in outs[1]
    assert not list((tmp_path / "machine1").rglob("records/*.json"))
    [path] = (tmp_path / "machine0").rglob("records/*.json")
    record = json.loads(path.read_text())
    d = _check_ok(record)
    assert d["link"]["kind"] == "real cluster" and sorted(r["node"] for r in d["ranks"]) == [0, 1]
