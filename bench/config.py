"""RunConfig: the one validated, immutable description of a benchmark run; defaults live here."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from dataclasses import dataclass, field

import psutil

from . import strategies
from .adapters import ADAPTERS
from .adapters.precision import INT8, int8_refusal
from .errors import ConfigError
from .host import devices
from .host.links import MAX_EMULATED_NODES, netem_unavailable
from .host.machines import RENDEZVOUS, SLURM, check_cluster, parse_hosts
from .images.files import check_data_dir
from .masking import brief
from .models import get_model
from .run_fields import EXTRA, REQUIRED, RUN_FIELDS

MODES = ("inference", "training")
# fp32 is strict: TF32 tensor cores only as "tf32"; int8 is static post-training quantisation (CPU inference)
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "int8")
PROTOCOLS = ("adaptive", "seed")
# files: JPEGs read and decoded by the framework's own input pipeline inside the step (bench/images/files.py)
DATA_PLACEMENTS = ("device", "host", "files")
# Distributed training (bench/runs/distributed/): strategies.ONE_PROCESS ("none") is a single process. Which
# strategies a framework implements is declared by its adapter (`adapter.distributed.strategies`).
STRATEGIES = strategies.names()  # bench/strategies/: each a registered object
# The model's layers cut into one stage per worker (bench/runs/distributed/pipeline.py): every stage sees the whole
# batch (split into `micro_batches` by a pipeline schedule), so the global batch is batch_size.
PIPELINE_STRATEGIES = strategies.names(lambda s: s.pipeline)
SCALINGS = ("weak", "strong")  # weak: batch_size per worker (as SINGA); strong: batch_size is global

# Per-protocol defaults. seed = the 2019 study exactly; adaptive = steady-state + CI target.
PROTOCOL_DEFAULTS = {
    "seed": dict(warmup=10, iterations=20, time_budget_s=0.0),
    "adaptive": dict(warmup=50, iterations=10, time_budget_s=60.0),
}
# What one distributed rank needs at least: a whole framework process (interpreter, framework, model, batch).
RANK_MEMORY_BYTES = 2**30


def _with_run_fields(cls: type) -> type:
    """Give RunConfig (before @dataclass) the run's settings as bench/run_fields.py declares them, each with its
    default (`X | None` where it is resolved when the config is built), and the free-form `extra`."""
    annotations: dict = {}
    for f in RUN_FIELDS:
        annotations[f.name] = f.type | None if f.default is None else f.type
        if f.default is not REQUIRED:
            setattr(cls, f.name, f.default)
    annotations[EXTRA] = dict
    setattr(cls, EXTRA, field(default_factory=dict, compare=False, hash=False))
    cls.__annotations__ = annotations
    return cls


def _choice(field_name: str, value: object, valid) -> None:
    if value not in valid:
        raise ConfigError(f"invalid {field_name} {value!r}; valid choices: {', '.join(map(str, valid))}")


# Every number has a finite range: NaN or infinity would otherwise reach the record (invalid JSON).
MAX_VALUE = 1_000_000


def _positive(field_name: str, value: object, allow_zero: bool = False, upper: float = MAX_VALUE) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero) or value > upper:
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"invalid {field_name} {value!r}; it must be a finite number {bound} and <= {upper:g}")


def _integer(field_name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"invalid {field_name} {value!r}; it must be an integer")


def _device(value: object) -> None:
    try:
        device = devices.normalise_device(value) if isinstance(value, str) else None
    except ValueError:
        device = None
    if device is None:
        raise ConfigError(f"invalid device {value!r}; valid choices: cpu, cuda, cuda:N")
    if devices.is_gpu(device):
        present = [f"cuda:{g['index']}" for g in devices.gpus()]
        if device not in present:
            raise ConfigError(
                f"device {value!r} asked for, but this machine has "
                f"{'GPUs ' + ', '.join(present) if present else 'no GPU'}; valid choices: cpu"
                + "".join(f", {p}" for p in present))


def _switch(field_name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"invalid {field_name} {value!r}; valid choices: true, false")


_CHOICES = {"mode": MODES, "precision": PRECISIONS, "protocol": PROTOCOLS, "data": DATA_PLACEMENTS,
            "strategy": STRATEGIES, "scaling": SCALINGS, "backend": devices.BACKENDS, "rendezvous": RENDEZVOUS}
# name -> (a count: integers only, zero allowed, upper bound)
_NUMBERS = {"batch_size": (True, False, MAX_VALUE), "seed": (True, True, 2**31 - 1),
            "image_size": (True, False, MAX_VALUE), "sequence_length": (True, False, MAX_VALUE),
            "threads": (True, False, MAX_VALUE),
            "warmup": (True, True, MAX_VALUE), "iterations": (True, False, MAX_VALUE),
            "time_budget_s": (False, True, MAX_VALUE), "ci_target": (False, False, 1.0),
            "phase_iterations": (True, True, MAX_VALUE), "workers": (True, False, 1024), "nodes": (True, False, 1024),
            "link_gbit": (False, True, 1000), "link_delay_ms": (False, True, 1000), "bucket_mb": (False, False, 10_000),
            "micro_batches": (True, False, 4096),
            "data_images": (True, False, MAX_VALUE)}


# What each run setting means, for `--help` (bench/cli.py) and the docs; its choices, range and default are read from
# the declarations the validator uses (_CHOICES, _NUMBERS, the registries, RunConfig's defaults), so the help and the
# refusal of a bad value cannot drift apart.
MEANING = {f.name: f.meaning for f in RUN_FIELDS}  # each setting's --help, from bench/run_fields.py


def choices_text(name: str) -> str:
    """The valid values of setting `name`, as its refusal names them ('' where any text goes)."""
    if name in _CHOICES:
        return ", ".join(map(str, _CHOICES[name]))
    if name == "framework":
        return ", ".join(ADAPTERS.names())
    if name == "device":
        return "cpu, cuda, cuda:N"
    if name in ("oversubscribe",):
        return "true, false"
    if name in _NUMBERS:
        count, allow_zero, upper = _NUMBERS[name]
        kind = "an integer" if count else "a number"
        return f"{kind} {'>= 0' if allow_zero else '> 0'} and <= {upper:g}"
    return ""


def option_help(name: str) -> str:
    """`--help` for run setting `name`: its meaning, its valid values and its default (argparse's % escaped)."""
    default = next(f.default for f in dataclasses.fields(RunConfig) if f.name == name)
    parts = [MEANING[name]]
    if name != "model" and (valid := choices_text(name)):
        parts.append(f"valid: {valid}")
    if default is not None and default is not dataclasses.MISSING and name not in ("warmup", "iterations"):
        parts.append(f"default: {default!r}" if isinstance(default, str) else f"default: {default}")
    return "; ".join(parts).replace("%", "%%")


def check_path_length(name: str, path: str) -> None:
    """Refuse a path the file system cannot hold (a name over NAME_MAX, or the whole over PATH_MAX), naming it."""
    limits = (os.pathconf("/", "PC_NAME_MAX"), os.pathconf("/", "PC_PATH_MAX")) if hasattr(os, "pathconf") \
        else (255, 4096)
    longest = max((len(part.encode()) for part in path.split("/")), default=0)
    if longest > limits[0] or len(path.encode()) >= limits[1]:
        raise ConfigError(f"invalid {name} {brief(path)!r}: longer than the file system allows (a folder name at "
                          f"most {limits[0]} bytes, the path under {limits[1]}); valid: an existing folder's path")


def check_value(name: str, value: object) -> None:
    """Refuse a value of the setting `name` that no run could have, naming it and the valid choices (ConfigError).

    The one check of a single value: RunConfig makes it for every field it is given, and a profile for every item
    of every block's axes and settings before it expands them, so a value refused on the command line is refused
    in every block. What depends on other settings (an engine of the framework, a strategy it implements, this
    machine's limits) RunConfig checks when the whole config is built."""
    if name == "framework":
        ADAPTERS.get(value)
    elif name == "model":
        get_model(value)
    elif name == "device":
        _device(value)
    elif name == "engine":
        if not isinstance(value, str):
            raise ConfigError(f"invalid engine {value!r}; it must be an engine's name")
    elif name == "cluster":
        check_cluster(value)
    elif name == "data_dir":
        if not isinstance(value, str):
            raise ConfigError(f"invalid data_dir {value!r}; it must be a folder's path")
        check_path_length("data_dir", value)
    elif name == "pipeline_cut":
        if not isinstance(value, str):
            raise ConfigError(f"invalid pipeline_cut {value!r} ({type(value).__name__}); valid choices: '' (balanced "
                              "by counted FLOPs), 'time', or the stages' first units as text, 'a,b' (quote it in YAML)")
    elif name == "oversubscribe":
        _switch(name, value)
    elif name in _CHOICES:
        _choice(name, value, _CHOICES[name])
    elif name in _NUMBERS:
        count, allow_zero, upper = _NUMBERS[name]
        if count:
            _integer(name, value)
        _positive(name, value, allow_zero=allow_zero, upper=upper)


@dataclass(frozen=True)
@_with_run_fields
class RunConfig:
    """One run: the settings bench/run_fields.py declares, checked. Fields left as None are resolved from the defaults
    when the object is built.

    warmup/iterations mean: `seed` protocol - exact counts; `adaptive` - the warm-up cap and the
    minimum number of timed iterations, never below 10 (bench/measurement/loop.py: MIN_STEADY_ITERATIONS; timing
    continues until the CI target or the budget, and stops at the timed loop's cap).
    """

    def __post_init__(self) -> None:
        for name in FIELDS:  # every value given, on its own: the checks a profile makes of its blocks too
            if getattr(self, name) is not None:
                check_value(name, getattr(self, name))
        adapter = ADAPTERS.get(self.framework)
        spec = get_model(self.model)
        engines = adapter.engines_for(self.mode, self.precision)
        engine = engines[0] if self.engine is None else self.engine
        at = "" if engines == adapter.engines else f" at {self.mode} {self.precision}"
        _choice(f"engine for {self.framework}{at}", engine, engines)
        device = devices.normalise_device(self.device)
        image_size, sequence_length = self._input_size(spec, adapter)
        self._check_distributed(adapter)
        self._check_files()
        if self.precision == INT8:  # refused before any work: a framework without an int8 path, training, a GPU
            refusal = int8_refusal(self.framework, adapter.precisions, self.mode, device, adapter.no_int8_because)
            if refusal:
                raise ConfigError(f"invalid precision 'int8': {refusal}")
        # Workers share this machine's cores: each gets cores / workers threads unless told otherwise.
        threads = max(1, devices.default_threads() // self.workers) if self.threads is None else self.threads
        proto = PROTOCOL_DEFAULTS[self.protocol]
        warmup = proto["warmup"] if self.warmup is None else self.warmup
        iterations = proto["iterations"] if self.iterations is None else self.iterations
        budget = proto["time_budget_s"] if self.time_budget_s is None else self.time_budget_s
        for name, value in dict(engine=engine, device=device, image_size=image_size, sequence_length=sequence_length,
                                threads=threads, warmup=warmup, iterations=iterations,
                                time_budget_s=float(budget)).items():
            object.__setattr__(self, name, value)

    def _input_size(self, spec, adapter) -> tuple[int | None, int | None]:
        """(image_size, sequence_length), resolved from the model's defaults: an image model takes an image side and
        no sequence length; a token model the reverse, and neither image files nor several workers (no text input
        pipeline, no distributed transformer runs yet)."""
        if spec.model_family.tokens:
            if self.image_size is not None:
                raise ConfigError(f"image_size {self.image_size} does not suit {self.model}: it reads token ids; "
                                  "give sequence_length instead")
            n = spec.default_sequence_length if self.sequence_length is None else self.sequence_length
            if not 1 <= n <= spec.max_sequence_length:
                raise ConfigError(f"sequence_length {n} does not suit {self.model}; "
                                  f"it accepts 1 to {spec.max_sequence_length}")
            if self.data == "files":
                raise ConfigError(f"data 'files' reads image files; {self.model} reads token ids: "
                                  "valid choices: device, host")
            refusal = adapter.model_refusal(self.model, self.precision)
            if self.precision == INT8 and refusal:
                raise ConfigError(f"invalid precision 'int8' for {self.model}: {refusal}")
            if self.strategy_of.distributed:
                raise ConfigError(f"strategy {self.strategy!r}: distributed runs take image models; "
                                  f"{self.model} runs as one process (strategy {STRATEGIES[0]})")
            return None, n
        if self.sequence_length is not None:
            raise ConfigError(f"sequence_length {self.sequence_length} does not suit {self.model}: it reads "
                              "images; give image_size instead")
        image_size = spec.default_image_size if self.image_size is None else self.image_size
        if not spec.min_image_size <= image_size <= spec.max_image_size:
            raise ConfigError(f"image_size {image_size} does not suit {self.model}; "
                              f"it accepts {spec.min_image_size} to {spec.max_image_size}")
        return image_size, None

    @property
    def input_size(self) -> int:
        """The side of the images, or a token model's sequence length: what its synthetic batch's shape takes
        (bench/models/inputs.py)."""
        return self.image_size if self.sequence_length is None else self.sequence_length

    def _check_files(self) -> None:
        """Image files are read only in data mode `files`; a data dir is checked before any work (exit 2)."""
        if self.data != "files":
            if self.data_dir:
                raise ConfigError(f"data_dir {self.data_dir!r} is read only with data 'files' (got {self.data!r})")
            return
        if self.distributed:
            raise ConfigError("data 'files' runs one process; valid choice for a distributed run: data device or host")
        if self.data_dir:
            check_data_dir(self.data_dir, self.batch_size)

    def _check_distributed(self, adapter) -> None:
        if not self.strategy_of.distributed:  # a distributed-only setting given to one process does nothing: refused
            given = [f"{name}={getattr(self, name)!r}" for name in DISTRIBUTED_FIELDS[1:]
                     if getattr(self, name) != getattr(RunConfig, name) and name not in _SHAPING_FIELDS]
            if given:
                raise ConfigError(f"{', '.join(given)}: settings of a distributed run need a distributed strategy; "
                                  f"valid choices: {', '.join(STRATEGIES[1:])}")
            return
        supported = adapter.distributed.strategies
        if self.strategy not in supported:
            raise ConfigError(f"invalid strategy {self.strategy!r} for {self.framework}; valid choices: "
                              f"{', '.join(supported) or 'none (this framework has no distributed runs)'}")
        if self.mode != "training":
            raise ConfigError(f"strategy {self.strategy!r} needs mode 'training' (got {self.mode!r})")
        self._check_cluster(adapter)
        if self.workers % self.nodes and not self._tf_tasks_on_slurm(adapter):
            raise ConfigError(f"workers={self.workers} do not divide evenly over nodes={self.nodes}")
        if self.nodes == 1 and (self.link_gbit or self.link_delay_ms):
            raise ConfigError("link_gbit / link_delay_ms shape the link between emulated nodes: set nodes >= 2")
        if not self.strategy_of.pipeline and (self.micro_batches != 1 or self.pipeline_cut):
            raise ConfigError("micro_batches / pipeline_cut are settings of a pipeline strategy: "
                              f"{', '.join(PIPELINE_STRATEGIES)}")
        self.strategy_of.check(self)  # the strategy's own settings (bench/strategies/)
        if self.strategy_of.pipeline:
            self._check_pipeline()
        if self.scaling == "strong" and self.batch_size % self.workers:
            raise ConfigError(f"strong scaling splits batch_size={self.batch_size} over workers={self.workers}: "
                              "it must divide evenly")
        self._check_machine()

    def _check_pipeline(self) -> None:
        """The schedule's own checks run as every strategy's (bench/strategies/pipelines.py); the cut's units need
        the adapter."""
        if self.pipeline_cut and self.pipeline_cut != "time":  # the model's units, counted without running it
            reason = ADAPTERS.get(self.framework).distributed.pipeline_cut_refusal(self)
            if reason:
                raise ConfigError(reason)

    def _tf_tasks_on_slurm(self, adapter) -> bool:
        """TF_CONFIG tasks on Slurm: one Slurm task (a `node` of the run) per TF task, SlurmClusterResolver's layout."""
        return self.cluster == SLURM and adapter.distributed.slurm_tasks(self.strategy, self.workers) is not None

    def _check_cluster(self, adapter) -> None:
        """Real machines: a framework that joins them, one host per node, no emulated link, a rendezvous its
        launcher has."""
        if self.rendezvous != "static":
            if self.rendezvous not in adapter.distributed.rendezvous_kinds:
                raise ConfigError(f"invalid rendezvous {self.rendezvous!r} for {self.framework}: its tasks are given "
                                  "every address (TF_CONFIG); valid choice: static")
            if not self.on_real_cluster:
                raise ConfigError(f"rendezvous {self.rendezvous!r} joins real machines: set cluster (a host list or "
                                  f"'{SLURM}'); valid choice here: static")
        if not self.cluster:
            return
        if not adapter.distributed.multi_machine:
            able = [n for n in ADAPTERS if ADAPTERS.get(n).distributed.multi_machine]
            raise ConfigError(f"invalid cluster {self.cluster!r} for {self.framework}: its ranks run on one machine; "
                              f"valid choices: framework {' or '.join(able)}")
        if self.nodes < 2:
            raise ConfigError(f"cluster {self.cluster!r} spans machines: set nodes >= 2 (a run on one machine leaves "
                              "cluster out)")
        if self.link_gbit or self.link_delay_ms:
            raise ConfigError("link_gbit / link_delay_ms shape emulated links; a real cluster's network is what it "
                              "is: leave them out with cluster")
        if self.cluster != SLURM and len(parse_hosts(self.cluster)) != self.nodes:
            raise ConfigError(f"cluster {self.cluster!r} lists {len(parse_hosts(self.cluster))} hosts for "
                              f"nodes={self.nodes}; valid: one host per node, node 0 first")
        if not adapter.distributed.independent_workers_connect and self.strategy_of.baseline:
            raise ConfigError(f"independent {self.framework} workers never connect, so their results cannot reach one "
                              "machine: run the independent baseline without cluster (one machine)")
        if self._tf_tasks_on_slurm(adapter):
            tasks = adapter.distributed.slurm_tasks(self.strategy, self.workers)
            if self.nodes != tasks:
                raise ConfigError(f"invalid nodes {self.nodes} for {self.framework} on Slurm: one Slurm task per TF "
                                  f"task (SlurmClusterResolver), so nodes = {tasks} ({self.workers} workers"
                                  + (", a ps and a chief" if tasks > self.workers else "") + ")")

    def _check_machine(self) -> None:
        """What this machine cannot run, refused before any process starts: more emulated nodes than the emulation
        has addresses for, a link delay without netem, more ranks than cores or memory (unless oversubscribed)."""
        real_cluster = self.on_real_cluster
        if not real_cluster and self.nodes > MAX_EMULATED_NODES:
            raise ConfigError(f"invalid nodes {self.nodes}: emulated nodes on this machine are 2 to "
                              f"{MAX_EMULATED_NODES} (real machines: cluster, a host list or '{SLURM}')")
        if not real_cluster and self.nodes > 1 and self.link_delay_ms:
            reason = netem_unavailable()
            if reason:
                raise ConfigError(f"invalid link_delay_ms {self.link_delay_ms:g}: a link delay cannot be emulated "
                                  f"here ({reason}); valid here: link_delay_ms 0 (rate shaping with link_gbit works)")
        ranks = self.ranks_here
        self._check_gpus(ranks)
        cores, memory = devices.usable_cpus(), psutil.virtual_memory().total
        fit = max(1, min(cores, memory // RANK_MEMORY_BYTES))
        if ranks > fit and not self.oversubscribe:
            raise ConfigError(
                f"invalid workers {self.workers}: {ranks} worker processes on this machine, each a whole framework "
                f"process that needs a core and about {RANK_MEMORY_BYTES / 2**30:g} GiB, but it has {cores} cores "
                f"and {memory / 2**30:.1f} GiB; valid here: workers 1 to {fit} per machine (oversubscribe=true "
                "runs more anyway, for an oversubscription experiment)")

    def _check_gpus(self, ranks: int) -> None:
        """GPU ranks need their GPUs (one each, or one shared over gloo when asked for); never CPU workers instead.
        torchrun ranks are judged by `rank_placement`; other frameworks' GPU layouts by their adapter."""
        adapter = ADAPTERS.get(self.framework)
        if adapter.distributed.workers_in_one_process(self.strategy, self.device, self.nodes) and self.nodes > 1:
            raise ConfigError(f"invalid nodes {self.nodes} for {self.framework} {self.strategy} on {self.device}: "
                              "its workers are the devices of one process on one machine; valid choice: nodes 1")
        if self.backend != "auto" and not adapter.distributed.chooses_backend:
            raise ConfigError(f"invalid backend {self.backend!r} for {self.framework}: its collectives are its own; "
                              "valid choice: auto")
        if not devices.is_gpu(self.device) and self.backend == "auto":
            return
        if devices.is_gpu(self.device) and not adapter.distributed.chooses_backend:
            reason = adapter.distributed.gpu_layout_refusal(self.strategy, ranks, self.nodes, len(devices.gpus()))
            if reason:
                raise ConfigError(f"invalid distributed config: {reason}")
            return
        try:
            devices.rank_placement(self.device, 0, ranks, len(devices.gpus()), self.backend)
        except ValueError as exc:
            raise ConfigError(f"invalid distributed config: {exc}") from None

    @property
    def on_real_cluster(self) -> bool:
        """Real machines (a `cluster`, or --master-addr's rendezvous) rather than this one."""
        return bool(self.cluster or self.extra.get("real_cluster"))

    @property
    def ranks_here(self) -> int:
        """The ranks this machine runs: all of them, or on a real cluster its share (one TF task per Slurm task)."""
        if not self.on_real_cluster:
            return self.workers
        return 1 if self._tf_tasks_on_slurm(ADAPTERS.get(self.framework)) else self.workers // self.nodes

    @property
    def distributed(self) -> bool:
        return self.strategy_of.distributed

    @property
    def strategy_of(self) -> strategies.Strategy:
        """The strategy as its registered object (bench/strategies/)."""
        return strategies.strategy(self.strategy)

    @property
    def worker_batch(self) -> int:
        """Images per worker per step (weak scaling: batch_size; strong: batch_size / workers; a pipeline stage: the
        whole batch)."""
        if self.strategy_of.pipeline:  # a stage sees the whole batch
            return self.batch_size
        return self.batch_size // self.workers if self.scaling == "strong" else self.batch_size

    @property
    def global_batch(self) -> int:
        if self.strategy_of.pipeline:  # every stage trains on the same images
            return self.batch_size
        return self.worker_batch * self.workers

    @property
    def data_seed(self) -> int:
        """The seed of this process's synthetic data: `seed`, or a distributed rank's own (see `for_rank`)."""
        return self.extra.get("data_seed", self.seed)

    def for_rank(self, rank: int, device: str | None = None) -> RunConfig:
        """What one rank of this distributed run trains, as a single process: its share of the batch and its own
        shard of the data (its own data seed), on its own `device` (a GPU rank's, from its local rank); the weights'
        seed stays `seed`, the same on every rank."""
        single = {name: getattr(RunConfig, name) for name in DISTRIBUTED_FIELDS}  # the declared defaults
        return dataclasses.replace(self, batch_size=self.worker_batch, device=device or self.device, **single,
                                   extra={**self.extra, "data_seed": self.seed + 1000 * (rank + 1)})

    @property
    def link(self) -> str:
        if self.nodes == 1:
            return "loopback"
        if self.on_real_cluster:
            return f"{self.nodes} machines" + (f" ({self.cluster})" if self.cluster == SLURM else "")
        rate = f"{self.link_gbit:g} Gbit/s" if self.link_gbit else "unshaped"
        return f"{self.nodes} emulated nodes, {rate}" + (f", +{self.link_delay_ms:g} ms" if self.link_delay_ms else "")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def key(self) -> str:
        """Stable identity of the measured configuration (what resume matches on).

        Only fields that differ from their declared default are hashed, so adding a field with a
        default later leaves every existing record's key unchanged (a resume after an upgrade neither
        redoes nor double-counts runs). Fields resolved from None (engine, threads, ...) always count.
        """
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        d = {k: v for k, v in self.to_dict().items() if k != "extra" and v != defaults[k]}
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        label = (f"{self.framework}/{self.engine} {self.model} {self.mode} {self.precision} "
                 f"bs={self.batch_size} {self.device}")
        if self.distributed:  # strategy and workers in every label: never mixed with single-process rows
            label += f" {self.strategy} x{self.workers} ({self.scaling}, {self.link})"
        if self.data == "files":  # read through the framework's input pipeline: never mixed with synthetic rows
            label += " files" + (f" ({self.data_dir})" if self.data_dir else "")
        return label


FIELDS = tuple(f.name for f in RUN_FIELDS)
FIELD_TYPES = {f.name: f.type for f in RUN_FIELDS}  # what a command-line flag parses to
DISTRIBUTED_FIELDS = ("strategy", "workers", "nodes", "link_gbit", "link_delay_ms", "bucket_mb", "scaling",
                      "oversubscribe", "backend", "cluster", "rendezvous", "micro_batches", "pipeline_cut")
# Distributed settings a single-process config may carry at their values (a profile's `settings` apply to every
# block; the emulated link, the bucket and scaling are refused or ignored by nodes and workers of 1 already).
_SHAPING_FIELDS = ("link_gbit", "link_delay_ms", "bucket_mb", "scaling")



def make_config(**kwargs) -> RunConfig:
    """Build a RunConfig from keyword arguments, rejecting unknown keys by name."""
    unknown = sorted(set(kwargs) - set(FIELDS))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; valid: {', '.join(FIELDS)}")
    missing = [k for k in ("framework", "model") if kwargs.get(k) is None]
    if missing:
        raise ConfigError(f"missing required setting(s) {', '.join(missing)}")
    return RunConfig(**{k: v for k, v in kwargs.items() if v is not None})
