"""The adapter interface (MLPerf-backend style): a framework builds a Workload for a RunConfig."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from .. import strategies
from ..errors import FrameworkUnavailableError, UnsupportedError
from ..host.devices import is_gpu
from ..host.manifest import declare_framework, dist_version
from ..models.catalogue import family_of
from ..paths import PROJECT_ROOT
from ..registry import Registry
from .distributed_runs import DistributedRuns
from .precision import INT8, int8_refusal, precision_unsupported
from .workload import (  # noqa: F401 - the adapter interface's names, where adapters import them
    CertificateFacts,
    InferenceRuntimeWorkload,
    Workload,
    step_is_forward,
    subtractive_phases,
    timed_phases,
)

if TYPE_CHECKING:  # adapters sit below the config layer: RunConfig is only a type here
    from ..config import RunConfig

# The training recipe every framework uses (the fairness rules: same loss, same optimizer).
# The SGD recipe every framework trains with, and Sandblaster's L-BFGS (bench/adapters/torch/sandblaster.py): each
# strategy declares the recipe it runs (bench/strategies/), which the fairness certificate checks.
LEARNING_RATE, MOMENTUM, OPTIMIZER = strategies.base.LEARNING_RATE, strategies.base.MOMENTUM, strategies.SGD_RECIPE
SANDBLASTER_OPTIMIZER = strategies.strategy("sandblaster").recipe


def _built(environment: str | None) -> Path | None:
    """The interpreter of an environment folder under the project root, where it is built."""
    python = PROJECT_ROOT / environment / "bin" / "python" if environment else None
    return python if python and python.exists() else None


MAIN_KERNEL = "python3"  # the main environment's Jupyter kernel (an adapter may name another: Adapter.kernel)
# A colour for a framework that declares none (a new package), after the declared ones: never two the same.
SPARE_COLOURS = ("#8c564b", "#ff7f0e", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2")


class Adapter(ABC):
    """A framework: its name, engines (first = default), import name, and how to prepare a run.

    Everything the rest of the package needs to know about a framework is declared here, so that a
    new framework is one file: what it can run (modes, precisions), the Jupyter kernel its runs
    execute in, the libraries the manifest lists for it, and its own hand-written loop."""

    name: ClassVar[str]
    engines: ClassVar[tuple[str, ...]]
    # How the report names and draws it, and the other names its published rows use (the 2019 study: "pytorch").
    display_name: ClassVar[str] = ""
    colour: ClassVar[str | None] = None
    aliases: ClassVar[tuple[str, ...]] = ()
    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")
    # What this framework's out-of-memory errors say, lower case without spaces or underscores (the reason of a
    # failed run is compared in the same form): the largest-batch search stops there, a run's reason says so.
    oom_markers: ClassVar[tuple[str, ...]] = ()
    # Environment variables its documentation says change performance: recorded in the manifest when set.
    environment_variables: ClassVar[tuple[str, ...]] = ()
    # The vendor-documented settings its processes start with (variable -> value, set before it loads where the user
    # has not set them; bench/adapters/process_environment.py), each kept after an interleaved A/B showed it helps.
    process_environment: ClassVar[dict[str, str]] = {}
    # The framework the tools default to where one must be picked (fidelity, FLOP counting, the link probe).
    reference: ClassVar[bool] = False
    module: ClassVar[str | None] = None
    distribution: ClassVar[str | None] = None
    # The other names its module is installed under (a GPU build: onnxruntime-gpu, tensorflow[and-cuda]'s tensorflow):
    # its version is read from whichever is installed.
    other_distributions: ClassVar[tuple[str, ...]] = ()
    # Modules its runs import besides its own (keras for JAX's models, torchvision for torch's): with one missing,
    # its runs are `skipped` records naming it, never errors.
    requires: ClassVar[tuple[str, ...]] = ()
    modes: ClassVar[tuple[str, ...]] = ("inference", "training")
    precisions: ClassVar[tuple[str, ...]] = ("fp32", "tf32", "bf16", "fp16")
    # Why a framework without "int8" in `precisions` has no int8 path (the framework table and the refusal say it).
    no_int8_because: ClassVar[str] = ""
    # Model families (bench/models/families.py) it runs none of, and why; and those its int8 path takes none of
    refused_families: ClassVar[dict[str, str]] = {}
    refused_int8_families: ClassVar[dict[str, str]] = {}
    # The Jupyter kernel a sweep runs this framework's notebooks in (MAIN_KERNEL: the main environment),
    # and for another kernel the virtual environment it runs in (a folder under the project root, built
    # by `make setup-<name>`): a framework whose pins conflict with the main environment's (MXNet).
    kernel: ClassVar[str] = MAIN_KERNEL
    environment: ClassVar[str | None] = None
    # A GPU build that cannot share the main environment (TensorFlow's CUDA 12 libraries sit where torch's CUDA 13
    # ones do): its kernel and folder (`make setup GPU=1`). A GPU config runs there when it is built.
    gpu_kernel: ClassVar[str | None] = None
    gpu_environment: ClassVar[str | None] = None
    # Distributions the manifest records for this framework (besides the framework's own).
    libraries: ClassVar[tuple[str, ...]] = ()
    # What a reader must know to read an engine's number (engine -> sentence); shown beside its findings.
    engine_notes: ClassVar[dict[str, str]] = {}
    # False for the harness-overhead adapter: its rows are not a framework's numbers.
    measures_a_framework: ClassVar[bool] = True
    # Its distributed runs (bench/adapters/distributed_runs.py): strategies, launch, rank groups; the base has none.
    # The instance, bound to this adapter, is `self.distributed`.
    distributed_runs: ClassVar[type[DistributedRuns]] = DistributedRuns

    def __init__(self) -> None:
        self.distributed = self.distributed_runs(self)

    def engines_for(self, mode: str, precision: str) -> tuple[str, ...]:
        """The engines a run of (mode, precision) can take, the default first: `engines`, unless a framework's int8
        path (or an inference-only engine) needs fewer."""
        return self.engines

    def interpreter(self) -> Path | None:
        """The Python of this framework's own environment (None: the main one, or not built)."""
        return _built(self.environment)

    def gpu_interpreter(self) -> Path | None:
        """The Python of this framework's GPU environment (None: none declared, or not built)."""
        return _built(self.gpu_environment)

    def kernel_for(self, device: str) -> str:
        """The Jupyter kernel a sweep runs a config on `device` in: the GPU environment's for a GPU where it is
        built, else the framework's own."""
        return self.gpu_kernel if is_gpu(device) and self.gpu_interpreter() else self.kernel

    def runs_here(self) -> bool:
        """Whether this process's environment can import the framework."""
        return not self.module or importlib.util.find_spec(self.module) is not None

    def version(self) -> str | None:
        if not self.distribution:
            return None
        names = (self.distribution, *self.other_distributions)
        if self.environment is None or self.runs_here():
            return next((v for v in map(dist_version, names) if v), None)
        python = self.interpreter()  # read the other environment's metadata without starting it
        paths = [str(p) for p in python.parent.parent.glob("lib/python*/site-packages")] if python else []
        found = [d.version for n in names for d in importlib.metadata.distributions(name=n, path=paths)]
        return found[0] if found else None

    def missing_requirements(self) -> list[str]:
        """The modules of `requires` this process cannot import."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def check_available(self) -> None:
        """Raise FrameworkUnavailableError with the reason when this framework cannot run here. A framework
        with its own environment is available to the main one when that environment is built."""
        if self.runs_here():
            missing = self.missing_requirements() if self.environment is None else []
            if missing:
                raise FrameworkUnavailableError(
                    f"{self.name} is installed ({self.module} {self.version() or '?'}) but its runs also need "
                    f"{', '.join(missing)}, which this environment lacks: `pip install {' '.join(missing)}`")
            return
        if self.environment is None:
            raise FrameworkUnavailableError(f"{self.name} is not installed (no module {self.module!r})")
        if self.interpreter() is None or self.version() is None:
            raise FrameworkUnavailableError(
                f"{self.name} runs in an environment of its own ({self.environment}, kernel {self.kernel!r}), "
                f"which is not built here: `make setup-{self.name}` builds it (see its log for why it failed)")

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        """Why this framework cannot run (mode, precision, device) here, or None. A profile expands such
        combinations away (listed as not applicable) instead of starting a kernel only to skip."""
        if mode not in self.modes:
            return f"{self.name} has no {mode} (it runs {', '.join(self.modes)})"
        if precision == INT8:
            return int8_refusal(self.name, self.precisions, mode, device, self.no_int8_because)
        if precision not in self.precisions:
            return f"{self.name} does not run {precision} (it runs {', '.join(self.precisions)})"
        return precision_unsupported(self.name, device, precision)

    def model_refusal(self, model: str, precision: str | None = None) -> str | None:
        """Why this framework cannot run catalogue model `model` (at `precision`): its family (bench/models/families.py)
        is one it refuses, or one its int8 path takes none of; None where it can."""
        family = family_of(model)
        if family.name in self.refused_families:
            return f"{self.name} runs no {family.kind} model: {self.refused_families[family.name]}"
        if precision == INT8 and family.name in self.refused_int8_families:
            return (f"{self.name} int8 takes no {'token' if family.tokens else family.kind} model: "
                    f"{self.refused_int8_families[family.name]}")
        return None

    def cannot_run(self, mode: str, precision: str, device: str, model: str | None = None) -> str | None:
        """Why a run of (mode, precision, device) of `model` would be skipped here before it starts, or None: what it
        cannot do, or the framework not being available. A run, a largest-batch search and a sweep ask this first."""
        reason = (self.model_refusal(model, precision) if model else None) or self.not_applicable(mode, precision,
                                                                                                   device)
        if reason:
            return reason
        try:
            self.check_available()
        except UnsupportedError as exc:
            return str(exc)
        return None

    def info(self) -> dict:
        """Library details for the manifest (versions, BLAS/oneDNN, CUDA); called after prepare."""
        return {"version": self.version()}

    def doctor(self) -> dict:
        """What this framework reaches on this machine, for `bench doctor` (asked in a fresh process of its own
        environment): bench.adapters.doctor.facts. A framework with GPU runs says how its build sees the GPUs."""
        refused = self.not_applicable("inference", self.precisions[0], "cuda:0")
        return {"version": self.version(), "built_for": "CPU only" if refused else "not probed", "gpus": [],
                "gpu": refused or f"{self.name} does not say which GPUs it sees"}

    @abstractmethod
    def prepare(self, config: RunConfig) -> Workload:
        """Build model, data and step for `config`; raise UnsupportedError for what it cannot run."""

    has_hand_loop: ClassVar[bool] = False

    def hand_loop(self, config: RunConfig):
        """A minimal hand-written step for the fidelity check (None: this framework has none).

        Written the way the framework's own tutorials do it, without the harness's code, so that
        harness vs hand loop measures what the harness adds."""
        return None

    def gemm_label(self, device: str, precision: str) -> str | None:
        """The name of this framework's own matrix product for `device` and `precision` (None: it offers none).
        The device peak is the fastest of every framework's (bench/measurement/peak.py)."""
        return None

    def gemm(self, device: str, precision: str, threads: int, n: int):
        """A callable that multiplies two n x n matrices on `device` and waits for the result (see gemm_label)."""
        raise NotImplementedError

    def count_forward_flops(self, model: str, input_size: int) -> float | None:
        """FLOPs of one sample's forward pass (an image of side `input_size`, or a sequence of that length) counted
        on this framework's definition (None: it cannot count)."""
        return None


ADAPTERS: Registry[Adapter] = Registry("framework")


def register(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: a framework package registers its adapter (timm's @register_model); the manifest learns
    its distributions and environment variables, and it gets a colour if it declares none."""
    adapter = cls()
    ADAPTERS.add(cls.name, adapter)
    declare_framework(tuple(d for d in (cls.distribution, *cls.libraries) if d), cls.environment_variables)
    if cls.colour is None:
        taken = {ADAPTERS.get(n).colour for n in ADAPTERS}
        cls.colour = next((c for c in SPARE_COLOURS if c not in taken), SPARE_COLOURS[len(ADAPTERS) % 8])
    return cls
