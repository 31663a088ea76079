"""Data parallel by all-reduce: each worker's gradients averaged over a ring every step, during backward in buckets
(`allreduce`: DDP, MultiWorkerMirroredStrategy, MXNet's kvstore) or after backward (`allreduce_nosync`: the same
without overlap, what the overlap comparison divides by)."""

from .base import ALL_REDUCE, DATA_PARALLEL, Strategy, register

ALLREDUCE = register(Strategy(ALL_REDUCE, "data parallel (DDP all-reduce)", "all-reduce (DDP / MWMS)", DATA_PARALLEL,
                              link_model="ring", synchronous=True, overlaps_backward=True,
                              overlap_baseline="allreduce_nosync", buckets=True, pipeline_baseline=True, hatch="//",
                              line="-"))
ALLREDUCE_NOSYNC = register(Strategy("allreduce_nosync", "data parallel, all-reduce after backward",
                                     "all-reduce after backward (no overlap)", DATA_PARALLEL, link_model="ring",
                                     synchronous=True, buckets=True, hatch="xx"))
