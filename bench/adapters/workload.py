"""A prepared run (MLPerf-backend style): the Workload an adapter builds for a config, one step and its parts, how
it syncs before a clock read, what it reads back for the fairness certificate; phase timing helpers."""

from __future__ import annotations

import resource
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import psutil

from ..errors import UnsupportedError

if TYPE_CHECKING:  # adapters sit below the config layer: RunConfig is only a type here
    from ..config import RunConfig


@dataclass(frozen=True)
class CertificateFacts:
    """What the fairness certificate (bench/measurement/certificate.py) judges a run's setup by, as the framework
    read it back: the intra-op threads that took effect, the optimizer and loss it trains with, what the timer
    covers, and whether an inference step built a gradient graph (None: not observed)."""

    intra_op_threads: int | None = None
    optimizer: str | None = None
    loss: str | None = None
    inside_timer: Any = None
    autograd_in_inference: bool | None = None

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> CertificateFacts:
        """The facts a workload's `settings` state under these names (any other setting is the record's only)."""
        return cls(**{f.name: settings.get(f.name) for f in fields(cls)})


def step_is_forward(mode: str, data: str) -> bool:
    """Whether one step is the forward alone (inference on device-resident data): its only phase is the step the
    timed loop already timed, so the phase pass costs nothing (the sweep's estimate counts none)."""
    return mode == "inference" and data == "device"


class Workload(ABC):
    """A prepared model + data + step for one config. Adapters fill `params` and `settings`.

    `settings` is what the record keeps of how the run was set up (written as the record's `settings`, free-form
    beyond the names CertificateFacts declares, which `certificate_facts` reads). A distributed strategy runs the
    same workload per rank (DistributedRuns.prepare_rank) and puts its communication between the step's parts."""

    params: int = 0
    settings: dict
    # the compiled-artefact caches its build used: {cache: "hit" | "miss", or what tells after the first iteration}
    compile_caches: Mapping[str, str | Callable[[], str]] = MappingProxyType({})
    feed = None  # data mode `files`: the framework's own input pipeline (bench/adapters/input_feed.py FilesFeed)
    # An int8 run's quantisation (bench/adapters/int8.py Quantised: its held-out logits against fp32's), else None.
    quantised: Any = None

    def certificate_facts(self) -> CertificateFacts:
        """What the fairness certificate judges this workload by."""
        return CertificateFacts.of(self.settings)

    @abstractmethod
    def step(self) -> None:
        """One iteration (inference or training step); may return before the device is done."""

    def _input(self):
        """The batch one step feeds the model, made exactly as `step` makes it (None: this workload has none)."""
        return None

    def _location(self, batch) -> str:
        """Where the framework says `batch` lives: "cpu" or "gpu"."""
        raise NotImplementedError

    def input_placement(self) -> dict | None:
        """Observed, not declared: where the batch a step feeds lives, and whether each step makes a fresh one
        (host-fed: a copy every iteration, inside the timer) or reuses one resident batch (device-resident).
        The certificate's data-placement check compares this with the run's config."""
        first = self._input()
        if first is None:
            return None
        return {"location": self._location(first), "fresh_per_step": self._input() is not first}

    def input_report(self, steps_s: list[float], measure_ceiling: bool) -> dict | None:
        """Data mode `files`: the record's `input` section (what was read, each timed step's data wait, and with
        `measure_ceiling` the loader alone per worker count); None for synthetic data."""
        if self.feed is None:
            return None
        return self.feed.report(steps_s, self.feed.ceiling() if measure_ceiling else None)

    def sync(self) -> None:
        """Block until all queued device work is finished (a no-op for synchronous runtimes): the rank loop and the
        single-process loop call it before every clock read."""

    # The training step's parts, for a distributed strategy that puts its communication between them (a single
    # process's `step` needs none). A framework whose backward is its own call (PyTorch) gives zero_grad, forward,
    # backward and update, and `wrap` for a wrapper such as DDP whose hooks exchange gradients during the backward;
    # one whose gradients are values (TensorFlow) gives `gradients` and `apply`, the strategy's all-reduce between.
    def zero_grad(self) -> None:
        raise UnsupportedError(f"{type(self).__name__} has no separate zero_grad")

    def forward(self):
        """The batch through the model and the loss; returns the loss."""
        raise UnsupportedError(f"{type(self).__name__} has no separate forward")

    def backward(self, loss) -> None:
        raise UnsupportedError(f"{type(self).__name__} has no separate backward")

    def update(self) -> None:
        """The optimizer's step on the gradients the backward left."""
        raise UnsupportedError(f"{type(self).__name__} has no separate update")

    def wrap(self, wrapper: Callable) -> None:
        """Train through `wrapper(model)` from now on (a data-parallel wrapper with a gradient-exchange hook)."""
        raise UnsupportedError(f"{type(self).__name__} cannot be wrapped")

    def gradients(self, x, y):
        """Forward, loss and backward of batch (x, y): (loss, gradients), for a strategy to exchange."""
        raise UnsupportedError(f"{type(self).__name__} returns no gradients")

    def apply(self, gradients) -> None:
        """The optimizer's update with `gradients` (exchanged by the strategy)."""
        raise UnsupportedError(f"{type(self).__name__} applies no gradients")

    def timed_iteration(self) -> float:
        """Seconds for one step, with the device synchronised before each clock read."""
        self.sync()
        t0 = time.perf_counter()
        self.step()
        self.sync()
        return time.perf_counter() - t0

    def phases(self, iterations: int, step_s: Sequence[float] = ()) -> dict[str, list[float]]:
        """Per-phase seconds from a separate instrumented pass ({} when not applicable). `step_s`: the timed loop's
        own seconds of the whole step, given where `loop_phase` is "step" (subtractive_phases then times no step)."""
        return {}

    # Whether the phase pass of a training step times the whole compiled step beside forward and forward+backward
    # (subtractive_phases: TensorFlow, JAX, MXNet), rather than forward, backward and update apart (PyTorch).
    subtractive = False

    def loop_phase(self) -> str | None:
        """The phase that is the whole step exactly as the timed loop ran it, or None. On device-resident data an
        inference step is its forward alone ("forward") and a compiled training step is subtractive_phases's "step":
        the phase pass takes that phase from the timed loop's own samples instead of running the step again (a
        ResNet-50 step at batch 32 repeated after the loop cost as much as a timed one). Host-fed and file-fed steps
        hold their batch's copy or read, which the pass times apart: None."""
        config = getattr(self, "config", None)
        if config is None or config.data != "device" or type(self).phases is Workload.phases:
            return None  # a workload without a phase pass (TFLite, null) gets none from the loop either
        if step_is_forward(config.mode, config.data):
            return "forward"
        return "step" if self.subtractive else None

    def logits(self, x):
        """This workload's model's outputs (logits) for `x`, a NumPy NCHW float32 batch of its batch size, computed as
        its engine computes them, before any timing: what the output check compares with PyTorch's
        (bench/measurement/outputs_check.py). None: this engine does not expose them."""
        return None

    def compiled_logits(self, x):
        """(outputs, compiled_again) for `x` of the compiled forward an inference run's timed loop ran, called after
        the loop on a batch of the loop's shape: what the output check adds for an engine whose `logits` come from
        its eager model (bench/measurement/outputs_check.py). `compiled_again`: whether the call traced or compiled
        anew (then it ran another program than the loop's; None: not known). None: `logits` already come from the
        engine, or the run trains (its compiled function is the whole step)."""
        return None

    def weights_checksum(self) -> float | None:
        """A sum over the trainable weights (None: this workload does not train), read before and
        after the timed loop: a training step that updates nothing is caught by the certificate."""
        return None

    def reset_memory(self) -> None:
        """Reset device peak-memory counters before the timed loop."""

    def memory(self) -> dict:
        """Peak memory of the run. CPU: the process high-water mark (each run is its own process)."""
        return {
            "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "kind": "process peak RSS (ru_maxrss)",
            "rss_now_bytes": psutil.Process().memory_info().rss,
        }


class InferenceRuntimeWorkload(Workload):
    """An inference-only runtime (ONNX Runtime, OpenVINO): one step is one forward, its only phase, on a NumPy
    batch in host memory (`host_x`)."""

    config: RunConfig
    host_x: object

    def _input(self):
        if self.feed is not None:  # files: the decode pool's next batch (bench/adapters/torch/input_files.py)
            return self.feed.next()[0]
        # host-fed: a fresh copy of the batch every step, as the other frameworks' host mode makes one
        return self.host_x if self.config.data == "device" else self.host_x.copy()

    def _location(self, batch) -> str:
        return "cpu"  # a NumPy array lives in host memory

    def _inside_timer(self, call: str) -> str:
        prefix = {"host": "a fresh copy of the batch + ",
                  "files": "the decode pool's next batch (torchvision DataLoader workers) + "}
        return prefix.get(self.config.data, "") + call

    def _open_feed(self) -> None:
        """Data mode `files`: the decode pool these runtimes' users feed them with (torchvision's, lazily)."""
        if self.config.data == "files":
            from .torch.input_files import decode_pool_feed

            self.feed = decode_pool_feed(self.config)

    def phases(self, iterations: int, step_s: Sequence[float] = ()) -> dict[str, list[float]]:
        return timed_phases(["forward"], self.sync, [self.step], iterations)  # files: the step includes its batch


def timed_phases(names: list[str], sync, fns, iterations: int) -> dict[str, list[float]]:
    """Time each callable in `fns` in order, syncing around each, for `iterations` rounds."""
    out: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(iterations):
        for name, fn in zip(names, fns):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            out[name].append(time.perf_counter() - t0)
    return out


def subtractive_phases(sync, iterations: int, forward, forward_backward=None, step=None,
                       prefix: tuple = (), step_s: Sequence[float] = ()) -> dict[str, list[float]]:
    """Phases of a compiled step that cannot be cut apart: time forward (+loss), forward+backward
    (gradients) and the whole fused step, each as its own compiled function; backward = (forward+backward)
    - forward, update = step - (forward+backward). `prefix`: (name, fn) pairs timed first (e.g. h2d).
    `step_s`: the timed loop's own seconds of this very step (Workload.loop_phase "step"): the whole step is their
    median, and the pass neither warms nor times the step again. Inference: forward only."""
    names, fns = [n for n, _ in prefix], [f for _, f in prefix]
    if forward_backward is None:
        return timed_phases(names + ["forward"], sync, fns + [forward], iterations)
    # Run each function once first: a function the timed loop never called would be timed tracing (the step
    # itself the timed loop called).
    for fn in (forward, forward_backward) + (() if step_s else (step,)):
        fn()
    sync()
    if step_s:
        raw = timed_phases(names + ["forward", "forward+backward"], sync, fns + [forward, forward_backward],
                           iterations)
        raw["step"] = [statistics.median(step_s)] * iterations  # the headline's own median step
    else:
        raw = timed_phases(names + ["forward", "forward+backward", "step"], sync,
                           fns + [forward, forward_backward, step], iterations)
    fb, whole = raw.pop("forward+backward"), raw.pop("step")
    raw["backward"] = [max(0.0, t - f) for t, f in zip(fb, raw["forward"])]
    raw["update"] = [max(0.0, s - t) for s, t in zip(whole, fb)]
    return raw
