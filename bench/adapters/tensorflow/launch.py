"""How a TensorFlow run's tasks start: one process per TF_CONFIG task (workers, and for ps_async a ps and a chief),
or on one machine's GPUs one MirroredStrategy process; and where each task listens (pure functions, unit-tested)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...host.devices import is_gpu
from ...host.machines import SLURM
from ...ranks.rankio import TF_SLURM_ENV
from ..launch import (
    LaunchError,
    LaunchPlan,
    Task,
    emulated_link_env,
    free_port,
    local_device_plan,
    python_module,
    thread_env,
)
from . import strategies

if TYPE_CHECKING:
    from ...config import RunConfig

TF_CONFIG = "tf_config"  # the launch kind the record keeps


def place_tf_tasks(workers: int, nodes: int, parameter_server: bool) -> list[tuple[str, int, int]]:
    """(role, index, node) of every TF_CONFIG task: workers spread evenly over the nodes, the ps and the chief
    (asynchronous parameter server) on node 0."""
    roles = [("worker", i, i * nodes // workers) for i in range(workers)]
    if parameter_server:
        roles += [("ps", 0, 0), ("chief", 0, 0)]
    return roles


def tf_cluster(roles: list[tuple[str, int, int]], hosts: tuple[str, ...], ports: list[int]) -> dict[str, list[str]]:
    """TF_CONFIG's `cluster` for tasks placed on `hosts`: task i of the list listens on its node's host at ports[i]
    (on real machines port, port + 1, ...: distinct even where several tasks share a host)."""
    cluster: dict[str, list[str]] = {}
    for (role, _, node), port in zip(roles, ports, strict=True):
        cluster.setdefault(role, []).append(f"{hosts[node]}:{port}")
    return cluster


def slurm_tf_jobs(workers: int, parameter_server: bool) -> dict[str, int]:
    """SlurmClusterResolver's `jobs`: one Slurm task per TF task."""
    return {"worker": workers, **({"ps": 1, "chief": 1} if parameter_server else {})}


def slurm_tf_layout(hosts: tuple[str, ...], jobs: dict[str, int], port: int) -> dict[str, list[str]]:
    """The cluster SlurmClusterResolver builds from one host per Slurm task (its rule: hosts sorted, port_base +
    the task's index on its host, jobs assigned in sorted name order), for the launcher, which cannot import
    TensorFlow, to know where the chief listens."""
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h] = counts.get(h, 0) + 1
    addresses = [f"{h}:{port + i}" for h in sorted(counts) for i in range(counts[h])]
    out, start = {}, 0
    for job in sorted(jobs):
        out[job] = addresses[start:start + jobs[job]]
        start += jobs[job]
    return out


def slurm_tf_task(jobs: dict[str, int], rank: int) -> tuple[str, int]:
    """(type, index) SlurmClusterResolver gives the Slurm task of rank `rank` (jobs in sorted name order)."""
    start = 0
    for job in sorted(jobs):
        if rank < start + jobs[job]:
            return job, rank - start
        start += jobs[job]
    raise ConfigError(f"Slurm task {rank} has no TF task: the jobs {jobs} hold {start} tasks")


def _tf_task(config: RunConfig, module: str, env: dict, role: str, index: int, node: int, tf_config: dict | None,
             chief: str | None = None, wrap=None) -> Task:
    """One TF_CONFIG task's process; a server (ps_async's ps and workers) serves until the run ends: on real
    machines without the chief, until the chief at `chief` has come and gone."""
    task_env = {**env, "BENCH_NODE": str(node)}
    if tf_config is not None:
        task_env["TF_CONFIG"] = json.dumps(tf_config)
    if role == "ps" or role == "chief":
        task_env.update(thread_env(1))
    argv = python_module(module)
    server = config.strategy == "ps_async" and role != "chief"
    return Task(f"{role}{index}", wrap(argv) if wrap else argv, task_env, daemon=server,
                serves_until=chief if server else None)


def tf_tasks(config: RunConfig, module: str, env: dict, nodes, cluster=None) -> list[Task]:
    """One process per TF_CONFIG task: workers (and, for ps_async, a ps and a chief). On real machines only this
    machine's tasks: from a host list, TF_CONFIG with every task's address (port, port + 1, ...); on Slurm, this
    Slurm task's one TF task, which resolves the cluster itself with SlurmClusterResolver."""
    ps = config.strategy == "ps_async"
    if cluster and cluster.source == SLURM:
        jobs = slurm_tf_jobs(config.workers, ps)
        role, index = slurm_tf_task(jobs, cluster.node_rank)
        layout = slurm_tf_layout(cluster.hosts, jobs, cluster.port)
        slurm_env = {**env, TF_SLURM_ENV: json.dumps({"jobs": jobs, "port_base": cluster.port})}
        return [_tf_task(config, module, slurm_env, role, index, cluster.node_rank, None,
                         chief=layout["chief"][0] if ps else None)]
    if cluster and cluster.source != "hosts":
        raise LaunchError("TF_CONFIG tasks need every machine's address: --cluster host0,host1,... with "
                          "--node-rank (or --cluster slurm), not --master-addr")
    roles = place_tf_tasks(config.workers, config.nodes if (nodes or cluster) else 1, ps)
    if cluster:  # every machine derives the same ports
        spec = tf_cluster(roles, cluster.hosts, [cluster.port + i for i in range(len(roles))])
    else:  # this machine: any free port per task
        spec = tf_cluster(roles, tuple(n.address for n in nodes) if nodes else ("127.0.0.1",),
                          [free_port("127.0.0.1") for _ in roles])
    tasks = []
    for role, index, node in roles:
        if cluster and node != cluster.node_rank:
            continue
        tf_config = {"cluster": spec, "task": {"type": role, "index": index}} if config.strategy != "independent" \
            else {"task": {"type": "worker", "index": index}}
        wrap = nodes[node].command if nodes else None
        chief = spec["chief"][0] if ps and cluster and cluster.node_rank != 0 else None
        # MultiWorkerMirroredStrategy's NCCL on emulated nodes: only over the node's own link (as torch's)
        node_env = {**env, **emulated_link_env(nodes[node].ifname, is_gpu(config.device))} if nodes else env
        tasks.append(_tf_task(config, module, node_env, role, index, node, tf_config, chief, wrap))
    return tasks


def launch_plan(config: RunConfig, module: str, env: dict, nodes, cluster) -> LaunchPlan:
    """MirroredStrategy over one machine's GPUs: one process; otherwise a process per TF_CONFIG task."""
    if strategies.local_devices(config.strategy, config.device, config.nodes):
        return local_device_plan(config, module, env, nodes, cluster)
    return LaunchPlan(TF_CONFIG, tf_tasks(config, module, env, nodes, cluster))
