"""The settings of a run, declared once: each one's name, value type, the default a new config takes and what a
record that lacks it reads as, and what it means.

`bench.config.RunConfig` (the validated config, defaults resolved when it is built) and the record's `RunSettings`
(bench/results/record.py: the same fields as plain data, unchecked, so loading a record imports no framework) are
both made from this table, and the command line's flags and their help too. Adding a setting is one row here (and
its checks in bench/config.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .strategies import ONE_PROCESS


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REQUIRED = _Marker("REQUIRED")  # a config must be given it / every record has it
DEFAULT = _Marker("DEFAULT")  # a record lacking it reads as the config's default
DEFAULT_CI_TARGET = 0.02  # +-2% relative half-width of the median's 95% CI


@dataclass(frozen=True)
class RunField:
    """One setting. `default`: RunConfig's (None: resolved when the config is built, from the protocol, the model or
    this machine). `recorded`: what a record written before the key existed reads as (REQUIRED: every record has
    it; DEFAULT: the config's default; None: not recorded). `nullable`: a record may hold null. `schema`: JSON
    Schema keywords beyond the type."""

    name: str
    type: type
    meaning: str
    default: Any = REQUIRED
    recorded: Any = REQUIRED
    nullable: bool = False
    schema: dict = field(default_factory=dict)

    @property
    def absent_reads(self) -> Any:
        """What a record lacking this key reads as."""
        return self.default if self.recorded is DEFAULT else self.recorded


RUN_FIELDS: tuple[RunField, ...] = (
    RunField("framework", str, "the framework to measure"),
    RunField("model", str, "the network, from the catalogue (`bench list models`)"),
    RunField("mode", str, "inference (a forward pass) or training (forward, backward and an optimizer update)",
             default="inference"),
    RunField("engine", str, "the framework's engine (eager, a compiler, a runtime option; `bench list frameworks`"
             " lists each framework's, its first the default)",
             default=None),
    RunField("device", str, "where it runs",
             default="cpu"),
    RunField("precision", str, "the numeric precision (int8 through the framework's own quantisation tool, inference"
             " only)",
             default="fp32"),
    RunField("batch_size", int, "images per step (per worker with --scaling weak)",
             default=32, schema={"minimum": 1}),
    RunField("image_size", int, "the side of the square input images in pixels (default: the model's own, 224 for "
             "most); token models take none",
             default=None, nullable=True),
    RunField("sequence_length", int, "a token model's tokens per sequence (default: the model's own, 128 for "
             "BERT-base); image models take none",
             default=None, recorded=None, nullable=True),
    RunField("threads", int, "intra-op threads (default: this machine's physical cores, divided among the workers)",
             default=None, schema={"minimum": 1}),
    RunField("protocol", str, "adaptive: warm up until steady, then at least 10 timed iterations to the CI target "
             "or the time budget; seed: fixed counts (the 2019 study's 10 + 20)",
             default="adaptive"),
    RunField("warmup", int, "seed: warm-up iterations; adaptive: the most the warm-up may take while waiting for "
             "steady steps (default 10 seed, 50 adaptive)",
             default=None, nullable=True),
    RunField("iterations", int, "seed: timed iterations; adaptive: the least (never below 10) (default 20 seed, 10 "
             "adaptive)",
             default=None, nullable=True),
    RunField("time_budget_s", float, "adaptive: seconds of timing beyond the minimum iterations, counted from the "
             "end of the first iteration (default 60; seed ignores it)",
             default=None, recorded=None, nullable=True),
    RunField("ci_target", float, "adaptive: stop once the median's 95% CI half-width is within this share of it",
             default=DEFAULT_CI_TARGET, recorded=None, nullable=True),
    RunField("data", str, "device: synthetic batches already on the device; host: copied to it every step; "
             "files: JPEGs decoded by the framework's own input pipeline (see --data-dir)",
             default="device"),
    RunField("seed", int, "the random seed of the weights and the synthetic data",
             default=0, recorded=None, nullable=True),
    RunField("phase_iterations", int, "iterations of the instrumented pass after the timed loop "
             "(forward/backward/update times); 0 skips it",
             default=5, recorded=None, nullable=True),
    RunField("strategy", str, "none: one process; the rest run several workers (data parallel, parameter servers, "
             "model and pipeline parallel)",
             default=ONE_PROCESS, recorded=DEFAULT),
    RunField("workers", int, "worker processes (ranks)",
             default=1, recorded=DEFAULT),
    RunField("nodes", int, "emulated nodes on this machine (network namespaces joined by a link), or real "
             "machines with --cluster",
             default=1, recorded=DEFAULT),
    RunField("link_gbit", float, "shape the emulated link to this rate in Gbit/s (0: unshaped)",
             default=0.0, recorded=DEFAULT),
    RunField("link_delay_ms", float, "one-way delay added on the emulated link",
             default=0.0, recorded=DEFAULT),
    RunField("bucket_mb", float, "the all-reduce's gradient bucket size (PyTorch DDP)",
             default=25.0, recorded=DEFAULT),
    RunField("scaling", str, "weak: --batch-size per worker; strong: --batch-size is the global batch",
             default="weak", recorded=None, nullable=True),
    RunField("backend", str, "collectives: auto (NCCL with a GPU per rank, gloo on CPUs), nccl or gloo",
             default="auto", recorded=DEFAULT),
    RunField("oversubscribe", bool, "allow more workers than this machine has cores or memory for",
             default=False, recorded=DEFAULT),
    RunField("cluster", str, "real machines: a comma-separated host list, or slurm (the Slurm step's nodes); "
             "empty: this machine",
             default="", recorded=DEFAULT),
    RunField("rendezvous", str, "torchrun's rendezvous on real machines",
             default="static", recorded=DEFAULT),
    RunField("micro_batches", int, "pipeline strategies: micro-batches per step",
             default=1, recorded=DEFAULT),
    RunField("pipeline_cut", str, "pipeline strategies: '' (stages balanced by counted FLOPs), 'time' (by measured "
             "time), or 'a,b' (the unit where each stage after the first starts)",
             default="", recorded=DEFAULT),
    RunField("data_dir", str, "--data files: an ImageFolder tree of JPEGs (empty: a procedural set of --data-images"
             " images)",
             default="", recorded=DEFAULT),
    RunField("data_images", int, "--data files without --data-dir: how many procedural images",
             default=2000, recorded=DEFAULT),
)
BY_NAME = {f.name: f for f in RUN_FIELDS}
# Free-form settings beside the declared ones (an experiment's own keys): a dict, left out of a config's identity.
EXTRA = "extra"
