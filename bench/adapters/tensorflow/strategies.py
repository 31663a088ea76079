"""Which tf.distribute strategy a TensorFlow task builds, on which devices, with which collectives.

Decided from the run's strategy, device and this machine's GPUs without importing TensorFlow, so the choice is
tested without a GPU (tests/gpu/test_gpu_paths.py); the worker (worker.py) builds what the plan names.

- allreduce on CPUs: MultiWorkerMirroredStrategy, one process per worker, RING collectives over gRPC.
- allreduce on the GPUs of one machine: MirroredStrategy in one process over all of them (one replica per GPU,
  NCCL all-reduce between them); the launcher starts that one process ("local_devices").
- allreduce across nodes on GPUs: MultiWorkerMirroredStrategy with NCCL collectives, one process per GPU.
- independent: TensorFlow's default strategy, each process on its own GPU (or the CPU).
- ps_async: ParameterServerStrategy; its workers are TensorFlow servers, each on its own GPU; the parameter server
  and the coordinating chief stay on the CPU (variables live on the server, steps run on the workers' GPUs).
"""

from __future__ import annotations

from typing import NamedTuple

from ...host.devices import is_gpu

MIRRORED = "MirroredStrategy"
MULTI_WORKER = "MultiWorkerMirroredStrategy"
PARAMETER_SERVER = "ParameterServerStrategy"
DEFAULT = "default"


class StrategyPlan(NamedTuple):
    strategy: str  # the tf.distribute class to build (DEFAULT: no distribution, TensorFlow's default strategy)
    communication: str | None  # MWMS's CommunicationImplementation (RING, NCCL); MirroredStrategy's NCCL all-reduce
    devices: tuple[str, ...]  # the replicas' TensorFlow devices in this process, after `visible_gpus` took effect
    visible_gpus: tuple[int, ...]  # the machine's GPUs this process makes visible (none: a CPU task sees no GPU)


def local_devices(strategy: str, device: str, nodes: int) -> bool:
    """Whether the run is one process over the machine's GPUs (MirroredStrategy) rather than a process per task."""
    return strategy == "allreduce" and is_gpu(device) and nodes == 1


def gpu_refusal(strategy: str, ranks_here: int, gpu_count: int) -> str | None:
    """Why `ranks_here` GPU workers cannot run on `gpu_count` GPUs: every layout gives each worker a GPU of its own
    (NCCL refuses two replicas on one GPU, and TensorFlow processes sharing one would each claim all its memory)."""
    if ranks_here <= gpu_count:
        return None
    layout = "MirroredStrategy replicas" if strategy == "allreduce" else "workers"
    return (f"tensorflow {strategy} puts each of its {layout} on a GPU of its own: {ranks_here} workers on this "
            f"machine need {ranks_here} GPUs, it has {gpu_count}; valid here: workers 1 to {gpu_count} per machine, "
            "or device cpu")


def plan(strategy: str, device: str, nodes: int, role: str, local_index: int, workers_here: int) -> StrategyPlan:
    """What the task `role` (worker, ps, chief) with machine-local index `local_index` builds."""
    gpu = is_gpu(device)
    if strategy == "ps_async":
        if role == "chief":
            return StrategyPlan(PARAMETER_SERVER, None, (), ())
        on_gpu = gpu and role == "worker"
        return StrategyPlan(PARAMETER_SERVER, None, ("/gpu:0",) if on_gpu else ("/cpu:0",),
                            (local_index,) if on_gpu else ())
    if strategy == "independent":
        return StrategyPlan(DEFAULT, None, ("/gpu:0",) if gpu else ("/cpu:0",), (local_index,) if gpu else ())
    if strategy != "allreduce":
        raise ValueError(f"invalid strategy {strategy!r} for tensorflow; valid choices: independent, allreduce, "
                         "ps_async")
    if local_devices(strategy, device, nodes):
        return StrategyPlan(MIRRORED, "NCCL", tuple(f"/gpu:{i}" for i in range(workers_here)),
                            tuple(range(workers_here)))
    if gpu:
        return StrategyPlan(MULTI_WORKER, "NCCL", ("/gpu:0",), (local_index,))
    return StrategyPlan(MULTI_WORKER, "RING", ("/cpu:0",), ())
