"""One PyTorch rank (started by torchrun): the adapter's training workload, its gradients exchanged by a strategy.

Strategies
- independent: no communication (each rank trains alone): the baseline for communication cost.
- allreduce: DistributedDataParallel (gloo on CPUs; NCCL with a GPU per rank, or gloo over CUDA tensors when ranks
  share a GPU), gradient buckets of `bucket_mb`; a communication hook times each bucket's all-reduce (perf_counter
  on CPUs, CUDA events on GPUs), so overlap with backward is measured.
- allreduce_nosync: DDP's `no_sync()` for the whole backward, then one explicit all-reduce of the
  flattened gradients: what overlap buys, by its absence.
- ps_sync: synchronous parameter server on rank 0 (which also trains, as SINGA's first GPU did):
  every rank's gradients are gathered to rank 0, rank 0 updates, parameters are broadcast back.

All ranks run the same fixed number of warm-up and timed steps (no rank decides alone when to
stop), between barriers; each writes rank<r>.json with per-step phase times.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

from ...host.devices import is_gpu, rank_placement
from ...host.energy import energy_meter
from ...ranks import rankio
from ...ranks.timeline import step_phases
from ..ranks import GroupFacts, RankGroup, Readings, Replica

if TYPE_CHECKING:  # the rank gets its config and workload handed in: adapters sit below bench.config
    from ...config import RunConfig
    from .adapter import TorchAdapter, TorchWorkload

# What each strategy puts inside the timed step besides the workload's own step (for the record's settings).
EXCHANGES = {
    "independent": "no gradient exchange",
    "allreduce": "DDP's bucketed all-reduce overlapping the backward",
    "allreduce_nosync": "one all-reduce of the flat gradients after the backward",
    "ps_sync": "gradients gathered to rank 0, its update, parameters broadcast back",
}


class HostClock:
    """CPU ranks' timestamps: perf_counter seconds, the timeline's axis. A mark is a timestamp."""

    def begin(self) -> float:
        return time.perf_counter()

    def mark(self) -> float:
        return time.perf_counter()

    def end(self) -> float:
        return time.perf_counter()

    def at(self, mark: float) -> float:
        return mark

    def seconds(self, spans: list) -> list[tuple[float, float]]:
        return list(spans)


class CudaEventClock:
    """GPU ranks' timestamps. Host time says when work was queued, not done: a mark is a CUDA event recorded on the
    rank's stream, placed on the host's perf_counter axis by its distance from a reference event recorded when the
    step began on an idle (synchronised) GPU. The device is synchronised only where the step's own time is read, at
    its start and end: a synchronisation between forward, backward and update would stall the queue of kernels that
    a step without the clock keeps full (phase boundaries are events, read after the end)."""

    def __init__(self, cuda, device, host: Callable[[], float] = time.perf_counter) -> None:
        self.cuda, self.device, self.host = cuda, device, host
        self.ref, self.t0 = None, 0.0

    def _event(self):
        event = self.cuda.Event(enable_timing=True)
        event.record()
        return event

    def begin(self) -> float:
        self.cuda.synchronize(self.device)
        self.ref, self.t0 = self._event(), self.host()
        return self.t0

    def mark(self):
        return self._event()

    def end(self) -> float:
        """The step's end: every kernel queued so far has run (and the marks can be read)."""
        self.cuda.synchronize(self.device)
        return self.host()

    def at(self, mark) -> float:
        """A mark's time on the host's axis (after `end`: elapsed_time needs both events complete)."""
        return self.t0 + self.ref.elapsed_time(mark) / 1e3

    def seconds(self, spans: list) -> list[tuple[float, float]]:
        return [(self.at(a), self.at(b)) for a, b in spans]


class Placement(NamedTuple):
    device: str
    backend: str
    measures_energy: bool  # a GPU rank with a GPU of its own, or the first of the ranks sharing a GPU or the CPUs


def rank_device(config: RunConfig, env: dict, cuda) -> Placement:
    """This rank's device and collective backend: its GPU from LOCAL_RANK (plus the launcher's base on emulated nodes)
    and the GPUs this process sees, or the CPU over gloo. Raises ValueError with the reason for what cannot run."""
    local = int(env.get("LOCAL_RANK", 0)) + int(env.get(rankio.GPU_BASE_ENV, 0))
    ranks_here = int(env.get(rankio.MACHINE_RANKS_ENV, env.get("LOCAL_WORLD_SIZE", 1)))
    gpu_count = cuda.device_count() if is_gpu(config.device) else 0
    device, backend = rank_placement(config.device, local, ranks_here, gpu_count, config.backend)
    # ranks sharing a GPU would each read the whole GPU's energy, CPU ranks the same packages: one of them measures it
    return Placement(device, backend, local == 0 or (is_gpu(device) and ranks_here <= gpu_count))


def make_clock(device: str, cuda) -> HostClock | CudaEventClock:
    return CudaEventClock(cuda, device) if is_gpu(device) else HostClock()


class Trainer:
    """A rank's training step: the workload's parts (`TorchWorkload.zero_grad/forward/backward/update`) around the
    strategy's communication, each timed."""

    def __init__(self, workload: TorchWorkload, dist, config: RunConfig, rank: int, world: int) -> None:
        self.workload, self.dist, self.config, self.rank, self.world = workload, dist, config, rank, world
        module = workload.module
        self.clock = make_clock(str(workload.device), self.torch.cuda)  # the rank's own device
        self.spans: list = []  # the clock's marks (start, end) of each communication
        self.bucket_bytes: list[int] = []
        self.ddp = None
        if config.strategy in ("allreduce_nosync", "ps_sync"):
            self._flat_views(module)  # before DDP: it must see the parameters it will train
        if config.strategy in ("allreduce", "allreduce_nosync"):
            workload.wrap(self._ddp)
        elif config.strategy == "ps_sync":
            dist.broadcast(self.flat_p, src=0)
            self.gathered = [self.torch.empty_like(self.flat_g) for _ in range(world)] if rank == 0 else None
        self.grad_bytes = sum(p.numel() * p.element_size() for p in module.parameters())

    @property
    def torch(self):
        return self.workload.torch

    def _ddp(self, module):
        """DistributedDataParallel over `module`, gradient buckets of `bucket_mb`, each bucket's all-reduce timed."""
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        self.ddp = self.torch.nn.parallel.DistributedDataParallel(module, bucket_cap_mb=self.config.bucket_mb)
        self.ddp.register_comm_hook(None, self._timed_allreduce(default_hooks.allreduce_hook))
        return self.ddp

    def _timed_allreduce(self, hook: Callable) -> Callable:
        def timed(state, bucket):
            t0 = self.clock.mark()  # on a GPU: when the bucket's gradients are ready on the stream
            nbytes = bucket.buffer().numel() * bucket.buffer().element_size()

            def done(fut):  # on a GPU the callback's stream waits for the all-reduce: its mark is the end
                self.spans.append((t0, self.clock.mark()))
                self.bucket_bytes.append(nbytes)
                return fut.value()

            return hook(state, bucket).then(done)

        return timed

    def _flat_views(self, model) -> None:
        """Parameters and gradients become views into two flat buffers (same strides, so channels_last
        weights stay channels_last): one message per exchange, sent and received in place, no copies."""
        torch = self.torch
        params = list(model.parameters())
        total = sum(p.numel() for p in params)
        device = params[0].device  # a GPU rank's buffers live on its GPU (NCCL sends device memory only)
        self.flat_p, self.flat_g = torch.empty(total, device=device), torch.zeros(total, device=device)
        offset = 0
        with torch.no_grad():
            for p in params:
                view = self.flat_p.as_strided(p.shape, p.stride(), offset)
                view.copy_(p)
                p.data = view
                p.grad = self.flat_g.as_strided(p.shape, p.stride(), offset)
                offset += p.numel()

    def step(self) -> dict:
        dist, strategy, workload, clock = self.dist, self.config.strategy, self.workload, self.clock
        self.spans, self.bucket_bytes = [], []
        t0 = clock.begin()
        workload.zero_grad()
        nosync = self.ddp.no_sync() if strategy == "allreduce_nosync" else contextlib.nullcontext()
        with nosync:
            loss = workload.forward()
            m_f = clock.mark()
            workload.backward(loss)
        m_b = clock.mark()
        if strategy == "allreduce_nosync":
            c0 = clock.mark()
            dist.all_reduce(self.flat_g)
            self.spans.append((c0, clock.mark()))
            self.bucket_bytes.append(self.flat_g.numel() * self.flat_g.element_size())
            self.flat_g.div_(self.world)  # in place: the parameters' .grad are views of it
        if strategy == "ps_sync":
            marks = self._ps_exchange()
        else:
            u0 = clock.mark()
            workload.update()
            marks = (u0, clock.mark())
        t_u = clock.end()  # the one read of the step's time after its start: marks are read from here on
        t_f, t_b, update, comm = clock.at(m_f), clock.at(m_b), tuple(map(clock.at, marks)), clock.seconds(self.spans)
        # DDP's backward ends when its last bucket was ready: the last all-reduce's start
        backward_end = max((a for a, _ in comm), default=t_b) if strategy == "allreduce" else t_b
        phases = step_phases((t0, t_f), (t_f, backward_end), update, comm, (t0, t_u))
        return {**phases, "start": t0, "end": t_u, "loss": float(loss.detach()),
                "buckets": len(self.bucket_bytes), "comm_bytes": int(sum(self.bucket_bytes))}

    def _ps_exchange(self) -> tuple:
        """Gradients to the server (rank 0), its aggregation and update, parameters back; returns the update's marks
        (the server's; an empty interval on the other ranks, which receive parameters in place)."""
        dist, nbytes, clock = self.dist, self.flat_g.numel() * self.flat_g.element_size(), self.clock
        c0 = clock.mark()
        dist.gather(self.flat_g, self.gathered, dst=0)
        self.spans.append((c0, clock.mark()))
        self.bucket_bytes.append(nbytes * (self.world if self.rank == 0 else 1))
        u0 = clock.mark()
        if self.rank == 0:
            for g in self.gathered[1:]:  # gathered[0] is rank 0's own gradient, already in flat_g
                self.flat_g.add_(g)
            self.flat_g.div_(self.world)
            self.workload.update()
        u1 = clock.mark()
        b0 = clock.mark()
        dist.broadcast(self.flat_p, src=0)
        self.spans.append((b0, clock.mark()))
        self.bucket_bytes.append(nbytes)
        return u0, u1

    def settings(self) -> dict:
        """The workload's settings (what the fairness certificate reads) with what the strategy adds."""
        own = self.workload.settings
        return {**own, "inside_timer": f"{own['inside_timer']} + {EXCHANGES[self.config.strategy]}",
                "bucket_cap_mb": self.config.bucket_mb if self.ddp else None, "ddp": bool(self.ddp),
                "init": "same seed on every rank"}


class TorchReadings(Readings):
    """The rank's energy (its own GPU's images, or every rank's on the GPU or CPUs they share) and, on a GPU, the
    CUDA allocator's peak over the timed steps."""

    def __init__(self, workload: TorchWorkload, device: str, meter, images: int) -> None:
        self.workload, self.device, self.images = workload, device, images
        super().__init__([meter] if meter is not None else [])

    def reset(self) -> None:
        self.workload.reset_memory()

    def replica(self, k: int) -> tuple[dict | None, dict | None]:
        return (self.meters[0].result(self.images) if self.meters else None,
                self.workload.memory() if is_gpu(self.device) else None)


class ProcessGroupRanks(RankGroup):
    """A rank per process in torch.distributed's process group (`self.dist`, `self.rank`, `self.world`): how its ranks
    meet, gather their results and leave."""

    dist: object
    rank: int
    world: int

    def barrier(self) -> None:
        self.dist.barrier()

    def gather(self, results: list[dict]) -> list[dict]:
        """Every rank's result to rank 0, which writes them all: on a real cluster the record is assembled on node 0
        only, from every machine's ranks."""
        gathered = [None] * self.world if self.rank == 0 else None
        self.dist.gather_object(results[0], gathered, dst=0)
        return gathered or []

    def finish(self) -> None:
        self.dist.barrier()
        self.dist.destroy_process_group()
        rankio.exit_now()


class TorchRanks(ProcessGroupRanks):
    """This process's rank (torchrun's RANK / WORLD_SIZE): the adapter's workload for the rank's share of the batch
    and its own data, prepared before the process group so that its thread settings come first."""

    def __init__(self, adapter: TorchAdapter, config: RunConfig, spec: dict) -> None:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.config = torch, dist, config
        device, backend, self.measures_energy = rank_device(config, dict(os.environ), torch.cuda)
        if is_gpu(device):  # NCCL (and gather_object) use the current device: this rank's own
            torch.cuda.set_device(device)
        self.workload = workload = adapter.distributed.prepare_rank(config.for_rank(rank, device))
        dist.init_process_group(backend, timeout=timedelta(seconds=spec["timeout_s"]))
        self.trainer = Trainer(workload, dist, config, rank, world)
        self.rank, self.world, self.device = rank, world, device
        role = "server+worker" if config.strategy == "ps_sync" and rank == 0 else "worker"
        self.replicas = [Replica(rank, device, role, int(os.environ.get("GROUP_RANK", 0)))]
        self.facts = GroupFacts(
            settings=self.trainer.settings(), params=workload.params, grad_bytes=self.trainer.grad_bytes,
            backend=dist.get_backend(), samples_per_step=config.worker_batch,
            threads={k: workload.settings[k] for k in ("intra_op_threads", "inter_op_threads")},
            input_placement=workload.input_placement())

    def step(self) -> dict:
        return self.trainer.step()

    def checksums(self) -> list[float | None]:
        return [self.workload.weights_checksum()]

    def readings(self) -> TorchReadings:
        ranks_here = int(os.environ.get(rankio.MACHINE_RANKS_ENV, 1))
        own_gpu = is_gpu(self.device) and ranks_here <= self.torch.cuda.device_count()
        images = self.config.worker_batch * self.config.iterations * (1 if own_gpu else ranks_here)
        return TorchReadings(self.workload, self.device, energy_meter(self.device) if self.measures_energy else None,
                             images)

