"""The result record: one run's typed sections, its versioned JSON (every older format loads), its schema, its row.

Modelled on pyperf's Run: a run is built while it is measured, then written once and only read. Each
section is a dataclass whose annotations are the JSON Schema (bench/results/schema.py generates it); keys a
section does not declare (written by a newer checkout) are kept and written back unchanged, and optional
keys an older record lacks stay absent when it is written again.

Formats: 2 added repetitions (repeat, attempt), the sweep a run belongs to, interference and sanity flags;
3 a `distributed` section (strategy, workers, link, one entry per rank), null for one process; 4 defines the
`startup` section (prepare and first-iteration seconds, and where the process's seconds went), which format 3
records may carry or lack; 5 gives a transformer's and an int8 run's facts typed sections of their own
(`attention`, `outputs_check`, `int8`), which format 1-4 records held in their free `settings` dict and are moved from
when read.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

from .. import strategies
from ..errors import SchemaError
from ..host.devices import device_label
from ..host.manifest import collect_manifest, host_name, mask_text, reduced_precision_features
from ..run_fields import EXTRA, REQUIRED, RUN_FIELDS
from .schema import JSON, OPTIONAL, VALIDATOR, compile_check, json_fields, json_schema, key, strip_none

if TYPE_CHECKING:
    from ..config import RunConfig

SCHEMA_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
STATUSES = ("ok", "skipped", "error")

# The per-run checks that make up the fairness certificate (True passed, False failed, None not applicable).
CERTIFICATE_CHECKS = ("threads_match", "no_autograd_in_inference", "params_match_published", "recipe_match",
                      "weights_changed", "data_placement_match")



class NewerFormatError(SchemaError):
    """A record written by a newer checkout in a format this one cannot read (readers count it apart: an update
    reads it, unlike a damaged file)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"record of a newer format: schema_version {version}; this checkout reads "
                         f"{READABLE_VERSIONS[0]} to {SCHEMA_VERSION}")
        self.version = version


UNKNOWN = "unknown"  # how the environment table reads a CPU fact an older manifest did not record


def _decode(tp: Any, value: Any) -> Any:
    """A JSON value as the annotation's type: nested sections become their dataclasses."""
    base, _ = strip_none(tp)
    if value is None:
        return None
    if typing.get_origin(base) is list:
        (item,) = typing.get_args(base) or (Any,)
        return [_decode(item, v) for v in value]
    if typing.get_origin(base) is None and isinstance(base, type) and issubclass(base, Section):
        return value if isinstance(value, base) else base.from_json(value)
    return value


def _encode(value: Any) -> Any:
    """A value as JSON: sections as their JSON, fresh containers (a caller's edits never reach the record)."""
    if isinstance(value, Section):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Section(Mapping):
    """A record section: typed fields, the keys it does not declare in `unknown`, JSON in and out.

    It is also a read-only mapping view of its JSON form (`s["key"]`, `s.get`, `s.keys()`, `"key" in s`),
    for notebooks and JSON-minded callers (tests); package code reads the attributes. Like its JSON, a
    section with no keys is falsy."""

    unknown: dict[str, Any] = dataclasses.field(default_factory=dict, metadata={JSON: False})

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        absent = self.__dict__.get("_absent")
        if absent:  # a key set after construction is written, even where the loaded record lacked it
            absent.discard(name)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The section from its JSON (unchecked: `Record.from_json` validates a whole record first)."""
        types = {f.name: tp for f, tp in json_fields(cls)}
        obj = cls(**{k: _decode(types[k], v) for k, v in data.items() if k in types},
                  unknown={k: v for k, v in data.items() if k not in types})
        object.__setattr__(obj, "_order", tuple(data))  # written back in the order it was read
        return obj

    def to_json(self) -> dict[str, Any]:
        out = self._keys()
        order = self.__dict__.get("_order")
        return {**{k: out[k] for k in order if k in out}, **out} if order else out

    def _keys(self) -> dict[str, Any]:
        absent = self.__dict__.get("_absent", ())
        out = {f.name: _encode(getattr(self, f.name)) for f, _ in json_fields(type(self)) if f.name not in absent}
        out.update(_encode(self.unknown))
        return out

    def __getitem__(self, name: str) -> Any:
        return self.to_json()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Section):
            return type(self) is type(other) and self.to_json() == other.to_json()
        return self.to_json() == dict(other) if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:  # as its JSON: tables that show a flag list read as they always did
        return repr(self.to_json())


def section(cls: type) -> type:
    """Make `cls` a section dataclass; optional keys not given to the constructor stay out of its JSON."""
    cls = dataclasses.dataclass(kw_only=True, eq=False, repr=False)(cls)
    optional = frozenset(f.name for f, _ in json_fields(cls) if f.metadata.get(OPTIONAL))
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, **given: Any) -> None:
        init(self, **given)
        object.__setattr__(self, "_absent", set(optional - given.keys()))

    cls.__init__ = __init__
    return cls


def optional(default: Any = None, **schema) -> Any:
    """An optional key; `default` is what reading it gives when a record lacks it."""
    if isinstance(default, list | dict):
        return key(optional=True, default_factory=lambda: type(default)(default), **schema)
    return key(optional=True, default=default, **schema)


@dataclasses.dataclass(frozen=True)
class JsonFormat:
    """A file's format: its current version, the upgrade of any readable version to it, and its check."""

    version: int
    upgrade: Callable[[Mapping[str, Any]], dict[str, Any]]
    validate: Callable[[Any], None]


class Versioned(Section):
    """A file's top section, written with its format's `schema_version`; `from_json` reads every readable older
    format. A subclass sets `json_format` once its module has built its schema (the schema needs the class)."""

    json_format: ClassVar[JsonFormat]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], check: bool = True) -> Self:
        """From its JSON in any readable format, validated and upgraded to the current one (SchemaError naming
        the problem). With `check=False`, the sections of a partial one as they are (nothing upgraded or
        validated: for judging parts of it held as JSON)."""
        if check:
            data = cls.json_format.upgrade(data)
            cls.json_format.validate(data)
        obj = super().from_json({k: v for k, v in data.items() if k != "schema_version"})
        object.__setattr__(obj, "_order", tuple(data))
        return obj

    def _keys(self) -> dict[str, Any]:  # in the current format (what is written to disk)
        return {"schema_version": self.json_format.version, **super()._keys()}


@section
class Flag(Section):
    """A named reason to doubt a number (bench/measurement/flags.py says which numbers it makes unusable)."""

    name: str = key(minLength=1)
    reason: str


def _with_run_fields(cls: type) -> type:
    """Give RunSettings (before @section) the run's settings as bench/run_fields.py declares them: each key's type
    (nullable where a record may hold null or lacks it and reads as None), required or optional, and what a record
    lacking it reads as."""
    annotations: dict = {}
    for f in RUN_FIELDS:
        annotations[f.name] = f.type | None if f.nullable else f.type
        setattr(cls, f.name, key(**f.schema) if f.recorded is REQUIRED else optional(f.absent_reads, **f.schema))
    annotations[EXTRA] = dict[str, Any]
    setattr(cls, EXTRA, optional({}))
    cls.__annotations__ = {**cls.__dict__.get("__annotations__", {}), **annotations}
    return cls


@section
@_with_run_fields
class RunSettings(Section):
    """The configuration measured, as plain data: the fields of bench.config.RunConfig, both made from
    bench/run_fields.py, unchecked (loading a record needs neither its framework nor its device). Keys older records
    lack read as their defaults."""

    @property
    def distributed(self) -> bool:
        return strategies.strategy(self.strategy).distributed


@section
class SweepPlacement(Section):
    """Where a run sits in its sweep."""

    id: str
    order_index: int | None = optional()
    profile: str | None = optional()
    order_seed: int | None = optional()
    round: int | None = optional()
    # The block it ran in: a sweep that runs each comparison group's configs back to back in a round names the round
    # here (absent in older sweeps and for a retry, which runs apart from its group): the report compares configs
    # within blocks where both sides have them (bench/stats/blocks.py).
    block: int | None = optional()
    planned_runs: int | None = optional()
    # Where a scheduler ran it (bench/sweep/executors.py): absent for a run of the local executor.
    executor: str | None = optional()
    job_id: str | None = optional()  # the Slurm job (array job _ task)
    node: str | None = optional()  # the node the job ran on
    job_state: str | None = optional()  # set only when the job ended before its run did (CANCELLED, TIMEOUT, ...)
    # A retry of a disturbed run waits until the machine is quiet (bench/host/interference.py: wait_until_quiet):
    # how long it waited, and the busy share it saw last.
    quiet_wait_s: float | None = optional()
    busy_share_before: float | None = optional()


@section
class Summary(Section):
    """Throughput and latency of the timed iterations (bench.stats.summarize_latencies, plus cv). Throughput is in
    samples per second under the `images_per_sec` names: images, or a token model's sequences (`sample_unit`), whose
    tokens per second are the median times the sequence length."""

    n: int
    images_per_sec_median: float
    images_per_sec_ci_low: float | None = optional()
    images_per_sec_ci_high: float | None = optional()
    images_per_sec_mean: float | None = optional()
    ci_coverage: float | None = optional()
    ci_rel_halfwidth: float | None = optional()
    latency_ms_median: float | None = optional()
    latency_ms_mean: float | None = optional()
    latency_ms_std: float | None = optional()
    latency_ms_sem: float | None = optional()
    latency_ms_mad: float | None = optional()
    latency_ms_p50: float | None = optional()
    latency_ms_p90: float | None = optional()
    latency_ms_p99: float | None = optional()
    latency_ms_min: float | None = optional()
    latency_ms_max: float | None = optional()
    cv: float | None = optional()
    sample_unit: str = optional("images", enum=["images", "sequences"])
    tokens_per_sec_median: float | None = optional()  # a token model's: samples/s x the sequence length


_SECONDS = {"items": {"type": "number", "minimum": 0}}


@section
class Samples(Section):
    """Seconds per iteration, warm-up and timed, and why each loop stopped."""

    warmup_s: list[float] = key(default_factory=list, **_SECONDS)
    timed_s: list[float] = key(default_factory=list, **_SECONDS)
    warmup_stop: str | None = optional()
    timed_stop: str | None = optional()
    timed_wall_s: float | None = optional()


@section
class Phases(Section):
    """Where a step goes: median milliseconds per phase, from an instrumented pass."""

    iterations: int | None = optional()
    method: str | None = optional()
    median_ms: dict[str, float] = optional({})
    samples_s: dict[str, Any] | None = optional()


@section
class Memory(Section):
    peak_bytes: float | None = optional()
    total_peak_bytes: float | None = optional()
    rss_now_bytes: float | None = optional()
    kind: str | None = optional()


@section
class Peak(Section):
    """The device's measured peak FLOP/s the utilisation is a share of (bench/measurement/peak.py)."""

    flops_per_sec: float | None = optional()
    when: str | None = optional()
    sweep_id: str | None = optional()


@section
class ModelInfo(Section):
    params: int | None = optional()
    params_published_millions: float | None = optional()
    flops_per_image: float | None = optional()
    flops_method: str | None = optional()
    note: str | None = optional()
    flops_note: str | None = optional()


@section
class Attention(Section):
    """How the run's engine computed a transformer's self-attention (the adapters say it; format 1-4:
    settings.attention): fused into one kernel or matrix products and a softmax, with the evidence."""

    implementation: str | None = optional()
    fused: bool | None = optional()
    evidence: str | None = optional()


@section
class OutputsCheck(Section):
    """The run's outputs for a fixed probe batch against the reference framework's fp32 outputs, before any timing
    (bench/measurement/outputs_check.py; format 1-4: settings.outputs_check); `compiled`: the compiled forward's, after
    the timed loop."""

    inputs: str | None = optional()
    precision: str | None = optional()
    passed: bool | None = optional()
    reason: str | None = optional()
    reference: str | None = optional()
    max_abs_diff: float | None = optional()
    reference_max_abs: float | None = optional()
    relative_diff: float | None = optional()
    tolerance: float | None = optional()
    compiled: dict[str, Any] | None = optional()


@section
class Int8(Section):
    """An int8 run's quantisation, by the framework's own tool, and its agreement with fp32 on a held-out set
    (bench/adapters/int8.py, bench/measurement/agreement.py; format 1-4: settings.int8); a tool's own details are kept
    beside these keys."""

    tool: str | None = optional()
    method: str | None = optional()
    sets: dict[str, Any] | None = optional()
    quantise_s: float | None = optional()
    cached: bool | None = optional()
    fp32_reference: str | None = optional()
    agreement: dict[str, Any] | None = optional()


# The facts a run's workload reports among its settings that the record keeps in sections of their own
TYPED_SETTINGS: dict[str, type[Section]] = {"attention": Attention, "outputs_check": OutputsCheck, "int8": Int8}


def typed_apart(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's settings split in two: the free rest, and the facts with a section of their own (TYPED_SETTINGS) as
    JSON, those that are None left out."""
    free = dict(settings)
    typed = {name: value for name in TYPED_SETTINGS if (value := free.pop(name, None)) is not None}
    return free, typed


@section
class Energy(Section):
    available: bool | None = optional()
    reason: str | None = optional()
    meter: str | None = optional()
    joules: float | None = optional()
    joules_per_image: float | None = optional()
    images_per_joule: float | None = optional()


@section
class Interference(Section):
    """What else ran on the machine during the timed loop (bench/host/interference.py)."""

    judged: bool | None = optional()
    other_cpu_share: float | None = optional()
    steal_share: float | None = optional()
    iteration_cv: float | None = optional()
    wall_s: float | None = optional()
    note: str | None = optional()
    others: str | None = optional()  # the busiest other processes over the loop: "name (pid) cpu s, ..."
    # page faults the process took over its loop (warm-up and timed): memory faulted in during the steps
    minor_faults: int | None = optional()
    major_faults: int | None = optional()


@section
class Certificate(Section):
    """The fairness certificate: each of CERTIFICATE_CHECKS True, False, or None (not applicable), and the
    facts they were judged on (bench/measurement/certificate.py)."""

    threads_requested: int | None = optional()
    threads_effective: int | None = optional()
    threads_match: bool | None = optional()
    no_autograd_in_inference: bool | None = optional()
    params: int | None = optional()
    params_published_millions: float | None = optional()
    params_rel_diff_vs_published: float | None = optional()
    params_match_published: bool | None = optional()
    flops_per_image: float | None = optional()
    optimizer: str | None = optional()
    loss: str | None = optional()
    recipe_match: bool | None = optional()
    weights_checksum_before: float | None = optional()
    weights_checksum_after: float | None = optional()
    weights_changed: bool | None = optional()
    data_placement: str | None = optional()
    data_placement_observed: dict[str, Any] | None = optional()
    data_placement_match: bool | None = optional()
    inside_timer: Any = optional()
    # the framework's documented process settings as the run had them: variable -> {value, set_by}
    # (bench/adapters/process_environment.py), beside the thread count every framework is held to
    process_environment: dict[str, Any] | None = optional()
    failed: list[str] = optional([])

    def check(self, name: str) -> bool | None:
        """One of CERTIFICATE_CHECKS."""
        return getattr(self, name)

    @property
    def checked(self) -> int:
        """How many checks applied."""
        return sum(self.check(c) is not None for c in CERTIFICATE_CHECKS)

    @property
    def failed_checks(self) -> list[str]:
        return [c for c in CERTIFICATE_CHECKS if self.check(c) is False]


@section
class Rank(Section):
    """One process of a distributed run."""

    rank: int = key(minimum=0)
    role: str
    node: int
    samples: int = key(minimum=0)
    phases_median_ms: dict[str, float] | None
    peak_rss_bytes: float | None
    pid: int | None = optional()
    threads: Any = optional()  # a count (TensorFlow) or the intra/inter-op pools (PyTorch)
    steps: int | None = optional()
    comm_bytes_per_step: float | None = optional()
    buckets_per_step: float | None = optional()
    window: dict[str, Any] | None = optional()
    checksum_before: float | None = optional()
    checksum_after: float | None = optional()
    loss_last: float | None = optional()
    device: str | None = optional()  # a GPU rank's own (cuda:<local rank>, or the GPU its ranks share)
    energy: Energy | None = optional()  # NVML per GPU, or RAPL read by one rank per machine
    memory: Memory | None = optional()  # a GPU rank's allocator peak over the timed steps
    images_per_sec: float | None = optional()  # this rank's own: its images per step over its median step
    utilisation: float | None = optional()  # of its GPU's measured peak (GPU ranks; CPU ranks share the cores)


@section
class PipelineStage(Section):
    """One stage of a pipeline run: its times per step (medians over the timed steps), what it held and sent."""

    stage: int | None = optional(minimum=0)
    params: int | None = optional()
    forward_ms: float | None = optional()
    backward_ms: float | None = optional()
    compute_ms: float | None = optional()  # forward, backward and (last stage) the loss
    wait_ms: float | None = optional()
    idle_ms: float | None = optional()
    update_ms: float | None = optional()
    bubble_share: float | None = optional()
    activation_bytes_per_micro_batch: int | None = optional()
    micro_batches_held_max: int | None = optional()
    activations_held_peak_bytes: int | None = optional()  # the micro-batches held x the bytes one of them saves
    sent_bytes_per_micro_batch: int | None = optional()
    peak_rss_bytes: float | None = optional()
    peak_memory_bytes: float | None = optional()


@section
class PipelinePrediction(Section):
    """What the pipeline model predicted for a run's step: the bubble, compute and the transfers between stages."""

    bubble: float | None = optional()
    bubble_source: str | None = optional()
    chunks_per_rank: int | None = optional()
    compute_step_s: float | None = optional()
    transfer_s: float | None = optional()
    step_s: float | None = optional()  # None where no link was measured for the transfers
    link: str | None = optional()
    form: str | None = optional()


@section
class Pipeline(Section):
    """A pipeline run (bench/runs/distributed/pipeline.py): the schedule and the cut its adapter set up, each stage's
    times and memory, the measured step and bubble against the model's, and the timeline of the median step."""

    strategy: str | None = optional()
    micro_batches: int | None = optional(minimum=1)
    stages: list[PipelineStage] = optional([])
    stages_count: int | None = optional()
    measured_step_s: float | None = optional()
    measured_bubble: float | None = optional()
    bubble_method: str | None = optional()
    predicted: PipelinePrediction | None = optional()
    # per stage, the median step's (kind, micro-batch, start s, end s) intervals; and the schedule's expected ones
    timeline: list[Any] | None = optional()
    timeline_step: str | None = optional()
    expected_timeline: list[Any] | None = optional()
    expected_bubble: float | None = optional()
    # the set-up the adapter reports (bench/adapters/torch/pipeline.py): schedule, chunks, the cut and its units
    schedule: str | None = optional()
    chunks_per_rank: int | None = optional()
    rank_stages: list[list[int]] | None = optional()
    schedule_ops: list[Any] | None = optional()
    cut_rule: str | None = optional()
    cut_starts: list[int] | None = optional()
    units: int | None = optional()
    batchnorm: str | None = optional()
    stage_params: list[int] | None = optional()
    stage_flops_per_image: list[float] | None = optional()
    unit_ms: list[float] | None = optional()
    stage_ms_timed: list[float] | None = optional()
    smoke_test: Any = optional()


@section
class BatchMethod(Section):
    """A batch method's run (Sandblaster L-BFGS, bench/runs/distributed/sandblaster.py): its processes and how they
    shared the cores, the work units each worker took and stole, evaluations per iteration."""

    processes: list[dict[str, Any]] = optional([])  # rank, role, pid, CPU seconds and share of one core
    cores: int | None = optional()
    core_sharing: str | None = optional()
    units_per_worker: list[int] = optional([])
    units_stolen_per_worker: list[int] = optional([])
    worker_ms_per_unit: list[float] = optional([])
    evaluations_per_iteration: float | None = optional()
    iterations: int | None = optional()
    loss_last: float | None = optional()


@section
class Distributed(Section):
    """A distributed run: strategy, workers, link and one section per rank."""

    strategy: str
    workers: int = key(minimum=1)
    nodes: int
    scaling: str
    worker_batch: int
    global_batch: int
    link: dict[str, Any]
    ranks: list[Rank]
    launch: str | None = optional()
    backend: str | None = optional()
    params: int | None = optional()
    grad_bytes: float | None = optional()
    overlap_share: float | None = optional()
    servers: list[dict[str, Any]] = optional([])
    accuracy: list[dict[str, Any]] | None = optional()
    global_step: str | None = optional()
    # pipeline strategies: the cut, per-stage times and memory, the schedule's timeline, the model's prediction
    pipeline: Pipeline | None = optional()
    # a batch method (Sandblaster L-BFGS): its processes and how they shared the cores, work units per worker
    sandblaster: BatchMethod | None = optional()


@section
class Startup(Section):
    """Start-up cost, apart from steady-state throughput: building the model, and the first iteration; and where
    the process's seconds went (bench/report/overhead.py tabulates them per sweep)."""

    prepare_s: float | None = optional()  # framework import (lazy, in the adapter), model build, export/compile
    first_iteration_s: float | None = optional()
    # seconds from the process's creation to the run's start: kernel start, interpreter, the package's imports
    process_start_s: float | None = optional()
    warmup_s: float | None = optional()  # the warm-up loop's wall time
    timed_s: float | None = optional()  # the timed loop's wall time
    phases_s: float | None = optional()  # the instrumented phase pass (first repetition only)
    checks_s: float | None = optional()  # utilisation (FLOP count, peak) and the fairness certificate
    manifest_s: float | None = optional()  # collecting the environment manifest
    # per compiled-artefact cache the build used: "hit" or "miss" (bench/adapters/compile_cache.py); None: none used
    build_cache: dict[str, str] | None = optional()


@section
class InputPipeline(Section):
    """Data mode `files`: the framework's own input pipeline, the image set it read (bench/images/files.py), what it
    read (count and checksum of the stream of relative paths), the decoded batch, the data wait of each timed step,
    how loader and compute shared the cores, and the loader's ceiling alone (first repetition only)."""

    pipeline: str | None = optional()
    source: str | None = optional()  # "procedural" or "data_dir"
    root: str | None = optional()
    files: int | None = optional()
    classes: int | None = optional()
    list_sha256: str | None = optional()
    skipped: list[dict[str, Any]] = optional([])
    skipped_count: int = optional(0)
    manifest: dict[str, Any] = optional({})
    images_read: int | None = optional()
    read_sha256: str | None = optional()
    batch_shape: list[int] | None = optional()
    layout: str | None = optional()
    image_size: int | None = optional()
    normalise_mean: list[float] = optional([])
    normalise_std: list[float] = optional([])
    loader_workers: int | None = optional()
    cores: int | None = optional()
    cpu_count: int | None = optional()
    core_rule: str | None = optional()
    data_wait_s: list[float] = optional([], **_SECONDS)
    data_wait_share: float | None = optional()
    ceiling: list[dict[str, Any]] = optional([])


@section
class CpuInfo(Section):
    model: str | None = optional()
    arch: str | None = optional()
    flags: list[str] = optional([])
    physical_cores: int | None = optional()
    logical_cpus: int | None = optional()
    mhz_advertised: Any = optional()
    smt: Any = optional(UNKNOWN)
    virtual_machine: Any = optional(UNKNOWN)
    # the CPU features an int8 or bf16 speed-up depends on (bench/adapters/precision.py), name -> present
    precision_features: dict[str, bool] = optional({})


@section
class GpuInfo(Section):
    name: str | None = optional()
    driver: str | None = optional()


@section
class GitInfo(Section):
    commit: str | None = optional()
    dirty: bool | None = optional()


@section
class FrameworkInfo(Section):
    """What the framework's adapter said about itself (its version, or why it was unavailable)."""

    version: str | None = optional()
    unavailable: str | None = optional()


@section
class Manifest(Section):
    """The machine and software a result depends on (bench/host/manifest.py), never secrets."""

    host: str
    cpu: CpuInfo
    libraries: dict[str, str]
    env: dict[str, str]
    git: GitInfo
    framework: FrameworkInfo | None = optional()
    gpus: list[GpuInfo] = optional([])
    python: str | None = optional()
    platform: str | None = optional()
    interpreter: str | None = optional()
    memory_bytes: float = optional(0)
    # what checked this record against its schema as it was written (fastjsonschema, or the plain-Python check of an
    # interpreter without it: bench/results/schema.py)
    record_check: str | None = optional()

    @classmethod
    def collect(cls, framework: Mapping[str, Any] | None = None) -> Manifest:
        """This machine's manifest, with what the framework's adapter said about itself."""
        return cls.from_json({**collect_manifest(dict(framework or {})), "record_check": VALIDATOR})


@section
class Record(Versioned):
    """One run. Build it with `Record.new` (or `Record.failure`), fill its sections, write it
    (bench/results/store.py); read records back with `Record.from_json` or the store's loaders."""

    record_id: str = key(default=None, minLength=8)
    config_key: str = key(default=None, pattern="^[0-9a-f]{16}$")
    repeat: int = key(default=0, minimum=0)
    attempt: int = key(default=0, minimum=0)
    sweep: SweepPlacement | None = None
    interference: Interference | None = None
    flags: list[Flag] = key(default_factory=list)
    created: str = None
    host: str = key(default=None, minLength=1)
    hardware: str = key(default=None, minLength=1)
    status: str = key(default="ok", enum=list(STATUSES))
    reason: str | None = None
    config: RunSettings = None
    label: str = None
    settings: dict[str, Any] = key(default_factory=dict)
    model: ModelInfo = key(default_factory=ModelInfo)
    samples: Samples = key(default_factory=Samples)
    summary: Summary | None = None
    phases: Phases | None = None
    memory: Memory | None = None
    peak: Peak | None = None
    utilisation: float | None = None
    energy: Energy = key(default_factory=Energy)
    fairness: Certificate | None = None
    traceback: str | None = None
    distributed: Distributed | None = None
    startup: Startup | None = None
    input: InputPipeline | None = optional()  # data mode `files` only
    attention: Attention | None = optional()  # a transformer's runs
    outputs_check: OutputsCheck | None = optional()  # a model with one set of weights everywhere
    int8: Int8 | None = optional()  # precision int8
    manifest: Manifest = None  # collected when the run ends
    duration_s: float = key(default=None, minimum=0)

    def __setattr__(self, name: str, value: Any) -> None:
        # A reason or traceback may quote a child process (a rank's stderr, a kernel's error), which may print the
        # environment: masked as the manifest masks a value, whenever it is set or loaded, before anything shows it.
        # A data folder's path may carry a share's user:password@ or a password=... segment: masked in the label,
        # the config and the input section as in any text the harness keeps.
        if name in ("reason", "traceback", "label") and isinstance(value, str):
            value = mask_text(value)
        elif name == "config" and getattr(value, "data_dir", None):
            value = dataclasses.replace(value, data_dir=mask_text(value.data_dir))
        elif name == "input" and getattr(value, "root", None):
            value = dataclasses.replace(value, root=mask_text(value.root))
        super().__setattr__(name, value)

    @classmethod
    def new(cls, config: RunConfig, repeat: int = 0, attempt: int = 0,
            sweep: SweepPlacement | Mapping[str, Any] | None = None) -> Record:
        """A record for `config` with nothing measured yet (status ok until something says otherwise).

        `repeat` numbers the fresh process this is among the config's repetitions; `attempt` counts
        retries of that repetition after a disturbed run; `sweep` places it in its sweep (id, order).
        """
        return cls(record_id=uuid.uuid4().hex, config_key=config.key, repeat=repeat, attempt=attempt,
                   sweep=_decode(SweepPlacement, sweep), created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                   host=host_name(), hardware=device_label(config.device),
                   config=RunSettings.from_json(config.to_dict()), label=config.label,
                   energy=Energy(available=False, reason="run did not reach the timed loop"))

    @classmethod
    def failure(cls, config: RunConfig, reason: str, detail: str | None = None, repeat: int = 0, attempt: int = 0,
                sweep: SweepPlacement | Mapping[str, Any] | None = None, status: str = "error",
                framework: Mapping[str, Any] | None = None) -> Record:
        """An `error` record for a run that died outside the harness (e.g. its notebook kernel), or a `skipped`
        one for a run that could not start (its framework's environment is not built). `framework`: what the
        manifest says of the framework (its version)."""
        record = cls.new(config, repeat, attempt, sweep)
        record.status, record.reason, record.traceback, record.duration_s = status, reason, detail, 0.0
        record.manifest = Manifest.collect(framework)
        return record

    def to_row(self) -> dict[str, Any]:
        """One tidy row: configuration, summary, phases and the derived columns the report tables use."""
        interference = self.interference or Interference()
        sweep = self.sweep or SweepPlacement(id=None)
        startup = self.startup or Startup()
        certificate = self.fairness or Certificate()
        row = {"record_id": self.record_id, "config_key": self.config_key, "host": self.host,
               "created": self.created, "status": self.status, "reason": self.reason, "label": self.label,
               "repeat": self.repeat, "attempt": self.attempt, "sweep_id": sweep.id,
               "order_index": sweep.order_index,
               "block": f"{sweep.id}:{sweep.block}" if sweep.block is not None else None,
               "run_flags": [f.name for f in self.flags], "run_flag_reasons": [f.reason for f in self.flags],
               "other_cpu_share": interference.other_cpu_share,
               "steal_share": interference.steal_share,
               "warmup_iterations": len(self.samples.warmup_s),
               "timed_stop": self.samples.timed_stop,
               **self.config.to_json(),
               "hardware": self.hardware,
               "framework_version": self.framework_version,
               "params": self.model.params, "flops_per_image": self.model.flops_per_image,
               "peak_flops": self.peak.flops_per_sec if self.peak else None,
               "utilisation": self.utilisation,
               "images_per_joule": self.energy.images_per_joule if self.energy.available else None,
               "energy_reason": None if self.energy.available else self.energy.reason,
               "peak_memory_bytes": self.memory.peak_bytes if self.memory else None,
               "duration_s": self.duration_s,
               "certificate_checked": certificate.checked, "certificate_failed": certificate.failed_checks,
               "prepare_s": startup.prepare_s,
               "first_iteration_s": startup.first_iteration_s}
        row.pop("extra", None)
        row.update(self._precision_columns())
        row.update(self.summary.to_json() if self.summary else {})
        row.update({f"phase_{k}_ms": v for k, v in (self.phases.median_ms if self.phases else {}).items()})
        return row

    def _precision_columns(self) -> dict[str, Any]:
        """The CPU's int8/bf16 features (older records: read from their CPU flags), an int8 run's quantisation and
        agreement with fp32 (bench/measurement/agreement.py), and the run's outputs against the reference
        framework's (bench/measurement/outputs_check.py)."""
        cpu = self.manifest.cpu if self.manifest else None
        features = (cpu.precision_features or reduced_precision_features(cpu.flags)) if cpu else {}
        int8 = self.int8 or {}
        agreement = int8.get("agreement") or {}
        calibration = (int8.get("sets") or {}).get("calibration") or {}
        outputs = self.outputs_check
        checked = {f"outputs_{k}": outputs.get(k) for k in ("passed", "relative_diff", "tolerance", "reference",
                                                             "reason")} if outputs else {}
        if outputs and outputs.get("compiled"):  # the compiled forward's, after the timed loop
            checked.update({f"outputs_compiled_{k}": outputs["compiled"].get(k)
                            for k in ("passed", "relative_diff", "reason", "compiled_again")})
        attention = self.attention
        if attention:  # how its engine ran the attention
            checked.update(attention_fused=attention.get("fused"), attention=attention.get("implementation"),
                           attention_evidence=attention.get("evidence"))
        return {"cpu_precision_features": ", ".join(k for k, v in features.items() if v) or "none", **checked,
                "int8_tool": int8.get("tool"), "int8_quantise_s": int8.get("quantise_s"),
                "int8_cached": int8.get("cached"),
                "int8_calibration_images": calibration.get("images", calibration.get("sequences")),
                **{f"int8_{k}": agreement.get(k) for k in ("sqnr_db", "cosine_mean", "cosine_min", "top1_agreement",
                                                          "fp32_distinct_classes", "images")}}

    def keep_settings(self, settings: Mapping[str, Any]) -> None:
        """The run's settings as its workload reported them: the facts with a section of their own (TYPED_SETTINGS)
        into it, the rest into the free `settings`."""
        free, typed = typed_apart(settings)
        for name, value in typed.items():
            setattr(self, name, TYPED_SETTINGS[name].from_json(value))
        self.settings = free

    @property
    def framework_version(self) -> str | None:
        """The framework version the record's manifest names (None when it names none)."""
        framework = self.manifest.framework if self.manifest else None
        return framework.version if framework else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def as_records(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """Records as Records: those given as JSON (notebooks and tests hold records as dicts) loaded and checked."""
    return [r if isinstance(r, Record) else Record.from_json(r) for r in records]


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """A record's JSON in the current format (a version 1 record was one process, not judged for
    interference; versions 1-2 had no distributed runs; versions 1-3 may lack the start-up section)."""
    version = data.get("schema_version") if isinstance(data, Mapping) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise NewerFormatError(version)
    if version not in READABLE_VERSIONS:
        raise SchemaError(f"invalid record: schema_version {version!r}; "
                          f"readable: {', '.join(map(str, READABLE_VERSIONS))}")
    record = {**data, "schema_version": SCHEMA_VERSION}
    if version == 1:
        record.update(repeat=0, attempt=0, sweep=None, interference=None, flags=[])
    if version <= 2:
        record["distributed"] = None
    record.setdefault("startup", None)
    if version <= 4 and isinstance(record.get("settings"), Mapping):  # the typed facts leave the free settings
        record["settings"], typed = typed_apart(record["settings"])
        record.update(typed)
    return record


def _record_schema() -> dict:
    schema = json_schema(Record)
    schema["required"] = ["schema_version", *schema["required"]]
    schema["properties"] = {"schema_version": {"const": SCHEMA_VERSION}, **schema["properties"]}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#", **schema,
        # An `ok` record carries its measurements (a summary, whose own schema requires the median and n,
        # and at least one timed sample); a skipped/error one says why.
        "if": {"properties": {"status": {"const": "ok"}}},
        "then": {"properties": {"summary": {"type": "object"},
                                "samples": {"properties": {"timed_s": {"minItems": 1}}}}},
        "else": {"properties": {"reason": {"type": "string", "minLength": 1}}},
    }


RECORD_SCHEMA = _record_schema()
_validate = compile_check(RECORD_SCHEMA)
Record.json_format = JsonFormat(SCHEMA_VERSION, upgrade, _validate)


def validate_record(record: Record | Mapping[str, Any]) -> None:
    """Raise SchemaError naming the first problem when `record` (a Record, or its JSON in any readable
    format) is not a valid record."""
    _validate(record.to_json() if isinstance(record, Record) else upgrade(record))
