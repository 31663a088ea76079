"""Sandblaster L-BFGS (DistBelief, Dean et al. 2012) on PyTorch's process group: a coordinator drives L-BFGS, workers
compute the gradient over the training set in small work units it hands out, parameter servers hold the parameters.

Processes (torchrun ranks, one process each): rank 0 the coordinator, ranks 1..S the parameter servers (the flat
parameter vector cut into S contiguous shards), the next W ranks the workers. Over gloo's point-to-point send and
receive, one gradient evaluation (L-BFGS asks for one per iteration, plus one per line-search trial) goes:
1. the coordinator sends each server its shard of the point to evaluate; each server keeps it and sends it to every
   worker (the workers fetch the parameters from the servers, never from the coordinator);
2. each worker asks the coordinator for a work unit (a slice of the training set, `batch_size` images), computes
   the unit's summed cross-entropy gradient, and asks again; the coordinator answers whoever asks first, own shard
   first, then the largest shard left (bench/ranks/workunits.py): a faster worker takes more units;
3. when no unit is left each worker sends each server its shard of the gradient it accumulated (with its loss sum
   and image count); each server adds the workers' shards and sends its total to the coordinator, which divides by
   the training set's size and hands loss and gradient to `torch.optim.LBFGS` (strong-Wolfe line search).
The L-BFGS history and line search run on the coordinator (DistBelief also shards the history over the servers and
has them compute its dot products: with one small model that only adds messages). One timed step of every rank is
one L-BFGS iteration; the coordinator measures test accuracy after each (outside the training time).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from ...ranks import digits
from ...ranks.workunits import WorkUnits
from ..base import SANDBLASTER_OPTIMIZER
from ..ranks import GroupFacts, Replica
from .worker import ProcessGroupRanks

if TYPE_CHECKING:
    from ...config import RunConfig
    from .adapter import TorchAdapter

STRATEGY = "sandblaster"
SERVERS = 1  # parameter-server processes (2 cores here: 2 workers, 1 server, 1 coordinator = Downpour's 4 processes)
REQUEST, REPLY = 1, 2  # tags: a worker's request for a unit, the coordinator's answer
EVALUATE, STOP = 1, 0  # a header's flag: a gradient evaluation follows, or the L-BFGS iteration is over
# one iteration per step; max_eval must be given: its default (max_iter x 5 // 4 = 1) leaves the line search no trial
# beyond the first, and L-BFGS then never moves (measured: the loss stuck at 2.2959 from the second iteration)
LBFGS = {"lr": 1.0, "max_iter": 1, "max_eval": 25, "history_size": 10, "line_search_fn": "strong_wolfe"}


def processes(workers: int, servers: int = SERVERS) -> int:
    """Every process of a Sandblaster run: the coordinator, the servers, the workers."""
    return 1 + servers + workers


def role_of(rank: int, servers: int = SERVERS) -> str:
    return "coordinator" if rank == 0 else "server" if rank <= servers else "worker"


def shard_sizes(total: int, servers: int) -> list[int]:
    """The contiguous shards of a `total`-long parameter vector over `servers` (torch.tensor_split's sizes)."""
    q, r = divmod(total, servers)
    return [q + (1 if k < r else 0) for k in range(servers)]


class Protocol:
    """One rank's side of the exchange (`dist` a torch.distributed with its process group up): the coordinator's
    evaluation (`evaluate`), the server's and the worker's loop over one L-BFGS iteration (`serve`, `work`)."""

    def __init__(self, torch, dist, rank: int, workers: int, servers: int, params: list, unit: int,
                 train=None) -> None:
        self.torch, self.dist, self.rank, self.servers = torch, dist, rank, servers
        self.worker_ranks = list(range(1 + servers, 1 + servers + workers))
        self.params, self.unit = params, unit
        total = sum(p.numel() for p in params)
        self.sizes = shard_sizes(total, servers)
        self.header = torch.zeros(1, dtype=torch.int64)
        self.shard = torch.zeros(self.sizes[rank - 1]) if role_of(rank, servers) == "server" else None
        self.train = train  # a worker's (x, y) tensors; the coordinator's training-set size comes from them too
        self.samples = int(train[1].shape[0]) if train is not None else 0
        self.units_taken = [0] * workers
        self.units_stolen = [0] * workers
        self.evaluations = 0
        self.wait_s = 0.0  # the coordinator's waits on the others, the worker's on messages (this step)
        self.compute_s = 0.0  # a worker's forward and backward over its units (this step)
        self.units = 0  # a worker's units this step

    # --- the coordinator ---
    def evaluate(self):
        """The loss and gradient at the parameters' current values, over the whole training set (the gradient is
        written into each parameter's .grad); the L-BFGS closure."""
        torch, dist = self.torch, self.dist
        t0 = time.perf_counter()
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.header[0] = EVALUATE
        for s, shard in enumerate(torch.split(flat, self.sizes), start=1):
            dist.send(self.header, s)
            dist.send(shard.contiguous(), s)
        units = WorkUnits(self.samples, self.unit, len(self.worker_ranks))
        request, reply, done = torch.zeros(1, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), 0
        while done < len(self.worker_ranks):
            src = dist.recv(request, None, tag=REQUEST)
            bounds = units.take(self.worker_ranks.index(src))
            done += bounds is None
            reply[0], reply[1] = bounds if bounds is not None else (-1, -1)
            dist.send(reply, src, tag=REPLY)
        totals = [torch.zeros(n + 2, dtype=torch.float64) for n in self.sizes]
        for s, total in enumerate(totals, start=1):
            dist.recv(total, s)
        grad = torch.cat([t[:-2] for t in totals]) / self.samples
        offset = 0
        for p in self.params:
            p.grad = grad[offset:offset + p.numel()].view_as(p).to(p.dtype)
            offset += p.numel()
        self.units_taken = [a + b for a, b in zip(self.units_taken, units.taken)]
        self.units_stolen = [a + b for a, b in zip(self.units_stolen, units.stolen)]
        self.evaluations += 1
        self.wait_s += time.perf_counter() - t0
        return torch.tensor(float(totals[0][-2] / totals[0][-1]))

    def stop(self) -> None:
        """The iteration is over: the servers pass it on to the workers."""
        self.header[0] = STOP
        for s in range(1, self.servers + 1):
            self.dist.send(self.header, s)

    # --- a server ---
    def serve(self) -> None:
        """Until the coordinator stops the iteration: keep each point's shard, send it to the workers, add their
        gradients' shards and send the total to the coordinator."""
        torch, dist = self.torch, self.dist
        incoming = torch.zeros(self.shard.numel() + 2, dtype=torch.float64)
        while True:
            dist.recv(self.header, 0)
            for w in self.worker_ranks:
                dist.send(self.header, w)
            if int(self.header[0]) == STOP:
                return
            dist.recv(self.shard, 0)
            for w in self.worker_ranks:
                dist.send(self.shard, w)
            total = torch.zeros_like(incoming)
            for w in self.worker_ranks:
                dist.recv(incoming, w)
                total += incoming
            dist.send(total, 0)

    # --- a worker ---
    def work(self) -> None:
        """Until the coordinator stops the iteration: fetch each point from the servers, take units until none is
        left, send the summed gradient's shards (and the loss sum and image count) to the servers."""
        torch, dist = self.torch, self.dist
        x, y = self.train
        shards = [torch.zeros(n) for n in self.sizes]
        request, reply = torch.tensor([self.rank], dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
        self.wait_s = self.compute_s = 0.0
        self.units = 0
        while True:
            t0 = time.perf_counter()
            stop = False
            for s in range(1, self.servers + 1):
                dist.recv(self.header, s)
                stop = int(self.header[0]) == STOP
            if stop:
                self.wait_s += time.perf_counter() - t0
                return
            for s, shard in enumerate(shards, start=1):
                dist.recv(shard, s)
            flat = torch.cat(shards)
            offset = 0
            with torch.no_grad():
                for p in self.params:
                    p.copy_(flat[offset:offset + p.numel()].view_as(p))
                    p.grad = None
                    offset += p.numel()
            self.wait_s += time.perf_counter() - t0
            loss_sum, n = 0.0, 0
            while True:
                t0 = time.perf_counter()
                dist.send(request, 0, tag=REQUEST)
                dist.recv(reply, 0, tag=REPLY)
                t1 = time.perf_counter()
                self.wait_s += t1 - t0
                a, b = int(reply[0]), int(reply[1])
                if b < 0:
                    break
                loss = self.loss_fn(x[a:b], y[a:b])
                loss.backward()
                loss_sum, n = loss_sum + float(loss.detach()), n + (b - a)
                self.units += 1
                self.compute_s += time.perf_counter() - t1
            t0 = time.perf_counter()
            grad = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).double()
                              for p in self.params])
            extra = torch.tensor([loss_sum, float(n)], dtype=torch.float64)
            for s, part in enumerate(torch.split(grad, self.sizes), start=1):
                dist.send(torch.cat([part, extra]), s)
            self.wait_s += time.perf_counter() - t0

    model = None  # a worker's module (the loss's forward)

    def loss_fn(self, x, y):
        return self.torch.nn.functional.cross_entropy(self.model(x), y, reduction="sum")


class SandblasterRanks(ProcessGroupRanks):
    """This process's part of a Sandblaster run (torchrun's RANK: 0 the coordinator, 1..S servers, then workers)."""

    def __init__(self, adapter: TorchAdapter, config: RunConfig, spec: dict) -> None:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.config, self.rank, self.world = torch, dist, config, rank, world
        self.role = role = role_of(rank)
        # every rank builds the model from the same seed (the same threads and settings as any rank's workload)
        self.workload = workload = adapter.distributed.prepare_rank(config.for_rank(0, "cpu"))
        model = workload.module
        self.params = list(model.parameters())
        sets = digits.load(channels_last=False, seed=config.seed)
        train = tuple(torch.from_numpy(a) for a in sets["train"])
        self.test = tuple(torch.from_numpy(a) for a in sets["test"])
        dist.init_process_group("gloo", timeout=timedelta(seconds=spec["timeout_s"]))
        self.protocol = protocol = Protocol(torch, dist, rank, config.workers, SERVERS, self.params,
                                            config.batch_size, train)
        protocol.model = model
        self.optimizer = torch.optim.LBFGS(self.params, **LBFGS) if role == "coordinator" else None
        self.evaluates = role == "coordinator"
        self.replicas = [Replica(rank, "cpu", role, int(os.environ.get("GROUP_RANK", 0)))]
        settings = {**workload.settings,
                    "inside_timer": "one L-BFGS iteration: its gradient evaluations (the first, and one per "
                                    "line-search trial) over the whole training set in work units handed out by "
                                    "the coordinator, parameters through the servers, and the L-BFGS update",
                    "optimizer": SANDBLASTER_OPTIMIZER, "loss": "CrossEntropyLoss (mean over the training set)",
                    "init": "same seed on every rank",
                    "sandblaster": {"coordinator": 1, "servers": SERVERS, "workers": config.workers,
                                    "processes": world, "unit_images": config.batch_size,
                                    "train_images": protocol.samples, "lbfgs": dict(LBFGS)}}
        self.facts = GroupFacts(
            settings=settings, params=sum(p.numel() for p in self.params),
            grad_bytes=sum(p.numel() * p.element_size() for p in self.params), backend=dist.get_backend(),
            samples_per_step=protocol.samples // config.workers if role == "worker" else 0,
            threads={k: workload.settings[k] for k in ("intra_op_threads", "inter_op_threads")})

    def step(self) -> dict:
        p, t0 = self.protocol, time.perf_counter()
        p.wait_s = p.compute_s = 0.0
        taken, stolen, evaluations = list(p.units_taken), list(p.units_stolen), p.evaluations
        loss = None
        if self.role == "coordinator":
            loss = float(self.optimizer.step(p.evaluate))
            p.stop()
        elif self.role == "server":
            p.serve()
        else:
            p.work()
        t1 = time.perf_counter()
        own = (t1 - t0) - p.wait_s  # the coordinator's L-BFGS arithmetic, a server's adding, a worker's compute
        out = {"start": t0, "end": t1, "step_s": t1 - t0, "forward_backward_s": p.compute_s,
               "update_s": own if self.role == "coordinator" else 0.0, "exposed_comm_s": p.wait_s,
               "other_s": max(0.0, own - p.compute_s) if self.role != "coordinator" else 0.0}
        if self.role == "coordinator":
            out.update(loss=loss, evaluations=p.evaluations - evaluations,
                       units_taken=[a - b for a, b in zip(p.units_taken, taken)],
                       units_stolen=[a - b for a, b in zip(p.units_stolen, stolen)])
        elif self.role == "worker":
            out["units"] = p.units
        return out

    def checksums(self) -> list[float | None]:
        with self.torch.no_grad():  # each process's own copy: the coordinator's, a server's shard, a worker's
            held = [self.protocol.shard] if self.role == "server" else self.params
            return [float(sum(t.double().abs().sum() for t in held))]

    def evaluate(self, steps_done: int) -> dict | None:
        if self.role != "coordinator":
            return None
        x, y = self.test
        with self.torch.no_grad():
            accuracy = float((self.workload.module(x).argmax(1) == y).double().mean())
        return {"steps": steps_done, "accuracy": accuracy}
