"""A distributed strategy as a registered object: what the config checks, the record, the plan and the report ask of
it, declared once in its own module (bench/strategies/<name>.py), so that no other module compares strategy names.

A strategy belongs to a family (how its workers share the work) and declares what follows from it: whether it
communicates (and over which link model), whether its workers step together, how its global step is worded in a
record, the training recipe it runs (a strategy with its own optimizer says so, for the fairness certificate), and the
settings it checks on a config (`check`). The registry keeps them in the order the report lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ConfigError

# The names other rooms need without comparing strings: one process (the default), and the data-parallel strategy a
# check or a probe runs when it needs one (the network probe, the GPU check, a distributed block's default)
ONE_PROCESS, ALL_REDUCE = "none", "allreduce"
SINGLE, BASELINE, DATA_PARALLEL, PARAMETER_SERVER, PIPELINE, BATCH_METHOD = (
    "single process", "no communication", "data parallel", "parameter server", "pipeline", "batch method")

# The SGD recipe every framework trains with (bench/adapters/base.py uses it; a strategy with another optimizer
# declares its own `recipe`).
LEARNING_RATE, MOMENTUM = 0.01, 0.9
SGD_RECIPE = f"SGD(lr={LEARNING_RATE}, momentum={MOMENTUM})"


@dataclass(frozen=True)
class Strategy:
    """One distributed strategy (or `none`, one process)."""

    name: str
    title: str  # how the report names it in a sentence or a row ('data parallel (DDP all-reduce)')
    legend: str  # how the scaling figures label it ('all-reduce (DDP / MWMS)')
    family: str
    link_model: str | None = None  # the alpha-beta model of its communication: 'ring', 'ps', or None (none modelled)
    synchronous: bool = False  # its workers step together (their weights must agree after training)
    overlaps_backward: bool = False  # it communicates during backward (its overlap share is measured)
    overlap_baseline: str | None = None  # the strategy it is compared with for overlap (the same without overlap)
    buckets: bool = False  # gradients travel in buckets (the bucket size is a setting worth showing)
    server_update: bool = False  # a server applies the update (its time is part of the step)
    pipeline_baseline: bool = False  # the data-parallel run the pipelines are set against (same global batch)
    chunks_per_worker: int = 1  # pipeline: model chunks (stages) each worker holds
    micro_batched: bool = False  # pipeline: the batch is split into micro-batches by a schedule
    one_forward_one_backward: bool = False  # pipeline: once filled, a stage alternates one forward and one backward
    batch_method_section: bool = False  # its record carries the batch method's own section (work units, processes)
    global_step: str = "slowest rank per step"  # what a record's global step is
    recipe: str = SGD_RECIPE  # the training recipe it runs
    rate_is_images: bool = True  # False: a batch method, whose steps are not batches (its rate is read otherwise)
    hatch: str = ""  # its bars' hatch in the scaling figures
    line: str = "-."  # its line style in the accuracy-over-time figure
    check: Callable = field(default=lambda config: None, compare=False)  # raises ConfigError on a bad config

    @property
    def distributed(self) -> bool:
        return self.family != SINGLE

    @property
    def pipeline(self) -> bool:
        return self.family == PIPELINE

    @property
    def baseline(self) -> bool:
        """The no-communication run every scaling comparison divides by."""
        return self.family == BASELINE

    @property
    def communicates(self) -> bool:
        return self.family in (DATA_PARALLEL, PARAMETER_SERVER)

    @property
    def micro_batch_sweep(self) -> bool:
        """A one-stage-per-worker schedule whose micro-batch count PROFILE=parallelism varies (GPipe, 1F1B)."""
        return self.micro_batched and self.chunks_per_worker == 1


REGISTRY: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    REGISTRY[strategy.name] = strategy
    return strategy


def strategy(name: str) -> Strategy:
    """The registered strategy `name`; a ConfigError naming the valid choices otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"invalid strategy {name!r}; valid choices: {', '.join(REGISTRY)}") from None


def has(strategy_names, test: Callable[[Strategy], bool]) -> list[bool]:
    """For each strategy name (a table's column), whether `test` holds of its strategy."""
    return [test(strategy(n)) for n in strategy_names]


def names(where: Callable[[Strategy], bool] = lambda s: True) -> tuple[str, ...]:
    """The registered strategies' names (in the report's order) for which `where` holds."""
    return tuple(n for n, s in REGISTRY.items() if where(s))
