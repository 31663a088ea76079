"""A framework's distributed runs, apart from what every framework declares: the strategies it implements, how its
ranks start and join, and the rank groups its worker module builds.

An adapter names its class (`Adapter.distributed_runs`) and reaches the instance as `adapter.distributed`. A framework
without distributed runs keeps this base: no strategies, and every launch refused, so no caller asks first whether a
framework has them. Every rank runs bench.runs.distributed.rank_main, which runs `rank_group` through the one rank
loop (bench/runs/distributed/rank_loop.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..errors import UnsupportedError
from .launch import LOCAL_DEVICES, LaunchPlan, Node
from .ranks import RankGroup
from .workload import Workload

if TYPE_CHECKING:
    from ..config import RunConfig
    from .base import Adapter


class DistributedRuns:
    """What a framework's distributed runs are and how they start; bound to its adapter."""

    # The strategies this framework implements (bench/strategies/) and the kind of launch its ranks take (recorded;
    # `launch_plan` says what starts).
    strategies: ClassVar[tuple[str, ...]] = ()
    launch: ClassVar[str | None] = None
    # The rendezvous its ranks can join at a master address on real machines (--master-addr, the `rendezvous`
    # setting); none: its tasks are given every address instead.
    rendezvous_kinds: ClassVar[tuple[str, ...]] = ()
    # Its ranks choose their collective backend (the `backend` setting) and are placed on GPUs by
    # bench.host.devices.rank_placement; False: its collectives and GPU layouts are its own (gpu_layout_refusal).
    chooses_backend: ClassVar[bool] = False
    # Independent workers still connect (to gather their results on one machine); False: they never do, so an
    # independent run cannot span machines.
    independent_workers_connect: ClassVar[bool] = True
    # The module run as each rank of the link micro-benchmark (the reference framework's collectives: all-reduce and
    # ping-pong timed per message size, for the alpha-beta fit of every link).
    link_probe_worker: ClassVar[str | None] = None
    # Real machines (not only emulated nodes): this framework's ranks join a rendezvous given on the command line.
    multi_machine: ClassVar[bool] = False
    # Its all-reduce sends gradients in buckets of `bucket_mb` (DDP): the setting is part of its distributed label.
    bucketed_allreduce: ClassVar[bool] = False
    # Its ranks' collectives, where they are its own rather than the link probe's (gloo, whose fit the scaling
    # model uses): the report says so beside a prediction.
    own_collectives: ClassVar[str] = ""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter

    @property
    def name(self) -> str:
        return self.adapter.name

    def launch_for(self, strategy: str, device: str, nodes: int) -> str | None:
        """The kind of launch a distributed run of `strategy` on `device` over `nodes` takes: `launch`, or
        LOCAL_DEVICES (one process whose replicas, one per local device, are the workers) where the framework runs
        that layout in one process (TensorFlow's MirroredStrategy on GPUs, JAX over its devices)."""
        return self.launch

    def workers_in_one_process(self, strategy: str, device: str, nodes: int) -> bool:
        """Whether the workers of this layout are the devices of one process (so the run stays on one machine)."""
        return self.launch_for(strategy, device, nodes) == LOCAL_DEVICES

    def slurm_tasks(self, strategy: str, workers: int) -> int | None:
        """How many Slurm tasks a run of `workers` needs where each of its tasks is a Slurm task of its own
        (TensorFlow's SlurmClusterResolver layout); None: one Slurm task per machine (a node of the run)."""
        return None

    def launch_plan(self, config: RunConfig, module: str, env: dict, nodes: Sequence[Node] | None,
                    cluster) -> LaunchPlan:
        """The processes this machine starts for the distributed run `config`, each running `module` with `env`:
        on `nodes` (emulated nodes; None: this machine) or, on real machines, this machine's share of `cluster`
        (bench.runs.distributed.cluster.Machines). Raises LaunchError for a layout it cannot start."""
        raise UnsupportedError(f"{self.name} has no distributed runs")

    def pipeline_smoke(self, config: RunConfig, cache_dir: Path) -> dict | None:
        """The smoke test a pipeline schedule passed or failed before it is offered on this device (cached per
        framework version in `cache_dir`, the host's results folder; run now if not cached): {"passed", "reason",
        ...}; None where the schedule needs none."""
        return None

    def gpu_layout_refusal(self, strategy: str, ranks_here: int, nodes: int, gpu_count: int) -> str | None:
        """Why `ranks_here` GPU workers of `strategy` on a machine with `gpu_count` GPUs cannot run (None: they can).
        torchrun ranks are judged by bench.host.devices.rank_placement; a framework with other GPU layouts says."""
        return f"{self.name} has no distributed GPU runs; valid choice: cpu"

    def pipeline_cut_refusal(self, config: RunConfig) -> str | None:
        """Why `config`'s given pipeline_cut does not cut its model's units into its stages (None: it does, or this
        framework has no pipelines), checked before any work."""
        return None

    def prepare_rank(self, config: RunConfig, scope: Callable[[], AbstractContextManager] | None = None) -> Workload:
        """The Workload one rank of a distributed run trains: `config` is the rank's (RunConfig.for_rank: its share
        of the batch, its data seed, its device); `scope` is where the strategy has the model built (TensorFlow's
        strategy.scope: the variables become the strategy's), None where the strategy wraps it afterwards."""
        return self.adapter.prepare(config)

    def rank_group(self, config: RunConfig, spec: dict) -> RankGroup | None:
        """This process's ranks of the distributed run `config` (`spec`: bench/ranks/rankio.py), prepared for the one
        rank loop (bench/runs/distributed/rank_loop.py); None for a task that only serves until the run ends. The
        framework code lives in the adapter's worker module."""
        raise UnsupportedError(f"{self.name} has no distributed runs")
