"""One TensorFlow task of a distributed run, started with TF_CONFIG by the launcher.

- allreduce: MultiWorkerMirroredStrategy (RING on CPUs, NCCL across nodes on GPUs) or, on one machine's GPUs,
  MirroredStrategy in one process (one replica per GPU, NCCL all-reduce; strategies.py decides) with a custom loop
  (Keras `fit` with MWMS fails, see the tooling notes): per step three tf.functions, timed apart - local
  forward+backward, the gradients' all-reduce across replicas, the SGD-momentum update (on GPUs each after
  sync_devices: the GPU's end, not the host's queueing).
- independent: the same step without the all-reduce (no cluster: each process trains alone, on its own GPU or CPU).
- the cluster: TF_CONFIG from the launcher (this machine, emulated nodes, a host list), or inside Slurm
  SlurmClusterResolver, whose cluster spec and task become this process's TF_CONFIG before any strategy reads it.
  Synchronous workers of MultiWorkerMirrored send their results to worker 0 over the strategy's own collectives
  (all_gather), so the machine of worker 0 writes every worker's result, wherever they ran.
- ps_async: ParameterServerStrategy, asynchronous (Downpour SGD, as the thesis demo): the `ps`
  and `worker` tasks are TensorFlow servers (GPU workers: each on its own GPU, which the chief's strategy finds on the
  remote workers and runs the steps on); the `chief` builds the model, schedules steps with a
  ClusterCoordinator in chunks, and times each chunk (steps run remotely: no per-step phases).
GPU replicas record NVML energy over the timed loop and TensorFlow's allocator peak, per GPU.
With model digits_mlp the data is scikit-learn's digits and test accuracy is recorded over time.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

import numpy as np

from ...errors import UnsupportedError
from ...host.energy import EnergyMeter, energy_meter
from ...host.machines import expand_tasks_per_node
from ...models import get_model
from ...ranks import digits, rankio
from ..base import OPTIMIZER
from ..ranks import GroupFacts, RankGroup, Readings, Replica
from . import strategies
from .recipe import LOSS, import_tf, set_tf_threads
from .strategies import StrategyPlan

if TYPE_CHECKING:  # the task gets its config handed in: adapters sit below bench.config
    from ...config import RunConfig
    from .adapter import TensorFlowAdapter

EVAL_EVERY = 10  # steps between accuracy evaluations (digits runs)


def _tf(threads: int, plan: StrategyPlan):
    """TensorFlow with this task's threads and GPUs set before its runtime starts: a CPU task sees no GPU (a CPU
    config never runs on one), a GPU task only its own (the MirroredStrategy process: all of its replicas')."""
    tf, keras = import_tf()
    threads = set_tf_threads(tf, threads)
    found = tf.config.list_physical_devices("GPU")
    missing = [i for i in plan.visible_gpus if i >= len(found)]
    if missing:  # never a silent CPU run instead
        raise UnsupportedError(f"tensorflow: this task needs GPU(s) {list(plan.visible_gpus)} but TensorFlow sees "
                               f"{len(found)} GPU(s)" + (" (tensorflow-cpu?)" if not found else ""))
    tf.config.set_visible_devices([found[i] for i in plan.visible_gpus], "GPU")
    return tf, keras, threads


class Data:
    """This worker's batches: synthetic images, or its shard of the digits training set."""

    def __init__(self, config, worker: int, workers: int) -> None:
        self.real = config.model == "digits_mlp"
        own = config.for_rank(worker)  # this worker's share of the batch and its own data seed
        n, s = own.batch_size, own.image_size
        if self.real:
            sets = digits.load(channels_last=True, seed=config.seed)
            self.test = sets["test"]
            self._it = digits.batches(*sets["train"], n, worker, workers, config.seed)
        else:
            rng = np.random.default_rng(own.data_seed)
            self._fixed = (rng.standard_normal((n, s, s, 3), dtype=np.float32),
                           rng.integers(0, get_model(config.model).num_classes, n).astype(np.int64))

    def next(self):
        return next(self._it) if self.real else self._fixed


def _accuracy(model, test) -> float:
    x, y = test
    return float(np.mean(np.argmax(model(x, training=False).numpy(), axis=1) == y))


def build_strategy(tf, plan: StrategyPlan):
    """The tf.distribute strategy `plan` names (ParameterServerStrategy is the chief's, built with its resolver)."""
    if plan.strategy == strategies.MIRRORED:  # NCCL between GPUs; devices without NCCL reduce through one of them
        ops = tf.distribute.NcclAllReduce() if plan.communication == "NCCL" else tf.distribute.ReductionToOneDevice()
        return tf.distribute.MirroredStrategy(devices=list(plan.devices), cross_device_ops=ops)
    if plan.strategy == strategies.MULTI_WORKER:
        implementation = getattr(tf.distribute.experimental.CommunicationImplementation, plan.communication)
        return tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(implementation=implementation))
    return tf.distribute.get_strategy()


def _plan(config, role: str, index: int) -> StrategyPlan:
    """This task's plan: its machine-local index is its task index modulo the ranks this machine runs."""
    return strategies.plan(config.strategy, config.device, config.nodes, role, index % config.ranks_here,
                           config.ranks_here)


class ReplicaReadings(Readings):
    """Energy over the timed loop and memory, per replica of this process: each GPU's NVML counter and TensorFlow's
    allocator peak; on CPUs the packages' RAPL counters, read by the machine's first task for all of its tasks."""

    def __init__(self, tf, plan: StrategyPlan, first_on_machine: bool, images: int) -> None:
        self.tf, self.plan, self.images = tf, plan, images
        gpus = plan.visible_gpus
        super().__init__([energy_meter(f"cuda:{i}") for i in gpus] if gpus
                         else [EnergyMeter()] if first_on_machine else [])

    def reset(self) -> None:
        for k in range(len(self.plan.visible_gpus)):
            self.tf.config.experimental.reset_memory_stats(f"GPU:{k}")

    def replica(self, k: int) -> tuple[dict | None, dict | None]:
        """The energy (over its images) and memory of the process's `k`-th replica (None where it reads none)."""
        if k >= len(self.meters):
            return None, None
        if not self.plan.visible_gpus:
            return self.meters[k].result(self.images), None
        peak = self.tf.config.experimental.get_memory_info(f"GPU:{k}")["peak"]
        return (self.meters[k].result(self.images),
                {"peak_bytes": int(peak), "kind": "TensorFlow allocator peak (get_memory_info)"})


class SyncRanks(RankGroup):
    """allreduce (MirroredStrategy or MultiWorkerMirroredStrategy) or independent: this process's replicas (one, or
    one per GPU under MirroredStrategy), each timed per step in three phases."""

    evaluates = True

    def __init__(self, adapter: TensorFlowAdapter, config: RunConfig, task: dict) -> None:
        plan = _plan(config, "worker", task["index"])
        tf, _, threads = _tf(config.threads, plan)
        self.tf, self.config, self.plan = tf, config, plan
        self.sync = sync = config.strategy == "allreduce"
        self.strategy = strategy = build_strategy(tf, plan)
        self.mirrored = mirrored = plan.strategy == strategies.MIRRORED
        self.local = local = len(plan.devices) if mirrored else 1
        self.first, workers = 0 if mirrored else task["index"], config.workers
        self.first_on_machine = task["index"] % config.ranks_here == 0
        gpu = bool(plan.visible_gpus)
        # GPUs queue work: block before a clock read
        self.wait = tf.test.experimental.sync_devices if gpu else (lambda: None)
        # the adapter's workload (same seed on every worker: identical initial weights), built in the strategy's
        # scope so that its variables are the strategy's replicas'
        self.workload = workload = adapter.distributed.prepare_rank(config.for_rank(self.first), scope=strategy.scope)
        self.model = workload.model
        # Keras's optimizer all-reduces the gradients inside apply_gradients; this worker all-reduces
        # them itself, in its own timed phase, so the optimizer is told they are already reduced (the
        # ranks' weights are compared after training: a missing reduction would show as ranks_disagree).
        workload.opt._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)
        self.data = [Data(config, self.first + k, workers) for k in range(local)]
        self.variables = self.model.trainable_variables

        @tf.function
        def allreduce_fn(grads):
            ctx = tf.distribute.get_replica_context()
            # tf.identity places each gradient on this replica's device (the collective's destination)
            return [g / workers for g in ctx.all_reduce(tf.distribute.ReduceOp.SUM, [tf.identity(g) for g in grads])]

        self.grads_fn, self.allreduce_fn, self.apply_fn = workload.gradients, allreduce_fn, workload.apply
        self.run = strategy.run if sync else (lambda f, args: f(*args))
        node, host = _here()
        self.replicas = [Replica(self.first + k, f"cuda:{plan.visible_gpus[k]}" if gpu else "cpu", node=node,
                                 host=host) for k in range(local)]
        params = workload.params
        self.facts = GroupFacts(
            settings={**threads, "strategy": type(strategy).__name__, "communication": plan.communication,
                      "replicas_in_process": local, "optimizer": OPTIMIZER, "loss": LOSS},
            params=params, grad_bytes=params * 4, samples_per_step=config.worker_batch, threads=threads,
            backend=plan.communication.lower() if plan.communication else None)

    def _batch(self):
        batches = [d.next() for d in self.data]
        if not self.mirrored:
            return batches[0]
        # each replica its own shard: replica k of this process gets data[k]
        pick = lambda i: lambda ctx: batches[ctx.replica_id_in_sync_group][i]  # noqa: E731
        return (self.strategy.experimental_distribute_values_from_function(pick(0)),
                self.strategy.experimental_distribute_values_from_function(pick(1)))

    def step(self) -> dict:
        run, wait = self.run, self.wait
        x, y = self._batch()
        wait()
        t0 = time.perf_counter()
        loss, grads = run(self.grads_fn, args=(x, y))
        wait()
        t1 = time.perf_counter()
        if self.sync:
            grads = run(self.allreduce_fn, args=(grads,))
            wait()
        t2 = time.perf_counter()
        run(self.apply_fn, args=(grads,))
        wait()
        t3 = time.perf_counter()
        losses = [float(v) for v in self.strategy.experimental_local_results(loss)]
        return {"start": t0, "end": t3, "step_s": t3 - t0, "forward_backward_s": t1 - t0,
                "comm_s": t2 - t1, "exposed_comm_s": t2 - t1, "overlap_s": 0.0, "update_s": t3 - t2,
                "loss": sum(losses) / len(losses)}

    def checksums(self) -> list[float | None]:
        """Each local replica's copy of the weights (MirroredStrategy: one per GPU)."""
        parts = [self.strategy.experimental_local_results(v.value) for v in self.variables]  # Keras's tf.Variable
        return [float(sum(np.abs(p[k].numpy()).sum() for p in parts)) for k in range(self.local)]

    def readings(self) -> ReplicaReadings:
        # a GPU's reading covers its replica's images; the CPUs' covers every task on this machine
        images = self.config.worker_batch * self.config.iterations * (1 if self.plan.visible_gpus
                                                                      else self.config.ranks_here)
        return ReplicaReadings(self.tf, self.plan, self.first_on_machine, images)

    def evaluate(self, steps_done: int) -> dict | None:
        if not (self.data[0].real and self.first == 0 and steps_done % EVAL_EVERY == 0):
            return None
        return {"steps": steps_done, "accuracy": _accuracy(self.model, self.data[0].test)}

    def gather(self, results: list[dict]) -> list[dict]:
        if self.sync and not self.mirrored:  # MultiWorkerMirrored: every worker's result to worker 0, wherever it ran
            return _gather(self.tf, self.strategy, results[0])
        return results


def _here() -> tuple[int, str]:
    """Where this task ran: its node of the run (the launcher's BENCH_NODE) and its machine."""
    return int(os.environ.get("BENCH_NODE", 0)), os.uname().nodename


def _gather(tf, strategy, result: dict) -> list[dict]:
    """Every worker's result on worker 0 (the others get []): each one's JSON as bytes, all-gathered with
    the strategy's collective (unequal lengths padded by TensorFlow), then cut at the gathered lengths."""
    payload = np.frombuffer(json.dumps(result).encode(), dtype=np.uint8).astype(np.int32)
    ctx = lambda: tf.distribute.get_replica_context()  # noqa: E731 - the replica's context inside strategy.run
    lengths = strategy.run(tf.function(lambda: ctx().all_gather(tf.constant([len(payload)]), axis=0)))
    joined = strategy.run(tf.function(lambda: ctx().all_gather(tf.constant(payload), axis=0)))
    if result["rank"] != 0:
        return []
    data, out, start = joined.numpy().astype(np.uint8).tobytes(), [], 0
    for n in lengths.numpy().tolist():
        out.append(json.loads(data[start:start + n]))
        start += n
    return out


def _resolve_cluster() -> None:
    """Inside Slurm (the launcher says so): this task's TF_CONFIG from SlurmClusterResolver, one Slurm task per TF
    task, ports from port_base on each host."""
    slurm = os.environ.get(rankio.TF_SLURM_ENV)
    if not slurm:
        return
    tf, _ = import_tf()  # threads and GPUs are set once this task's role is known (_tf, in the task itself)
    spec = json.loads(slurm)
    per_host = max(expand_tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE") or
                                         os.environ.get("SLURM_TASKS_PER_NODE") or "1"))
    # CPU tasks: the resolver pairs each task with GPU ids while it builds the spec (with 0 GPUs it places no task);
    # one nominal id per task, never applied (auto_set_gpu=False leaves CUDA_VISIBLE_DEVICES alone)
    resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
        jobs=spec["jobs"], port_base=spec["port_base"], gpus_per_node=per_host, gpus_per_task=1, auto_set_gpu=False)
    cluster = resolver.cluster_spec().as_dict()
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": resolver.task_type,
                                                                      "index": resolver.task_id}})


def _serve(config, task: dict, threads: int) -> None:
    """A ps or worker task of ParameterServerStrategy: a TF server until the launcher stops it (a worker on its own
    GPU where the run is on GPUs: the chief's steps run there)."""
    tf, _, _ = _tf(threads, _plan(config, task["type"], task["index"]))
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=task["type"], task_index=task["index"],
                                  protocol="grpc", start=True)
    server.join()


class ChiefRanks(RankGroup):
    """The coordinator of asynchronous parameter-server training: one "step" is a chunk of scheduled steps, timed as
    a whole (the steps run remotely, on the workers, as scheduled: no per-step phases)."""

    evaluates = True

    def __init__(self, adapter: TensorFlowAdapter, config: RunConfig) -> None:
        tf, _, threads = _tf(1, _plan(config, "chief", 0))
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        self.coordinator = coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        # the adapter's workload, its variables the parameter server's (built in the strategy's scope)
        workload = adapter.distributed.prepare_rank(config, scope=strategy.scope)
        model, opt, loss_fn = workload.model, workload.opt, workload.loss_fn
        self.model = model
        n = config.worker_batch
        self.real = real = config.model == "digits_mlp"
        self.sets = sets = digits.load(channels_last=True, seed=config.seed) if real else None

        def dataset_fn(_context=None):
            if real:
                x, y = sets["train"]
                ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(y), seed=config.seed).repeat()
            else:
                rng = np.random.default_rng(config.seed)
                s = config.image_size
                x = rng.standard_normal((n, s, s, 3), dtype=np.float32)
                y = rng.integers(0, get_model(config.model).num_classes, n).astype(np.int64)
                ds = tf.data.Dataset.from_tensors((x, y)).repeat().unbatch()
            return ds.batch(n, drop_remainder=True).prefetch(2)

        self.iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
        self.variables = variables = model.trainable_variables

        @tf.function
        def train_step(it):
            def replica(x, y):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
                return loss

            x, y = next(it)
            return strategy.run(replica, args=(x, y))

        self.train_step = train_step
        self.chunk = chunk = config.workers * EVAL_EVERY  # steps per chunk: EVAL_EVERY per worker on average
        node, host = _here()
        self.replicas = [Replica(0, None, "chief", node, host)]
        params = int(sum(np.prod(v.shape) for v in variables))
        # the chief's own threads are not the workers' (TF servers): no threads for the certificate to compare
        self.facts = GroupFacts(
            settings={"strategy": "ParameterServerStrategy (asynchronous)",
                      "schedule": f"chunks of {chunk} steps scheduled with ClusterCoordinator, then join()",
                      "optimizer": OPTIMIZER, "optimizer_placement": "on the parameter server", "loss": LOSS},
            params=params, grad_bytes=params * 4, backend=None, threads=threads, samples_per_step=n)

    def counts(self, warmup: int, iterations: int) -> tuple[int, int]:
        return max(1, warmup // EVAL_EVERY), max(1, -(-iterations // EVAL_EVERY))  # iterations = steps per worker

    def step(self) -> dict:
        """A chunk; one "global step" = one step per worker on average: EVAL_EVERY of them per chunk."""
        t0 = time.perf_counter()
        for _ in range(self.chunk):
            self.coordinator.schedule(self.train_step, args=(self.iterator,))
        self.coordinator.join()
        return {"step_s": (time.perf_counter() - t0) / EVAL_EVERY}

    def checksums(self) -> list[float | None]:
        return [float(sum(np.abs(v.numpy()).sum() for v in self.variables))]

    def evaluate(self, steps_done: int) -> dict | None:
        if not self.real:
            return None
        return {"steps": steps_done * EVAL_EVERY, "accuracy": _accuracy(self.model, self.sets["test"])}


def rank_group(adapter: TensorFlowAdapter, config: RunConfig, spec: dict) -> RankGroup | None:
    """This process's TF_CONFIG task of `config`: a server (ps_async's ps and workers: None once stopped), the
    asynchronous chief, or training workers."""
    _resolve_cluster()
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task") or {"type": "worker", "index": 0}
    if config.strategy == "ps_async" and task["type"] in ("ps", "worker"):
        _serve(config, task, config.threads if task["type"] == "worker" else 1)
        return None
    if config.strategy == "ps_async":
        return ChiefRanks(adapter, config)
    return SyncRanks(adapter, config, task)
