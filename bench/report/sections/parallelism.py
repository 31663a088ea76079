"""Parallelism strategies: data parallel beside model parallel, GPipe and 1F1B on one model and global batch, the
measured bubble against the formula, predicted against measured step time, and each schedule's timeline."""

from __future__ import annotations

from .. import parallelism
from ..parallelism_figures import timelines
from .base import Figures, Section, Table, Text, bullets, heading

INTRO = ("The thesis' three ways to spread training over workers, side by side on the same model, machine and global "
         "batch: *data parallel* (each worker a copy of the model and half the batch, gradients all-reduced), *model "
         "parallel* (the model's layers cut into one stage per worker; the whole batch goes forward stage by stage "
         "and its gradients come back, so one stage works at a time) and *layer pipelining* with PyTorch's own "
         "engine, `torch.distributed.pipelining` (the batch split into m micro-batches: GPipe runs every forward "
         "then every backward, 1F1B alternates, holding fewer micro-batches' activations). The cut balances the "
         "stages' counted FLOPs unless a config gives it. Each micro-batch is normalised by its own BatchNorm "
         "statistics. A stage idles (p-1)/(m+p-1) of a step in the model; the predicted step is (m+p-1) x the "
         "slowest stage's micro-batch time plus the activations' transfer over the fitted link. Efficiency is "
         "throughput / (workers x one worker's throughput at its own batch), with its 95% interval, as the scaling "
         "table gives it; the verdict compares each strategy's "
         "throughput with data parallel's (process-level intervals). Memory per worker: the largest rank's peak RSS "
         "(mostly the framework on a CPU); activations held: the most "
         "bytes a stage's autograd kept for its backward at once (micro-batches in flight x one micro-batch's saved "
         "tensors, counted by a saved-tensors hook).")


def render(d) -> Section:
    t = d.scaling.parallelism if d.scaling is not None else None
    if t is None or t.empty:  # left out: the study-coverage table says how to measure it
        return Section()
    here = parallelism.coverage_text(t)
    return Section([heading("Parallelism strategies", INTRO), Text(here), bullets(parallelism.findings(t)),
                    Table(parallelism.for_display(t)),
                    Figures(timelines(parallelism.timelines(t)), "parallelism_timeline")])
