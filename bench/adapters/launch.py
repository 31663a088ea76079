"""A distributed run's launch plan: the processes to start (argv, environment) and the kind of launch it is.

Each adapter returns its own plan (`DistributedRuns.launch_plan`, bench/adapters/distributed_runs.py), so the
launcher (bench/runs/distributed/) starts tasks without knowing how any framework's ranks find each other (torchrun
agents, TF_CONFIG tasks, one process).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from typing import Protocol

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
LOCAL_DEVICES = "local_devices"  # one process whose replicas, one per device of this machine, are the workers
PROCESSES = "processes"  # one process per rank on this machine, each told its rank (RANK_ENV)
RANK_ENV = "BENCH_RANK"


@dataclass
class Task:
    """One process to start: its name (for messages and its log), argv and extra environment."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # a process that serves until told to stop (a TF parameter server / worker server):
    # the run is done when every non-daemon task has exited 0
    daemon: bool = False
    # a server on a machine without the chief (real machines): it serves until the task at this address (host:port)
    # has come up and gone again, since the chief that ends the run runs elsewhere
    serves_until: str | None = None


@dataclass
class LaunchPlan:
    """What this machine starts for one distributed run; `kind` is recorded (the record's distributed.launch)."""

    kind: str
    tasks: list[Task]


class Node(Protocol):
    """An emulated node (bench/runs/distributed/topology.py): its address, interface, and how to run inside it."""

    address: str
    ifname: str

    def command(self, argv: list[str]) -> list[str]: ...


class LaunchError(RuntimeError):
    """A distributed run failed: a process exited non-zero, was killed, or the run timed out (or cannot start)."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def python_module(module: str) -> list[str]:
    return [sys.executable, "-m", module]


def thread_env(threads: int) -> dict:
    """Threads per worker, stated to every pool (torchrun would otherwise set OMP_NUM_THREADS=1)."""
    return {k: str(threads) for k in THREAD_VARIABLES}


# On emulated nodes NCCL would reach the other node's GPUs through NVLink/PCIe peer access, shared memory, NVLink
# SHARP (NVLS) or InfiniBand, none of which crosses the emulated link: with these off its traffic takes sockets on the
# node's veth. The nodes share one host name and host id, from which NCCL decides which ranks are on one node: each
# gets a host id of its own (NCCL_HOSTID), so NCCL sees as many nodes as the run emulates.
EMULATED_NCCL = ("peer-to-peer, shared memory, NVLS and InfiniBand off, a host id per node: NCCL's sockets on each "
                 "node's veth (the emulated link)")


def emulated_link_env(ifname: str, gpus: bool) -> dict[str, str]:
    """A task's environment on an emulated node: gloo's interface, and for GPU ranks (NCCL) the same interface with
    every path that would bypass it turned off."""
    env = {"GLOO_SOCKET_IFNAME": ifname}
    if gpus:
        env.update(NCCL_SOCKET_IFNAME=ifname, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1",
                   NCCL_NVLS_ENABLE="0", NCCL_HOSTID=f"bench-emulated-{ifname}")
    return env


def local_device_plan(config, module: str, env: dict, nodes, cluster) -> LaunchPlan:
    """One process whose replicas, one per device of this machine, are the workers (TensorFlow's MirroredStrategy
    on GPUs, JAX over its devices); it gets every worker's threads."""
    if cluster or nodes:
        raise LaunchError("a run over one process's devices runs on one machine; valid choice: nodes 1")
    return LaunchPlan(LOCAL_DEVICES, [Task("process0", python_module(module),
                                           {**env, **thread_env(config.threads * config.workers), "BENCH_NODE": "0"})])


def process_per_rank_plan(config, module: str, env: dict, nodes, cluster) -> LaunchPlan:
    """One process per rank on this machine, each told its rank: for ranks that never communicate (independent)."""
    if cluster or nodes:
        raise LaunchError("ranks started as plain processes run on one machine; valid choice: nodes 1")
    return LaunchPlan(PROCESSES, [Task(f"rank{k}", python_module(module), {**env, RANK_ENV: str(k), "BENCH_NODE": "0"})
                                  for k in range(config.workers)])
