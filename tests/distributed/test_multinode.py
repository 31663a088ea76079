"""Real multi-node runs: the host-list, TF_CONFIG and Slurm parsing (pure functions), the config's checks, the
launch commands each machine gets; then whole runs with emulated nodes standing in for machines through the same
per-machine command (`bench run --cluster <namespace addresses> --node-rank k` in each namespace), and through the
real local Slurm (`srun -n2`, one `bench run --cluster slurm` per task)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bench.adapters.tensorflow.launch import (
    place_tf_tasks,
    slurm_tf_jobs,
    slurm_tf_layout,
    slurm_tf_task,
    tf_cluster,
    tf_tasks,
)
from bench.adapters.torch.launch import torchrun_tasks
from bench.config import make_config
from bench.errors import ConfigError
from bench.host.machines import expand_nodelist, expand_tasks_per_node, parse_hosts
from bench.results.links import link_key
from bench.runs.distributed import topology
from bench.runs.distributed.cluster import Machines, from_slurm, resolve, slurm_port
from bench.sweep.profiles import load_profile
from tests import local_slurm
from tests.conftest import ROOT, TEST_HOST, run_on_machines

TINY = dict(model="tiny_cnn", mode="training", batch_size=4, image_size=16, warmup=1, iterations=3)
HOSTS = "10.0.0.1,10.0.0.2"
SLURM_ENV = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "3", "SLURM_STEP_NODELIST": "gpu[07-08]",
             "SLURM_STEP_TASKS_PER_NODE": "2,1", "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}


def _config(framework="torch", strategy="allreduce", **kw):
    return make_config(framework=framework, strategy=strategy, **{**TINY, "workers": 2, "nodes": 2, **kw})


# --- pure parsing -------------------------------------------------------------------------------------------------
def test_host_lists_parse_and_bad_hosts_are_named():
    assert parse_hosts("a, 10.0.0.2,node-3.example") == ("a", "10.0.0.2", "node-3.example")
    for bad in ("a,,b", "a b", "-x", "a;b"):
        with pytest.raises(ConfigError, match="slurm.*host list"):
            parse_hosts(bad)


def test_slurm_node_lists_expand_like_submitit():
    from submitit.slurm.slurm import _parse_node_list

    for text in ("n[1-3,05],m", "vm", "a[01-02]b[1-2]", "x1,y[9-11]"):
        assert expand_nodelist(text) == _parse_node_list(text), text
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(ConfigError, match="tasks per node"):
        expand_tasks_per_node("2(x)")


def test_a_slurm_task_knows_its_node_rank_hosts_and_port():
    m = from_slurm(SLURM_ENV, nodes=3)
    assert (m.node_rank, m.hosts, m.master_addr, m.source) == (1, ("gpu07", "gpu07", "gpu08"), "gpu07", "slurm")
    assert m.port == random.Random("4242").randint(20000, 60000) == slurm_port(SLURM_ENV)  # submitit's rule
    assert from_slurm({**SLURM_ENV, "MASTER_PORT": "12345"}, nodes=3).port == 12345
    with pytest.raises(ConfigError, match="3 tasks but the run has nodes=2"):
        from_slurm(SLURM_ENV, nodes=2)
    with pytest.raises(ConfigError, match="SLURM_PROCID"):
        from_slurm({k: v for k, v in SLURM_ENV.items() if k != "SLURM_PROCID"}, nodes=3)


def test_a_host_list_needs_this_machines_node_rank():
    config = _config(cluster=HOSTS)
    m = resolve(config, node_rank=1)
    assert (m.hosts, m.node_rank, m.port, m.source) == (("10.0.0.1", "10.0.0.2"), 1, 29500, "hosts")
    assert resolve(config, env={"BENCH_NODE_RANK": "0"}).node_rank == 0
    for rank in (None, 2, -1):
        with pytest.raises(ConfigError, match="--node-rank in 0..1"):
            resolve(config, node_rank=rank)
    with pytest.raises(ConfigError, match="Slurm's to give"):
        resolve(_config(cluster="slurm"), node_rank=0, env=SLURM_ENV)
    assert resolve(_config()) is None


def test_tf_config_from_a_host_list_places_tasks_and_gives_distinct_ports():
    roles = place_tf_tasks(4, 2, parameter_server=True)
    assert roles == [("worker", 0, 0), ("worker", 1, 0), ("worker", 2, 1), ("worker", 3, 1), ("ps", 0, 0),
                     ("chief", 0, 0)]
    spec = tf_cluster(roles, ("a", "b"), [7000 + i for i in range(len(roles))])
    assert spec == {"worker": ["a:7000", "a:7001", "b:7002", "b:7003"], "ps": ["a:7004"], "chief": ["a:7005"]}


def test_slurm_tf_layout_is_the_resolvers(monkeypatch):
    """The launcher's copy of SlurmClusterResolver's layout (it watches the chief's address) against the resolver."""
    tf = pytest.importorskip("tensorflow")
    jobs = slurm_tf_jobs(2, parameter_server=True)
    hosts = ("n2", "n2", "n1", "n1")
    env = {"SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NODELIST": "n[2,1]", "SLURM_STEP_TASKS_PER_NODE": "2(x2)"}
    for rank in range(4):
        for k, v in {**env, "SLURM_PROCID": str(rank)}.items():
            monkeypatch.setenv(k, v)
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            jobs=jobs, port_base=9000, gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False)
        assert resolver.cluster_spec().as_dict() == slurm_tf_layout(hosts, jobs, 9000)
        assert (resolver.task_type, resolver.task_id) == slurm_tf_task(jobs, rank)


# --- the config's checks ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("settings, message", [
    (dict(cluster="10.0.0.1,10.0.0.2,10.0.0.3"), "lists 3 hosts for nodes=2"),
    (dict(cluster="a,,b"), "no host name"),
    (dict(cluster="10.0.0.1", nodes=1), "set nodes >= 2"),
    (dict(cluster=HOSTS, link_gbit=1.0), "real cluster's network is what it is"),
    (dict(rendezvous="c10d"), "joins real machines"),
    (dict(rendezvous="ring"), "invalid rendezvous 'ring'; valid choices: static, c10d"),
    (dict(framework="tensorflow", cluster=HOSTS, rendezvous="c10d"), "TF_CONFIG"),
    (dict(framework="tensorflow", cluster=HOSTS, strategy="independent"), "independent"),
    (dict(framework="tensorflow", cluster="slurm", strategy="ps_async"), "nodes = 4"),
])


def test_bad_multi_node_configs_are_refused_with_the_reason(settings, message):
    with pytest.raises(ConfigError, match=message):
        _config(**settings)


def test_a_profile_describes_a_multi_node_run_with_repeats(tmp_path):
    good = tmp_path / "cluster.yaml"
    good.write_text("repeats: 2\nsettings: {image_size: 16}\ndistributed:\n"
                    "  - frameworks: [torch, tensorflow]\n    models: [tiny_cnn]\n    batch_sizes: [4]\n"
                    "    strategies: [allreduce]\n    workers: [4]\n"
                    f"    settings: {{cluster: '{HOSTS}', nodes: 2, rendezvous: static}}\n")
    profile = load_profile(str(good))
    assert profile.repeats == 2 and len(profile.configs) == 2
    assert {(c.cluster, c.nodes, c.ranks_here) for c in profile.configs} == {(HOSTS, 2, 2)}
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("nodes: 2", "nodes: 3"))
    with pytest.raises(ConfigError, match="distributed block 1.*lists 2 hosts for nodes=3"):
        load_profile(str(bad))


# --- what each machine launches -----------------------------------------------------------------------------------
def test_torchrun_joins_by_static_or_c10d_rendezvous():
    static = Machines(("h0", "h1"), 1, 29600)
    (task,) = torchrun_tasks(_config(cluster="h0,h1"), "m", {}, None, static)
    assert {"--nnodes=2", "--nproc-per-node=1", "--node-rank=1", "--master-addr=h0", "--master-port=29600"} \
        <= set(task.argv)
    c10d = Machines(("h0", "h1"), 0, 29600, "c10d", "run7")
    (task,) = torchrun_tasks(_config(cluster="h0,h1", rendezvous="c10d"), "m", {}, None, c10d)
    assert {"--rdzv-backend=c10d", "--rdzv-endpoint=h0:29600", "--rdzv-id=run7", "--rdzv-conf=is_host=1",
            "--local-addr=h0"} \
        <= set(task.argv)
    assert not [a for a in task.argv if a.startswith(("--node-rank", "--master-addr"))]


@pytest.mark.parametrize("strategy", ["gpipe", "1f1b", "interleaved_1f1b"])
def test_a_pipeline_joins_machines_and_emulated_nodes_as_data_parallel_does(strategy):
    """A pipeline config is accepted with a host list, with Slurm and on emulated nodes, and each machine (node)
    gets the same torchrun command as a data-parallel run of the same layout: the stages are its ranks."""
    pipe = dict(strategy=strategy, micro_batches=2)
    for cluster, machines in (("h0,h1", Machines(("h0", "h1"), 1, 29600)),
                              ("slurm", Machines(("vm0", "vm1"), 1, 29600, source="slurm"))):
        (dp,) = torchrun_tasks(_config(cluster=cluster), "m", {}, None, machines)
        (pp,) = torchrun_tasks(_config(cluster=cluster, **pipe), "m", {}, None, machines)
        assert pp.argv == dp.argv and pp.env == dp.env
        assert {"--nnodes=2", "--nproc-per-node=1", "--node-rank=1", "--master-addr=" + machines.hosts[0]} \
            <= set(pp.argv)
    nodes = [_Node(0), _Node(1)]
    dp = torchrun_tasks(_config(), "m", {}, nodes)
    pp = torchrun_tasks(_config(**pipe, link_gbit=1), "m", {}, nodes)
    assert [t.argv[:5] for t in pp] == [["ip", "netns", "exec", f"dlbdlbv{k}", sys.executable] for k in range(2)]
    assert [_unported(t.argv) for t in pp] == [_unported(t.argv) for t in dp]
    assert [t.env["GLOO_SOCKET_IFNAME"] for t in pp] == ["dlbv0", "dlbv1"]


class _Node:
    def __init__(self, k: int) -> None:
        self.address, self.ifname = f"10.213.0.{k + 1}", f"dlbv{k}"

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"dlb{self.ifname}", *argv]


def _unported(argv: list[str]) -> list[str]:
    return [a for a in argv if not a.startswith("--master-port=")]  # a free port each time


def test_each_machine_starts_only_its_tf_tasks_and_a_lone_server_watches_the_chief():
    config = _config(framework="tensorflow", strategy="ps_async", cluster="h0,h1")
    node1 = tf_tasks(config, "m", {}, None, Machines(("h0", "h1"), 1, 7000))
    assert [t.name for t in node1] == ["worker1"]
    tf_config = json.loads(node1[0].env["TF_CONFIG"])
    assert tf_config == {"cluster": {"worker": ["h0:7000", "h1:7001"], "ps": ["h0:7002"], "chief": ["h0:7003"]},
                         "task": {"type": "worker", "index": 1}}
    assert node1[0].daemon and node1[0].serves_until == "h0:7003"
    node0 = tf_tasks(config, "m", {}, None, Machines(("h0", "h1"), 0, 7000))
    assert [t.name for t in node0] == ["worker0", "ps0", "chief0"] and not any(t.serves_until for t in node0)
    slurm = tf_tasks(_config(framework="tensorflow", cluster="slurm"), "m", {}, None,
                     Machines(("vm", "vm"), 1, 9000, source="slurm"))
    assert [t.name for t in slurm] == ["worker1"] and "TF_CONFIG" not in slurm[0].env
    assert link_key(2, 2, 0, 0, "slurm") == "2 machines x2 slurm" != link_key(2, 2, 0, 0)


# --- whole runs: emulated nodes as machines, and the real local Slurm ---------------------------------------------

ROOT_ONLY = pytest.mark.skipif(topology.unavailable_reason() is not None,
                               reason=f"emulated nodes: {topology.unavailable_reason()}")
RUN = ["--mode", "training", "--model", "tiny_cnn", "--batch-size", "4", "--image-size", "16", "--warmup", "1",
       "--iterations", "3", "--workers", "2", "--nodes", "2"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST, "TF_CPP_MIN_LOG_LEVEL": "3",
            "GLOO_SOCKET_IFNAME": topology.IFNAME}


def _one_record(folders: list[Path], outs: list[str]) -> dict:
    """Exactly one machine wrote a record (the lead), the others said why they wrote none."""
    paths = [p for f in folders for p in f.rglob("records/*.json")]
    assert len(paths) == 1, outs
    assert sum("writes the record" in o for o in outs) == len(folders) - 1, outs
    record = json.loads(paths[0].read_text())
    assert record["status"] == "ok", record["reason"]
    assert record["summary"]["images_per_sec_median"] > 0
    assert not [f for f in record["flags"] if f["name"] in ("ranks_disagree", "weights_unchanged")]
    return record


def _machines_run(tmp_path: Path, framework: str, strategy: str, *extra: str) -> dict:
    """The per-machine command in each emulated node, with the host list of the namespaces' addresses."""
    with topology.emulated_nodes(2) as nodes:
        hosts = ",".join(n.address for n in nodes)
        outs = run_on_machines(nodes, lambda n: [
            sys.executable, "-m", "bench", "run", "--framework", framework, "--strategy", strategy, *RUN,
            "--cluster", hosts, "--node-rank", str(n.index), "--master-port", "29611", *extra,
            "--results-dir", str(tmp_path / f"machine{n.index}")], _env(), tmp_path, 420)
    record = _one_record([tmp_path / f"machine{n}" for n in range(2)], outs)
    link = record["distributed"]["link"]
    assert (link["kind"], link["source"], link["hosts"]) == ("real cluster", "hosts", hosts.split(","))
    return record


@pytest.mark.full
@ROOT_ONLY
@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_two_machines_torch_through_the_host_list(tmp_path, rendezvous):
    record = _machines_run(tmp_path, "torch", "allreduce", "--rendezvous", rendezvous)
    assert sorted(r["node"] for r in record["distributed"]["ranks"]) == [0, 1]
    assert record["config"]["rendezvous"] == rendezvous


@pytest.mark.full
@ROOT_ONLY
def test_a_pipeline_over_two_machines_through_the_host_list(tmp_path):
    record = _machines_run(tmp_path, "torch", "1f1b", "--micro-batches", "2")
    assert sorted(r["node"] for r in record["distributed"]["ranks"]) == [0, 1]
    section = record["distributed"]["pipeline"]
    assert section["schedule"] == "Schedule1F1B" and len(section["stages"]) == 2


@pytest.mark.full
@ROOT_ONLY
def test_two_machines_tensorflow_mirrored_through_the_host_list_with_the_link_fitted(tmp_path):
    record = _machines_run(tmp_path, "tensorflow", "allreduce", "--measure-link")
    d = record["distributed"]
    assert sorted((r["rank"], r["node"]) for r in d["ranks"]) == [(0, 0), (1, 1)]  # gathered from both machines
    assert d["ranks"][0]["checksum_after"] == pytest.approx(d["ranks"][1]["checksum_after"], rel=1e-6)
    network = json.loads((tmp_path / "machine0" / TEST_HOST / "network.json").read_text())
    [entry] = network.values()
    assert entry["key"] == link_key(2, 2, 0, 0, d["link"]["hosts"][0] + "," + d["link"]["hosts"][1])
    assert entry["fit_allreduce"]["bandwidth_Bps"] > 0 and entry["link"]["kind"] == "real cluster"
    assert not (tmp_path / "machine1" / TEST_HOST / "network.json").exists()


@pytest.mark.full
@ROOT_ONLY
def test_two_machines_tensorflow_async_parameter_server_through_the_host_list(tmp_path):
    record = _machines_run(tmp_path, "tensorflow", "ps_async")
    assert [r["role"] for r in record["distributed"]["ranks"]] == ["chief"]


SLURM_UP = local_slurm.unavailable_reason()


@pytest.mark.full
@pytest.mark.skipif(SLURM_UP is not None, reason=f"local Slurm: {SLURM_UP}")
@pytest.mark.parametrize("framework,strategy", [("torch", "allreduce"), ("tensorflow", "allreduce"),
                                                ("torch", "gpipe --micro-batches 2")])


def test_two_slurm_tasks_each_run_the_per_task_command(tmp_path, framework, strategy, slurm_cluster):
    """`srun -n2` on the local one-node Slurm: two tasks, each `bench run --cluster slurm` (torchrun's master from
    the node list; TensorFlow's cluster from SlurmClusterResolver), one ok record; a pipeline's stages the same way."""
    script = (f"exec {sys.executable} -m bench run --framework {framework} --strategy {strategy} {' '.join(RUN)} "
              f"--cluster slurm --results-dir {tmp_path}/task$SLURM_PROCID")
    env = {**_env(), "SLURM_CONF": str(local_slurm.CONF)}
    env.pop("GLOO_SOCKET_IFNAME")
    done = subprocess.run(["srun", "-n2", "--overcommit", "-p", local_slurm.PARTITION, "--time=10", "bash", "-c",
                           script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    record = _one_record([tmp_path / "task0", tmp_path / "task1"], [done.stdout])
    link = record["distributed"]["link"]
    assert (link["source"], len(link["hosts"])) == ("slurm", 2) and record["config"]["cluster"] == "slurm"
    assert sorted(r["node"] for r in record["distributed"]["ranks"]) == [0, 1]


def test_predicted_vs_measured_finds_a_real_clusters_fitted_link():
    from bench.report.scaling import _link_for

    fit = {"alpha_s": 1e-4, "bandwidth_Bps": 1e8, "r2": 0.9}
    key = link_key(2, 2, 0.0, 0.0, HOSTS)
    networks = {"h": {key: {"key": key, "fit_allreduce": fit, "fit_p2p": fit}}}
    row = {"host": "h", "workers": 2, "nodes": 2, "link_gbit": 0.0, "link_delay_ms": 0.0, "cluster": HOSTS}
    assert _link_for(networks, row, "ring").bandwidth_Bps == 1e8
    assert _link_for(networks, {**row, "cluster": ""}, "ring") is None  # emulated nodes' link is another one
