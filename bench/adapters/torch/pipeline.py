"""PyTorch pipeline ranks: the model's units cut into one stage per rank, trained by `torch.distributed.pipelining`.

Strategies (bench/config.py PIPELINE_STRATEGIES)
- model_parallel: the naive split, one whole batch at a time (the engine's GPipe with one micro-batch: the batch's
  activations go forward stage by stage, its gradients come back; one stage works at a time).
- gpipe: ScheduleGPipe over `micro_batches` (every forward, then every backward).
- 1f1b: Schedule1F1B over `micro_batches` (a stage holds at most p micro-batches' activations).
- interleaved_1f1b, interleaved_zb, zbv: ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble,
  ScheduleZBVZeroBubble with v = 2 stages per rank (bench/config.py PIPELINE_CHUNKS): the model cut into p x v
  stages, rank r holding stages r and r + p (round-robin) or r and 2p - 1 - r (ZB-V's V). On a CPU they are offered
  only after their smoke test passed on this torch (bench/adapters/torch/pipeline_smoke.py: gloo's batched sends
  have hung for them upstream); the zero-bubble ones split each backward into its input and weight halves.

Every rank builds the whole model from the same seed and keeps its stage; stage 0 feeds the batch, the last stage
computes the cross-entropy against the labels (the same data on every rank). The timed step is the schedule's step
plus the stage's SGD-momentum update. The library times nothing itself: each stage's forward, backward, loss and
every wait on a send or receive is bracketed by clock reads (perf_counter on CPUs; synchronised on GPUs), so a step
leaves a per-rank timeline of its actions.

BatchNorm with micro-batches: each micro-batch is normalised by its own statistics and the running statistics are
updated once per micro-batch (as the engine runs it); no cross-micro-batch synchronisation.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from ...host.devices import is_gpu
from ...host.energy import energy_meter
from ...ranks import stages
from ...ranks.stages import PIPELINE_CHUNKS
from ..base import LEARNING_RATE, MOMENTUM, OPTIMIZER
from ..ranks import GroupFacts, Replica
from .models import build_torch_model
from .pipeline_smoke import stage_ranks
from .worker import ProcessGroupRanks, TorchReadings, rank_device

if TYPE_CHECKING:
    from ...config import RunConfig
    from .adapter import TorchAdapter

SCHEDULES = {"model_parallel": "ScheduleGPipe", "gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
             "interleaved_1f1b": "ScheduleInterleaved1F1B", "interleaved_zb": "ScheduleInterleavedZeroBubble",
             "zbv": "ScheduleZBVZeroBubble"}
# the zero-bubble schedules, which split each backward into its input half and its weight half
SPLIT_BACKWARD = ("ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble")
KINDS = {"F": "forward", "B": "backward", "I": "backward", "W": "backward_weight"}  # the visualiser's actions
BATCHNORM = ("each micro-batch normalised by its own statistics; running statistics updated once per micro-batch "
             "(no synchronisation across micro-batches)")


def model_units(model) -> list:
    """The model's layers in forward order, as modules a stage can chain: an nn.Sequential's children, or a
    torchvision ResNet's stem, residual blocks one by one, pooling, flatten and classifier."""
    from torch import nn

    if isinstance(model, nn.Sequential):
        return list(model.children())
    if all(hasattr(model, a) for a in ("conv1", "bn1", "maxpool", "layer1", "layer4", "avgpool", "fc")):
        blocks = [b for name in ("layer1", "layer2", "layer3", "layer4") for b in getattr(model, name)]
        return [model.conv1, model.bn1, model.relu, model.maxpool, *blocks, model.avgpool, nn.Flatten(1), model.fc]
    raise UnsupportedError(f"{type(model).__name__} cannot be cut into pipeline stages here (a sequential model or a "
                           "torchvision ResNet can)")


def unit_count(model_name: str) -> int:
    """How many units the model cuts into, built on meta tensors (no memory, no arithmetic): what a given cut is checked
    against before any work."""
    import torch

    with torch.device("meta"):
        return len(model_units(build_torch_model(model_name)))


def unit_flops(model_name: str, image_size: int) -> list[float]:
    """Forward FLOPs of each unit for one image, counted on meta tensors (no memory, no arithmetic)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        units = model_units(build_torch_model(model_name).eval())
        x = torch.empty(1, 3, image_size, image_size)
    out = []
    with torch.no_grad():
        for unit in units:
            with FlopCounterMode(display=False) as counter:
                x = unit(x)
            out.append(float(counter.get_total_flops()))
    return out


TIMING_REPEATS = 3  # timed passes per unit after one warm-up; the median is the unit's time


def stage_count(config: RunConfig) -> int:
    """The model's stages: one per worker, or v per worker for the interleaved and zero-bubble schedules."""
    return config.workers * PIPELINE_CHUNKS.get(config.strategy, 1)


def choose_cut(config: RunConfig, flops: list[float], unit_s: list[float] | None = None) -> stages.Cut:
    """The config's cut: given, balanced by measured time (`unit_s`, each unit's forward+backward seconds), or by
    counted FLOPs."""
    n = stage_count(config)
    if config.pipeline_cut == stages.TIMED:
        return stages.balanced_cut(unit_s, n,
                                   f"balanced by measured time per stage (least largest stage): each unit's forward "
                                   f"+ backward on one micro-batch of {config.batch_size // config.micro_batches} "
                                   f"images, median of {TIMING_REPEATS} after a warm-up, timed on rank 0 before the "
                                   "run and sent to every rank")
    if config.pipeline_cut:
        return stages.given_cut(config.pipeline_cut, len(flops), n)
    return stages.balanced_cut(flops, n)


def split_backward_refusal(config: RunConfig, cut: stages.Cut, stage_params: list[int], version: str) -> str | None:
    """Why a zero-bubble schedule cannot train this cut: a first stage without parameters leaves the next stage's
    input needing no gradient, and the split backward then never computes that stage's weight gradients (torch
    2.14.1: its weights stayed as they were while the single process's moved)."""
    if SCHEDULES[config.strategy] not in SPLIT_BACKWARD or stage_params[0]:
        return None
    return (f"{config.strategy}: the first stage of the cut ({cut.rule}) has no parameters, so the next stage's "
            f"input needs no gradient, and torch {version}'s split backward then leaves that stage's weight "
            "gradients at zero (its weights never change); cut so that stage 0 holds parameters (pipeline_cut), or "
            "use interleaved_1f1b")


def unit_times(torch, units: list, x) -> list[float]:
    """Each unit's forward + backward seconds on input batch `x` (the units chained as the model runs them), the
    median of TIMING_REPEATS after a warm-up. The weights, their gradients and BatchNorm's running statistics are
    left as they were."""
    import copy
    import statistics

    saved = [copy.deepcopy(u.state_dict()) for u in units]
    out = []
    with torch.no_grad():
        inputs = [x]
        for unit in units[:-1]:
            inputs.append(unit(inputs[-1]))
    for index, (unit, inp) in enumerate(zip(units, inputs)):
        times = []
        for k in range(TIMING_REPEATS + 1):
            # a later stage's backward also computes its input's gradient (sent back): the first stage's does not
            leaf = inp.detach().requires_grad_(index > 0 and inp.is_floating_point())
            t0 = time.perf_counter()
            # through a copy: a unit that starts in place (ResNet's ReLU) may not write into a leaf needing grad
            y = unit(leaf.clone() if leaf.requires_grad else leaf)
            if y.requires_grad:
                y.float().sum().backward()
            if k:
                times.append(time.perf_counter() - t0)
        out.append(statistics.median(times))
    for unit, state in zip(units, saved):
        unit.load_state_dict(state)
        unit.zero_grad(set_to_none=True)
    return out


def _layout(torch, fmt):
    """A module that puts a 4-D activation into memory format `fmt`, and its gradient back into NCHW (what a stage
    sends back to the previous one must be contiguous too); anything else passes through."""
    class ToLayout(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.contiguous(memory_format=fmt)

        @staticmethod
        def backward(ctx, grad):
            return grad.contiguous()

    class Layout(torch.nn.Module):
        def forward(self, x):
            return ToLayout.apply(x) if x.dim() == 4 else x

    return Layout()


def _nbytes(value) -> int:
    """Bytes of a tensor or of the tensors in a tuple or list (what a stage sends on)."""
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return value.numel() * value.element_size() if hasattr(value, "element_size") else 0


class StageClock:
    """Clock reads around each action of this stage: (kind, micro-batch, start, end), perf_counter seconds. On a GPU
    each read synchronises first, so an interval is the device's work, not its queueing."""

    def __init__(self, torch, device: str) -> None:
        self.sync = (lambda: torch.cuda.synchronize(device)) if is_gpu(device) else (lambda: None)
        self.actions: list[tuple[str, int | None, float, float]] = []
        self.saved_bytes = 0  # activations autograd saved for the backward in the last forward timed
        self.sent_bytes = 0  # the last forward's output: what goes to the next stage per micro-batch

    def now(self) -> float:
        self.sync()
        return time.perf_counter()

    def timed(self, kind: str, fn, index_of=lambda args, kwargs: None):
        def wrapper(*args, **kwargs):
            t0 = self.now()
            try:
                return fn(*args, **kwargs)
            finally:
                self.actions.append((kind, index_of(args, kwargs), t0, self.now()))
        return wrapper


def _counting_forward(torch, forward, clock: StageClock):
    """The stage's forward of one micro-batch, counting the bytes autograd saves for its backward (the activations a
    schedule holds until that micro-batch's backward) and the bytes of its output."""
    def run(*args, **kwargs):
        saved = [0]

        def pack(t):
            saved[0] += t.numel() * t.element_size()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = forward(*args, **kwargs)
        clock.saved_bytes, clock.sent_bytes = saved[0], _nbytes(out)
        return out
    return run


def _instrument(torch, schedule_module, stage_list, schedule, clock: StageClock) -> None:
    """Clock reads around each stage's forward and backward of each micro-batch (a zero-bubble schedule's weight
    half of it too), the loss, and every wait on the schedule's sends and receives (the module's `_wait_batch_p2p`:
    this process runs one schedule)."""
    first = lambda args, kwargs: args[0] if args else kwargs.get("fwd_chunk_id", kwargs.get("bwd_chunk_id"))  # noqa: E731
    for stage in stage_list:
        stage.forward_one_chunk = clock.timed("forward", _counting_forward(torch, stage.forward_one_chunk, clock),
                                              first)
        stage.backward_one_chunk = clock.timed("backward", stage.backward_one_chunk, first)
        stage.backward_weight_one_chunk = clock.timed(stages.BACKWARD_WEIGHT, stage.backward_weight_one_chunk, first)
    schedule._compute_loss = clock.timed("loss", schedule._compute_loss)
    if not getattr(schedule_module._wait_batch_p2p, "timed", False):
        wait = clock.timed(stages.WAIT, schedule_module._wait_batch_p2p)
        wait.timed = True
        schedule_module._wait_batch_p2p = wait


class PipelineRanks(ProcessGroupRanks):
    """This process's stage of a pipeline run (torchrun's RANK is the stage index)."""

    def __init__(self, adapter: TorchAdapter, config: RunConfig, spec: dict) -> None:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        import torch
        import torch.distributed as dist
        from torch.distributed.pipelining import PipelineStage, schedules

        if config.engine == "compile" or config.precision not in ("fp32", "tf32"):
            # the stages run their modules as cut (no compiled graph, no autocast or loss scaling in the schedule)
            raise UnsupportedError(f"pipeline stages run engine eager/eager_nchw in fp32 or tf32 only (asked: "
                                   f"{config.engine}, {config.precision})")
        self.torch, self.dist, self.config, self.rank, self.world = torch, dist, config, rank, world
        device, backend, self.measures_energy = rank_device(config, dict(os.environ), torch.cuda)
        if is_gpu(device):
            torch.cuda.set_device(device)
        self.device = device
        # every stage the same data (stage 0 feeds its images, the last stage's loss reads its labels)
        self.workload = workload = adapter.distributed.prepare_rank(config.for_rank(0, device))
        flops = unit_flops(config.model, config.image_size)
        units = model_units(workload.module)
        dist.init_process_group(backend, timeout=timedelta(seconds=spec["timeout_s"]))
        unit_s = None
        if config.pipeline_cut == stages.TIMED:  # rank 0 times, every rank cuts by its times: one cut for all
            timed = [unit_times(torch, units, workload._input()[: config.batch_size // config.micro_batches])
                     if rank == 0 else None]
            dist.broadcast_object_list(timed, src=0)
            unit_s = timed[0]
        self.cut = cut = choose_cut(config, flops, unit_s)
        stage_params = [sum(p.numel() for u in units[i:j] for p in u.parameters()) for i, j in cut.bounds()]
        n = stage_count(config)
        refusal = split_backward_refusal(config, cut, stage_params, torch.__version__)
        if refusal:
            raise UnsupportedError(refusal)
        self.mine = mine = [s for s, r in stage_ranks(SCHEDULES[config.strategy], world, n).items() if r == rank]
        modules = []
        for s in mine:
            a, b = cut.bounds()[s]
            # gloo sends contiguous tensors only: a stage hands on NCHW and takes its input back to the workload's
            # layout
            layout = [_layout(torch, workload.fmt)] if s > 0 else []
            handoff = [_layout(torch, torch.contiguous_format)] if s < n - 1 else []
            modules.append(torch.nn.Sequential(*layout, *units[a:b], *handoff))
        self.module = modules[0] if len(modules) == 1 else torch.nn.ModuleList(modules)
        self.params = list(self.module.parameters())
        # the workload trains this rank's stages only, with the same recipe (its own update): the others' weights go
        workload.module = workload.model = self.module
        # a rank whose stages are parameter-free (a small model's Flatten and ReLU cut into 2 x 2 stages) has nothing
        # to update: an SGD over one unused tensor, whose gradient stays None, so the step does nothing
        workload.opt = torch.optim.SGD(self.params or [torch.zeros(1, requires_grad=True)], lr=LEARNING_RATE,
                                       momentum=MOMENTUM)
        del units
        self.stages = [PipelineStage(m_, s, n, torch.device(device)) for m_, s in zip(modules, mine)]
        self.stage = self.stages[0]
        loss_fn = torch.nn.CrossEntropyLoss()  # mean over each micro-batch; the schedule divides gradients by m
        self.schedule = getattr(schedules, SCHEDULES[config.strategy])(
            self.stages if config.strategy in PIPELINE_CHUNKS else self.stage, n_microbatches=config.micro_batches,
            loss_fn=loss_fn)
        self.clock = StageClock(torch, device)
        _instrument(torch, schedules, self.stages, self.schedule, self.clock)
        self.replicas = [Replica(rank, device, "stage" + ("s " if len(mine) > 1 else " ") + ", ".join(map(str, mine)),
                                 int(os.environ.get("GROUP_RANK", 0)))]
        stage_flops = [sum(flops[i:j]) for i, j in cut.bounds()]
        settings = {**workload.settings,
                    "inside_timer": f"the {SCHEDULES[config.strategy]} step over {config.micro_batches} "
                                    "micro-batch(es) "
                                    "(forward, cross-entropy on the last stage, backward, activations and gradients "
                                    "between stages) + the stage's SGD-momentum step",
                    "optimizer": OPTIMIZER, "loss": "CrossEntropyLoss", "init": "same seed on every rank",
                    "pipeline": {"schedule": SCHEDULES[config.strategy], "stages": n,
                                 "chunks_per_rank": PIPELINE_CHUNKS.get(config.strategy, 1),
                                 "rank_stages": [[s for s, r in stage_ranks(SCHEDULES[config.strategy], world,
                                                                            n).items() if r == k]
                                                 for k in range(world)],
                                 # torch's own order for the multi-stage schedules (its 1F1B listing is off by one
                                 # on the last stage: the single-stage orders are written from their definitions)
                                 "schedule_ops": schedule_ops(SCHEDULES[config.strategy], world,
                                                              config.micro_batches, n // world)
                                 if config.strategy in PIPELINE_CHUNKS else None,
                                 "micro_batches": config.micro_batches, "cut_rule": cut.rule,
                                 "cut_starts": list(cut.starts), "units": cut.units, "batchnorm": BATCHNORM,
                                 "stage_params": stage_params, "stage_flops_per_image": stage_flops,
                                 **({"unit_ms": [t * 1e3 for t in unit_s],
                                     "stage_ms_timed": [sum(unit_s[i:j]) * 1e3 for i, j in cut.bounds()]}
                                    if unit_s else {})}}
        self.facts = GroupFacts(
            settings=settings, params=sum(p.numel() for p in self.params),
            grad_bytes=sum(p.numel() * p.element_size() for p in self.params), backend=dist.get_backend(),
            samples_per_step=config.batch_size,
            threads={k: workload.settings[k] for k in ("intra_op_threads", "inter_op_threads")},
            input_placement=workload.input_placement())

    def step(self) -> dict:
        clock, workload = self.clock, self.workload
        clock.actions = []
        t0 = clock.now()
        workload.zero_grad()
        losses: list = []
        last = stage_count(self.config) - 1
        # the rank holding stage 0 feeds the batch, the one holding the last stage reads the labels (ZB-V: rank 0)
        self.schedule.step(*((workload._input(),) if 0 in self.mine else ()),
                           **({"target": workload.y, "losses": losses} if last in self.mine else {}))
        u0 = clock.now()
        workload.update()
        t1 = clock.now()
        clock.actions.append((stages.UPDATE, None, u0, t1))
        summary = stages.stage_summary([(k, a, b) for k, _, a, b in clock.actions], t0, t1)
        loss = float(self.torch.stack([x.detach() for x in losses]).mean()) if losses else None
        forward = _sum(clock.actions, "forward")
        backward = _sum(clock.actions, "backward") + _sum(clock.actions, stages.BACKWARD_WEIGHT)
        # the phases add up to the step: the waits on sends and receives are its exposed communication (and the
        # bubble: a stage waits for its peer), the rest (the loss, the schedule's own work) is `other`
        return {"start": t0, "end": t1, "step_s": t1 - t0, "forward_s": forward, "backward_s": backward,
                "update_s": t1 - u0, "comm_s": summary["wait_s"], "exposed_comm_s": summary["wait_s"],
                "other_s": max(0.0, (t1 - t0) - forward - backward - (t1 - u0) - summary["wait_s"]),
                **{f"stage_{k}": v for k, v in summary.items()},
                "activation_bytes": clock.saved_bytes, "sent_bytes": clock.sent_bytes,
                "in_flight_max": in_flight_max(clock.actions),
                "timeline": [(k, i, a - t0, b - t0) for k, i, a, b in clock.actions],
                **({"loss": loss} if losses else {})}

    def checksums(self) -> list[float | None]:
        if not self.params:  # parameter-free stages: no weights to check
            return [None]
        with self.torch.no_grad():  # this stage's own weights: each stage's change is checked on its own
            return [float(sum(p.double().abs().sum() for p in self.params))]

    def readings(self) -> TorchReadings:
        images = self.config.batch_size * self.config.iterations
        return TorchReadings(self.workload, self.device,
                             energy_meter(self.device) if self.measures_energy and self.rank == 0 else None, images)



def schedule_ops(schedule: str, ranks: int, micro_batches: int, per_rank: int) -> list[list[list]] | None:
    """Each rank's compute actions in the order `schedule` runs them, [kind, micro-batch, stage], from torch's
    `_schedule_visualizer.get_schedule_ops` (None where this torch lacks it: the expected timeline then follows
    the schedule's definition, bench/runs/distributed/pipeline.py)."""
    from torch.distributed.pipelining import schedules

    try:
        from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
    except ImportError:
        return None
    ops = get_schedule_ops(getattr(schedules, schedule), ranks, micro_batches, per_rank if per_rank > 1 else None)
    out = []
    for line in ops:
        out.append([[KINDS[a.computation_type.value], a.microbatch_index, a.stage_index] for a in line
                    if a is not None and a.computation_type.value in KINDS])
    return out


def in_flight_max(actions) -> int:
    """The most micro-batches whose activations this stage held at once (forwarded, their backward not yet done)."""
    held = peak = 0
    for kind, *_ in actions:
        held += {"forward": 1, "backward": -1}.get(kind, 0)
        peak = max(peak, held)
    return peak


def _sum(actions, kind: str) -> float:
    return sum(b - a for k, _, a, b in actions if k == kind)
