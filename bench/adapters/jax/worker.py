"""JAX data parallel over one process's devices: the workers are the devices of a 1-D mesh ("data").

- allreduce: every device holds a replica of the weights and trains on its own shard of the global batch; inside
  the one jitted step (shard_map over the mesh, arrays placed with NamedSharding) the gradients and the BatchNorm
  statistics are averaged over the mesh with lax.pmean (XLA's all-reduce), and every replica applies the same
  SGD-momentum update, so the replicas stay identical (their checksums are compared like DDP ranks').
- independent: the same step without the pmean: each device trains alone (the no-communication baseline).

The step is one compiled program, so its communication is not timed apart: the scaling table's communication cost
is allreduce minus independent at the same number of devices. On CPUs the devices are XLA host devices
(--xla_force_host_platform_device_count, set before JAX starts) sharing the process's cores: a CPU row checks the
data-parallel path, it is not hardware scaling. On GPUs each worker is a GPU; each GPU's NVML energy over the timed
loop and its allocator peak are recorded per rank.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from ...errors import UnsupportedError
from ...host.devices import is_gpu
from ...host.energy import EnergyMeter, energy_meter
from ...models import get_model
from ...ranks import rankio
from ..base import OPTIMIZER
from ..ranks import GroupFacts, RankGroup, Readings, Replica
from .training import LOSS, POLICIES, import_jax, sgd_momentum

if TYPE_CHECKING:
    from ...config import RunConfig
    from ..base import Adapter, Workload

HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
AXIS = "data"
EXCHANGES = {"independent": "no gradient exchange",
             "allreduce": "lax.pmean of the gradients and BatchNorm statistics over the mesh (XLA all-reduce)"}


def host_device_flags(flags: str, count: int) -> str:
    """XLA_FLAGS asking for `count` CPU host devices (any count already there replaced, other flags kept)."""
    kept = [f for f in flags.split() if not f.startswith(HOST_DEVICES_FLAG)]
    return " ".join([*kept, f"{HOST_DEVICES_FLAG}={count}"])


def gpu_refusal(ranks_here: int, gpu_count: int) -> str | None:
    """Why `ranks_here` GPU workers cannot run on `gpu_count` GPUs: each worker is one device of the mesh."""
    if ranks_here <= gpu_count:
        return None
    return (f"jax data parallel makes each worker one GPU of the mesh: {ranks_here} workers need {ranks_here} GPUs, "
            f"this machine has {gpu_count}; valid here: workers 1 to {gpu_count}, or device cpu")


def mesh_devices(jax, config: RunConfig) -> list:
    """The workers' devices: the first `workers` GPUs, or CPU host devices; UnsupportedError when there are fewer."""
    kind = "gpu" if is_gpu(config.device) else "cpu"
    try:
        found = jax.devices(kind)
    except RuntimeError:  # no such backend in this JAX (a CPU-only jaxlib asked for GPUs)
        found = []
    if len(found) < config.workers:
        raise UnsupportedError(f"jax: {config.workers} workers need {config.workers} {kind} devices, JAX sees "
                               f"{len(found)}" + (f" (XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})"
                                                  if kind == "cpu" else ""))
    return found[:config.workers]


class MeshTrainer:
    """The workers' replicas stacked along the mesh axis (leading dimension = device) and their jitted step."""

    def __init__(self, jax, workload: Workload, config: RunConfig, devices: list) -> None:
        """`workload`: the adapter's (JaxWorkload), whose model, loss and initial weights every replica starts from."""
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        self.jax, self.config, self.devices = jax, config, devices
        self.params = workload.params
        n = len(devices)
        self.mesh = Mesh(np.array(devices), (AXIS,))
        sharded = NamedSharding(self.mesh, P(AXIS))
        stack = lambda arrays: [jax.device_put(np.stack([np.asarray(a)] * n), sharded) for a in arrays]
        self.trainable = stack(workload.trainable)
        self.state = stack(workload.non_trainable)
        self.velocity = [jax.numpy.zeros_like(p) for p in self.trainable]
        # each worker its own shard: the data seed of its rank (RunConfig.for_rank), as the other frameworks' ranks
        shards = [self._batch(config.for_rank(k)) for k in range(n)]
        self.x = jax.device_put(np.stack([x for x, _ in shards]), sharded)
        self.y = jax.device_put(np.stack([y for _, y in shards]), sharded)
        self.step_fn = self._compile(workload.loss, config.strategy == "allreduce", P(AXIS))
        self.out = None

    @staticmethod
    def _batch(rank_config: RunConfig) -> tuple[np.ndarray, np.ndarray]:
        n, s = rank_config.batch_size, rank_config.image_size
        rng = np.random.default_rng(rank_config.data_seed)
        return (rng.standard_normal((n, s, s, 3), dtype=np.float32),
                rng.integers(0, get_model(rank_config.model).num_classes, n).astype(np.int32))

    def _compile(self, loss, sync: bool, spec):
        jax = self.jax
        lax, jnp = jax.lax, jax.numpy
        grad = jax.value_and_grad(loss, has_aux=True)
        mean = lambda a: lax.pmean(a, AXIS) if jnp.issubdtype(a.dtype, jnp.floating) else a

        def local(trainable, state, velocity, x, y):  # one device's block: leading dimension 1
            first = lambda arrays: [a[0] for a in arrays]
            (value, updated), grads = grad(first(trainable), first(state), x[0], y[0])
            if sync:  # the all-reduce: every replica gets the mean gradient and the mean statistics
                grads, updated, value = [mean(g) for g in grads], [mean(u) for u in updated], mean(value)
            new, velocity = sgd_momentum(first(trainable), grads, first(velocity))
            lift = lambda arrays: [a[None] for a in arrays]
            return lift(new), lift(updated), lift(velocity), value[None]

        shard_map = getattr(jax, "shard_map", None)
        if shard_map is None:  # JAX before 0.6: the experimental module
            from jax.experimental.shard_map import shard_map
        mapped = shard_map(local, mesh=self.mesh, in_specs=(spec,) * 5, out_specs=(spec,) * 4)
        return jax.jit(mapped, donate_argnums=(0, 1, 2))

    def step(self) -> dict:
        t0 = time.perf_counter()
        self.trainable, self.state, self.velocity, loss = self.step_fn(self.trainable, self.state, self.velocity,
                                                                       self.x, self.y)
        self.jax.block_until_ready((self.trainable, loss))
        t1 = time.perf_counter()
        return {"start": t0, "end": t1, "step_s": t1 - t0, "loss": float(np.mean(np.asarray(loss)))}

    def checksums(self) -> list[float]:
        """Each replica's sum of |weights| (replica k = slice k of every stacked array)."""
        host = [np.abs(np.asarray(p, dtype=np.float64)) for p in self.trainable]
        return [float(sum(a[k].sum() for a in host)) for k in range(len(self.devices))]


def _device_memory(device) -> dict | None:
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if not stats or "peak_bytes_in_use" not in stats:
        return None
    return {"peak_bytes": int(stats["peak_bytes_in_use"]),
            "kind": "XLA allocator peak of the device since the process started (memory_stats)"}


class MeshReadings(Readings):
    """Per GPU its NVML counter and its allocator peak; CPU host devices share the packages' RAPL counters: one
    reading, on rank 0."""

    def __init__(self, devices: list, gpu: bool, images: int) -> None:
        self.devices, self.gpu, self.images = devices, gpu, images
        super().__init__([energy_meter(f"cuda:{d.id}") for d in devices] if gpu else [EnergyMeter()])

    def replica(self, k: int) -> tuple[dict | None, dict | None]:
        if not self.gpu:
            return (self.meters[0].result(self.images * len(self.devices)) if k == 0 else None), None
        return self.meters[k].result(self.images), _device_memory(self.devices[k])


class MeshRanks(RankGroup):
    """The one process of a JAX data-parallel run: every worker is one of its devices."""

    def __init__(self, adapter: Adapter, config: RunConfig) -> None:
        gpu = is_gpu(config.device)
        if not gpu:  # CPU workers are XLA host devices: asked for before JAX starts, or JAX would have one
            if "jax" in sys.modules:
                raise UnsupportedError("jax: already imported in this process; its host device count is fixed")
            os.environ["XLA_FLAGS"] = host_device_flags(os.environ.get("XLA_FLAGS", ""), config.workers)
        jax, keras = import_jax(config.threads * config.workers)
        self.config, self.gpu = config, gpu
        self.devices = devices = mesh_devices(jax, config)
        # the adapter's workload as rank 0 prepares it: the model, loss and weights every replica starts from
        self.workload = adapter.distributed.prepare_rank(config.for_rank(0, self.replica_device(0)))
        self.trainer = MeshTrainer(jax, self.workload, config, devices)
        self.replicas = [Replica(k, f"cuda:{d.id}" if gpu else str(d)) for k, d in enumerate(devices)]
        settings = mesh_settings(keras, config, devices)
        params = self.trainer.params
        self.facts = GroupFacts(settings=settings, params=params, grad_bytes=params * 4,
                                backend="xla" if config.strategy == "allreduce" else None,
                                threads=settings["intra_op_threads"], samples_per_step=config.worker_batch,
                                input_placement={"location": "gpu" if gpu else "cpu", "fresh_per_step": False})

    def replica_device(self, k: int) -> str:
        return f"cuda:{self.devices[k].id}" if self.gpu else "cpu"

    def step(self) -> dict:
        return self.trainer.step()

    def checksums(self) -> list[float | None]:
        return self.trainer.checksums()

    def readings(self) -> MeshReadings:
        return MeshReadings(self.devices, self.gpu, self.config.worker_batch * self.config.iterations)

    def finish(self) -> None:
        rankio.exit_now()


def mesh_settings(keras, config: RunConfig, devices: list) -> dict:
    """What the certificate reads of a mesh run: the threads each device gets, the engine, the recipe."""
    gpu = is_gpu(config.device)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "intra_op_threads": cores // len(devices) if cores else None,
        "threads_how": f"the process's CPU affinity ({cores} cores, read back) shared by its {len(devices)} devices",
        "layout": "NHWC (Keras default)",
        "engine": f"jax.jit of shard_map over a {len(devices)}-device mesh, Keras stateless_call + value_and_grad "
                  "+ SGD-momentum",
        "mesh": f"Mesh({len(devices)} x {devices[0].platform}, axis {AXIS!r}), NamedSharding of the replicas",
        "keras_backend": keras.backend.backend(), "data_placement": config.data,
        "inside_timer": f"one jitted step: forward + cross-entropy + value_and_grad + "
                        f"{EXCHANGES[config.strategy]} + SGD-momentum update",
        "dtype_policy": POLICIES[config.precision], "optimizer": OPTIMIZER, "loss": LOSS,
        "timer": "time.perf_counter after jax.block_until_ready",
        "host_devices": None if gpu else "XLA host devices sharing the CPU cores: a functional check, not scaling",
    }
