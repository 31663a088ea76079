"""Model and pipeline parallel: the model's layers cut into one stage per worker (or two, for the interleaved
schedules and ZB-V), every stage seeing the whole batch, split into micro-batches by a schedule
(bench/runs/distributed/pipeline.py)."""

from ..errors import ConfigError
from .base import PIPELINE, REGISTRY, Strategy, register


def _check(config) -> None:
    """What every pipeline schedule needs of a config (the cut's units, which need the adapter, are checked by the
    config itself)."""
    s, me = config.strategy, REGISTRY[config.strategy]
    if config.workers < 2:
        raise ConfigError(f"strategy {s!r} cuts the model into one stage per worker: workers >= 2")
    if not me.micro_batched and config.micro_batches != 1:
        raise ConfigError(f"{s} feeds one whole batch at a time: micro_batches must be 1")
    if me.chunks_per_worker > 1 and config.micro_batches % config.workers:
        # the interleaved schedules run their micro-batches in rounds of p (ZB-V needs at least p of them)
        raise ConfigError(f"{s} runs micro-batches in rounds of one per worker: micro_batches="
                          f"{config.micro_batches} must be a multiple of workers={config.workers}")
    if config.batch_size % config.micro_batches:
        raise ConfigError(f"micro_batches={config.micro_batches} must divide batch_size={config.batch_size}")
    cut = config.pipeline_cut.replace(",", "").replace(" ", "")
    if config.pipeline_cut and config.pipeline_cut != "time" and not cut.isdigit():
        raise ConfigError(f"pipeline_cut {config.pipeline_cut!r}: '' (balanced by counted FLOPs), 'time' (balanced "
                          "by a timing pass before the run) or the stages' first units, 'a,b'")


def _pipeline(name: str, title: str, chunks: int = 1, micro_batched: bool = True, alternates: bool = False) -> Strategy:
    return register(Strategy(name, title, title, PIPELINE, chunks_per_worker=chunks, micro_batched=micro_batched,
                             one_forward_one_backward=alternates, check=_check))


MODEL_PARALLEL = _pipeline("model_parallel", "model parallel (naive split)", micro_batched=False)
GPIPE = _pipeline("gpipe", "GPipe")
ONE_F_ONE_B = _pipeline("1f1b", "1F1B", alternates=True)
INTERLEAVED_1F1B = _pipeline("interleaved_1f1b", "interleaved 1F1B (2 stages per worker)", chunks=2)
INTERLEAVED_ZB = _pipeline("interleaved_zb", "interleaved zero bubble (2 stages per worker)", chunks=2)
ZBV = _pipeline("zbv", "zero bubble V (2 stages per worker)", chunks=2)
