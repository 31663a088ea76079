"""The adapter interface (MLPerf-backend style): a framework builds a Workload for a RunConfig."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import resource
import time
from abc import ABC, abstractmethod
from typing import ClassVar

import psutil

from ..config import RunConfig
from ..errors import FrameworkUnavailableError

# The training recipe every framework uses (the fairness rules: same loss, same optimizer).
LEARNING_RATE = 0.01
MOMENTUM = 0.9
OPTIMIZER = f"SGD(lr={LEARNING_RATE}, momentum={MOMENTUM})"


class Workload(ABC):
    """A prepared model + data + step for one config. Adapters fill `params` and `settings`."""

    params: int = 0
    settings: dict

    @abstractmethod
    def step(self) -> None:
        """One iteration (inference or training step); may return before the device is done."""

    def sync(self) -> None:
        """Block until all queued device work is finished (a no-op for synchronous runtimes)."""

    def timed_iteration(self) -> float:
        """Seconds for one step, with the device synchronised before each clock read."""
        self.sync()
        t0 = time.perf_counter()
        self.step()
        self.sync()
        return time.perf_counter() - t0

    def phases(self, iterations: int) -> dict[str, list[float]]:
        """Per-phase seconds from a separate instrumented pass ({} when not applicable)."""
        return {}

    def reset_memory(self) -> None:
        """Reset device peak-memory counters before the timed loop."""

    def memory(self) -> dict:
        """Peak memory of the run. CPU: the process high-water mark (each run is its own process)."""
        return {
            "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "kind": "process peak RSS (ru_maxrss)",
            "rss_now_bytes": psutil.Process().memory_info().rss,
        }


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


def dist_version(distribution: str) -> str | None:
    """Installed version of a distribution, without importing it."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class Adapter(ABC):
    """A framework: its name, engines (first = default), import name, and how to prepare a run."""

    name: ClassVar[str]
    engines: ClassVar[tuple[str, ...]]
    module: ClassVar[str | None] = None
    distribution: ClassVar[str | None] = None
    # Distributed data-parallel training: the strategies this framework implements (see
    # bench.config.STRATEGIES), the module run as each rank, and how ranks are started:
    # "torchrun" (one torchrun agent per node) or "tf_config" (one process per TF_CONFIG task).
    distributed_strategies: ClassVar[tuple[str, ...]] = ()
    distributed_worker: ClassVar[str | None] = None
    distributed_launch: ClassVar[str | None] = None

    def version(self) -> str | None:
        return dist_version(self.distribution) if self.distribution else None

    def check_available(self) -> None:
        if self.module and importlib.util.find_spec(self.module) is None:
            raise FrameworkUnavailableError(f"{self.name} is not installed (no module {self.module!r})")

    def info(self) -> dict:
        """Library details for the manifest (versions, BLAS/oneDNN, CUDA); called after prepare."""
        return {"version": self.version()}

    @abstractmethod
    def prepare(self, config: RunConfig) -> Workload:
        """Build model, data and step for `config`; raise UnsupportedError for what it cannot run."""

    has_hand_loop: ClassVar[bool] = False

    def hand_loop(self, config: RunConfig):
        """A minimal hand-written step for the fidelity check (None: this framework has none).

        Written the way the framework's own tutorials do it, without the harness's code, so that
        harness vs hand loop measures what the harness adds."""
        return None
