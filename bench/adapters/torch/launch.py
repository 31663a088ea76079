"""How a PyTorch run's ranks start: one torchrun agent per node (a static rendezvous on node 0's address, or on real
machines torchrun's static or c10d rendezvous), each agent starting its node's ranks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...host.devices import is_gpu
from ...ranks.rankio import GPU_BASE_ENV, MACHINE_RANKS_ENV
from ..launch import LaunchPlan, Task, emulated_link_env, free_port, python_module
from . import sandblaster

if TYPE_CHECKING:
    from ...config import RunConfig

TORCHRUN = "torchrun"  # the launch kind the record keeps
AGENT = "torch.distributed.run"  # torchrun, run as `python -m`


def torchrun_tasks(config: RunConfig, module: str, env: dict, nodes, cluster=None) -> list[Task]:
    """One torchrun agent per node (static rendezvous on node 0's address). On real machines, only this
    machine's agent, joining the others through torchrun's static rendezvous or its c10d rendezvous."""
    agent = python_module(AGENT)
    if cluster:
        if cluster.rendezvous == "c10d":  # node ranks assigned by the rendezvous; node 0's agent hosts its store
            # --local-addr: the address the others reach this machine at (the ranks' master if the rendezvous makes
            # it node 0), the host list's, not whatever its host name resolves to
            join = ["--rdzv-backend=c10d", f"--rdzv-endpoint={cluster.master_addr}:{cluster.port}",
                    f"--rdzv-id={cluster.run_id}", f"--rdzv-conf=is_host={int(cluster.node_rank == 0)}",
                    *([f"--local-addr={cluster.hosts[cluster.node_rank]}"] if cluster.source != "master" else [])]
        else:
            join = [f"--node-rank={cluster.node_rank}", f"--master-addr={cluster.master_addr}",
                    f"--master-port={cluster.port}"]
        argv = [*agent, f"--nnodes={config.nodes}", f"--nproc-per-node={config.ranks_here}", *join,
                "--max-restarts=0", "--monitor-interval=0.2", "--module", module]
        node_env = {**env, "BENCH_NODE": str(cluster.node_rank), MACHINE_RANKS_ENV: str(config.ranks_here),
                    GPU_BASE_ENV: "0"}
        return [Task(f"node{cluster.node_rank}", argv, node_env)]
    master = nodes[0].address if nodes else "127.0.0.1"
    port = free_port("127.0.0.1")
    tasks = []
    per_node = config.workers // (len(nodes) if nodes else 1)
    if config.strategy == sandblaster.STRATEGY:  # its coordinator and parameter server are ranks too (one node)
        per_node = sandblaster.processes(config.workers)
    for k in range(config.nodes if nodes else 1):
        argv = [*agent, f"--nnodes={len(nodes) if nodes else 1}",
                f"--node-rank={k}", f"--nproc-per-node={per_node}",
                f"--master-addr={master}", f"--master-port={port}", "--max-restarts=0",
                "--monitor-interval=0.2", "--module", module]
        link = emulated_link_env(nodes[k].ifname, is_gpu(config.device)) if nodes else {"GLOO_SOCKET_IFNAME": "lo"}
        node_env = {**env, **link, "BENCH_NODE": str(k),
                    MACHINE_RANKS_ENV: str(config.ranks_here), GPU_BASE_ENV: str(k * per_node)}
        tasks.append(Task(f"node{k}", nodes[k].command(argv) if nodes else argv, node_env))
    return tasks


def launch_plan(config: RunConfig, module: str, env: dict, nodes, cluster) -> LaunchPlan:
    return LaunchPlan(TORCHRUN, torchrun_tasks(config, module, env, nodes, cluster))
