"""One PyTorch rank (started by torchrun): synthetic-data training with a chosen strategy.

Strategies
- independent: no communication (each rank trains alone): the baseline for communication cost.
- allreduce: DistributedDataParallel over gloo (CPU workers), gradient buckets of `bucket_mb`;
  a communication hook timestamps each bucket's all-reduce, so overlap with backward is measured.
- allreduce_nosync: DDP's `no_sync()` for the whole backward, then one explicit all-reduce of the
  flattened gradients: what overlap buys, by its absence.
- ps_sync: synchronous parameter server on rank 0 (which also trains, as SINGA's first GPU did):
  every rank's gradients are gathered to rank 0, rank 0 updates, parameters are broadcast back.

All ranks run the same fixed number of warm-up and timed steps (no rank decides alone when to
stop), between barriers; each writes rank<r>.json with per-step phase times.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import numpy as np

from ...config import make_config
from ...models import get_model
from ...ranks import rankio
from ...ranks.timeline import step_phases
from ..base import LEARNING_RATE, MOMENTUM
from .adapter import set_torch_threads
from .models import build_torch_model


class Trainer:
    def __init__(self, torch, dist, config, rank: int, world: int) -> None:
        self.torch, self.dist, self.config, self.rank, self.world = torch, dist, config, rank, world
        torch.manual_seed(config.seed)  # identical initial weights on every rank
        model = build_torch_model(config.model).to(memory_format=torch.channels_last).train()
        self.params = sum(p.numel() for p in model.parameters())
        self.comm: list[tuple[float, float]] = []
        self.bucket_bytes: list[int] = []
        self.ddp = None
        if config.strategy in ("allreduce_nosync", "ps_sync"):
            self._flat_views(model)  # before DDP: it must see the parameters it will train
        if config.strategy in ("allreduce", "allreduce_nosync"):
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            self.ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=config.bucket_mb)
            self.ddp.register_comm_hook(None, self._timed_allreduce(default_hooks.allreduce_hook))
        elif config.strategy == "ps_sync":
            dist.broadcast(self.flat_p, src=0)
            self.gathered = [torch.empty_like(self.flat_g) for _ in range(world)] if rank == 0 else None
        self.model = model
        self.net = self.ddp or model
        self.opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        n, s = config.worker_batch, config.image_size
        rng = np.random.default_rng(config.seed + 1000 * (rank + 1))  # each rank its own shard
        self.x = torch.from_numpy(rng.standard_normal((n, 3, s, s), dtype=np.float32)).contiguous(
            memory_format=torch.channels_last)
        self.y = torch.from_numpy(rng.integers(0, get_model(config.model).num_classes, n))
        self.grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def _timed_allreduce(self, hook):
        def timed(state, bucket):
            t0 = time.perf_counter()
            nbytes = bucket.buffer().numel() * bucket.buffer().element_size()

            def done(fut):
                self.comm.append((t0, time.perf_counter()))
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
        self.flat_p, self.flat_g = torch.empty(total), torch.zeros(total)
        offset = 0
        with torch.no_grad():
            for p in params:
                view = self.flat_p.as_strided(p.shape, p.stride(), offset)
                view.copy_(p)
                p.data = view
                p.grad = self.flat_g.as_strided(p.shape, p.stride(), offset)
                offset += p.numel()

    def checksum(self) -> float:
        with self.torch.no_grad():
            return float(sum(p.double().abs().sum() for p in self.model.parameters()))

    def step(self) -> dict:
        dist, strategy = self.dist, self.config.strategy
        self.comm, self.bucket_bytes = [], []
        t0 = time.perf_counter()
        self.opt.zero_grad(set_to_none=False)
        nosync = self.ddp.no_sync() if strategy == "allreduce_nosync" else _null()
        with nosync:
            loss = self.loss_fn(self.net(self.x), self.y)
            t_f = time.perf_counter()
            loss.backward()
        t_b = time.perf_counter()
        backward_end = max((a for a, _ in self.comm), default=t_b) if strategy == "allreduce" else t_b
        if strategy == "allreduce_nosync":
            c0 = time.perf_counter()
            dist.all_reduce(self.flat_g)
            self.comm.append((c0, time.perf_counter()))
            self.bucket_bytes.append(self.flat_g.numel() * self.flat_g.element_size())
            self.flat_g.div_(self.world)  # in place: the parameters' .grad are views of it
        if strategy == "ps_sync":
            update = self._ps_exchange()
        else:
            u0 = time.perf_counter()
            self.opt.step()
            update = (u0, time.perf_counter())
        t_u = time.perf_counter()
        phases = step_phases((t0, t_f), (t_f, backward_end), update, self.comm, (t0, t_u))
        return {**phases, "start": t0, "end": t_u, "loss": float(loss.detach()),
                "buckets": len(self.bucket_bytes), "comm_bytes": int(sum(self.bucket_bytes))}

    def _ps_exchange(self) -> tuple[float, float]:
        """Gradients to the server (rank 0), its aggregation and update, parameters back; returns the
        update interval (the server's; empty on the other ranks, which receive parameters in place)."""
        dist, nbytes = self.dist, self.flat_g.numel() * self.flat_g.element_size()
        c0 = time.perf_counter()
        dist.gather(self.flat_g, self.gathered, dst=0)
        self.comm.append((c0, time.perf_counter()))
        self.bucket_bytes.append(nbytes * (self.world if self.rank == 0 else 1))
        u0 = time.perf_counter()
        if self.rank == 0:
            for g in self.gathered[1:]:  # gathered[0] is rank 0's own gradient, already in flat_g
                self.flat_g.add_(g)
            self.flat_g.div_(self.world)
            self.opt.step()
        u1 = time.perf_counter()
        b0 = time.perf_counter()
        dist.broadcast(self.flat_p, src=0)
        self.comm.append((b0, time.perf_counter()))
        self.bucket_bytes.append(nbytes)
        return u0, u1


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main() -> None:
    spec = rankio.read_spec()
    config = make_config(**spec["config"])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    import torch
    import torch.distributed as dist

    threads = set_torch_threads(torch, config.threads)
    dist.init_process_group("gloo", timeout=timedelta(seconds=spec["timeout_s"]))
    trainer = Trainer(torch, dist, config, rank, world)
    warmup = [trainer.step()["step_s"] for _ in range(config.warmup)]
    before = trainer.checksum()
    dist.barrier()
    w0, cpu0 = time.perf_counter(), rankio.cpu_seconds()
    steps = [trainer.step() for _ in range(config.iterations)]
    dist.barrier()
    w1, cpu1 = time.perf_counter(), rankio.cpu_seconds()
    result = rankio.stamped({
        "rank": rank, "world": world, "role": "server+worker" if config.strategy == "ps_sync" and rank == 0
        else "worker", "node": int(os.environ.get("GROUP_RANK", 0)), "host": os.uname().nodename,
        "backend": dist.get_backend(), "threads": threads, "params": trainer.params,
        "grad_bytes": trainer.grad_bytes, "samples_per_step": config.worker_batch,
        "warmup_s": warmup, "steps": steps, "window": {"start": w0, "end": w1, "cpu_s": cpu1 - cpu0},
        "checksum_before": before, "checksum_after": trainer.checksum(),
        "settings": {"bucket_cap_mb": config.bucket_mb if trainer.ddp else None,
                     "ddp": bool(trainer.ddp), "init": "same seed on every rank",
                     "optimizer": f"SGD(lr={LEARNING_RATE}, momentum={MOMENTUM})"},
    })
    # every rank's result goes to rank 0, which writes them all: on a real cluster the record is
    # assembled on node 0 only, from every machine's ranks
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(result, gathered, dst=0)
    if rank == 0:
        for r in gathered:
            rankio.write_result(spec, f"rank{r['rank']}", r)
    dist.barrier()
    dist.destroy_process_group()
    rankio.exit_now()


if __name__ == "__main__":
    main()
