"""Where the machines of a real multi-node run are and which one this is: a host list given on the command line
(or a profile) with this machine's node rank, or the Slurm step's environment (the logic of submitit's
`helpers.TorchDistributedEnvironment`: node rank = SLURM_PROCID, master = the first host of the node list, port
from MASTER_PORT or drawn from the job id). Pure functions of their arguments, so every rule is unit-tested.

A "node" is one `bench run` process on the cluster: one per machine in a host list; one per Slurm task on Slurm
(for torchrun one task per machine, `srun --ntasks-per-node=1`; for TensorFlow one task per TF_CONFIG task, the
layout `tf.distribute.cluster_resolver.SlurmClusterResolver` resolves).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from ...errors import ConfigError
from ...host.machines import (
    MAX_HOSTS,
    PORTS,
    SLURM,
    SLURM_IDS,
    check_port,
    check_rank,
    check_slurm_id,
    expand_nodelist,
    expand_tasks_per_node,
    parse_hosts,
)
from ...values import env_integer, integer

DEFAULT_PORT = 29500
NODE_RANK_ENV = "BENCH_NODE_RANK"  # a sweep's runs on a host list: this machine's node rank
PORT_ENV = "BENCH_MASTER_PORT"
# submitit's TorchDistributedEnvironment draws the master port from the job id in this range (unless MASTER_PORT).
SLURM_PORTS = (20000, 60000)


@dataclass(frozen=True)
class Machines:
    """The real machines of one run, as this one sees them."""

    hosts: tuple[str, ...]  # node k's address (node 0 first); from --master-addr: node 0's only
    node_rank: int
    port: int = DEFAULT_PORT  # torchrun's master / c10d endpoint port; TF tasks use port, port + 1, ...
    rendezvous: str = "static"
    run_id: str = "dlbench"
    source: str = "hosts"  # hosts (a host list), slurm, master (--master-addr)

    @property
    def master_addr(self) -> str:
        return self.hosts[0]

    @property
    def name(self) -> str:
        """The `cluster` setting these machines came from ('slurm' or the host list; node 0's for --master-addr)."""
        return SLURM if self.source == SLURM else ",".join(self.hosts)

    def describe(self) -> dict:
        """What the record says of the network: real machines, whose link is what it is."""
        return {"kind": "real cluster", "gbit": None, "delay_ms": None, "fallback": None, "source": self.source,
                "hosts": list(self.hosts), "master_addr": self.master_addr, "node_rank": self.node_rank,
                "rendezvous": self.rendezvous}


def _slurm(env: Mapping[str, str], *names: str) -> str:
    for name in names:
        if env.get(name):
            return env[name]
    raise ConfigError(f"cluster 'slurm' needs the Slurm step's environment ({' or '.join(names)} is not set): run "
                      "`bench run ... --cluster slurm` inside srun (one command per Slurm task)")


def _slurm_name(env: Mapping[str, str], *names: str) -> str:
    """The first of `names` that is set (for a message naming the variable a value came from)."""
    _slurm(env, *names)
    return next(name for name in names if env.get(name))


def slurm_port(env: Mapping[str, str]) -> int:
    """MASTER_PORT, else a port drawn from the job id (every task of the job draws the same), as submitit does."""
    if env.get("MASTER_PORT"):
        return check_port(env["MASTER_PORT"], "MASTER_PORT")
    return random.Random(str(check_slurm_id(_slurm(env, "SLURM_JOB_ID"), "SLURM_JOB_ID"))).randint(*SLURM_PORTS)


def from_slurm(env: Mapping[str, str], nodes: int, rendezvous: str = "static") -> Machines:
    """This Slurm task's view of the run: node rank = its task rank, one host per task (block distribution, as
    Slurm places tasks by default), node 0's host the master; the step must have exactly `nodes` tasks."""
    name = _slurm_name(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    tasks = integer(env[name], name, 1, MAX_HOSTS)
    if tasks != nodes:
        raise ConfigError(f"the Slurm step has {tasks} tasks but the run has nodes={nodes}: one `bench run` per "
                          f"node, so start it with `srun -n {nodes}` (or set --nodes {tasks})")
    hostlist = expand_nodelist(_slurm(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"))
    per_node = expand_tasks_per_node(_slurm(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"))
    hosts = tuple(h for h, n in zip(hostlist, per_node) for _ in range(n))
    if len(hosts) != tasks:
        raise ConfigError(f"the Slurm step's node list {hostlist} with tasks per node {per_node} does not hold "
                          f"its {tasks} tasks")
    job = check_slurm_id(_slurm(env, "SLURM_JOB_ID"), "SLURM_JOB_ID")
    step = env_integer(env, "SLURM_STEP_ID", *SLURM_IDS, default=0)
    return Machines(hosts, check_rank(_slurm(env, "SLURM_PROCID"), tasks, "SLURM_PROCID"), slurm_port(env), rendezvous,
                    f"slurm-{job}.{step}", SLURM)


def resolve(config, node_rank: int | None = None, port: int | None = None, env: Mapping[str, str] | None = None,
            ) -> Machines | None:
    """The machines of `config` (its `cluster` setting) as this machine sees them; None for a run on this machine.
    A host list needs this machine's node rank (argument, or BENCH_NODE_RANK for a sweep's runs); Slurm gives it."""
    env = env or {}
    if not config.cluster:
        return None
    if config.cluster == SLURM:
        if node_rank is not None:
            raise ConfigError("--node-rank is Slurm's to give (SLURM_PROCID) with --cluster slurm: leave it out")
        if port is not None:
            env = {**env, "MASTER_PORT": str(check_port(port, "--master-port"))}
        return from_slurm(env, config.nodes, config.rendezvous)
    hosts = parse_hosts(config.cluster)
    if node_rank is None:
        node_rank = env_integer(env, NODE_RANK_ENV, 0, len(hosts) - 1)
    if node_rank is None:
        raise ConfigError(f"cluster {config.cluster} needs this machine's --node-rank in 0..{len(hosts) - 1} (or "
                          f"{NODE_RANK_ENV})")
    check_rank(node_rank, len(hosts), "--node-rank")
    port = check_port(port, "--master-port") if port is not None else \
        env_integer(env, PORT_ENV, *PORTS, default=DEFAULT_PORT)
    return Machines(hosts, node_rank, port, config.rendezvous, f"dlbench-{config.key}", "hosts")


