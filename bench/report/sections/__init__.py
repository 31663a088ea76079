"""The report's sections, in reading order: each a module with `render(d) -> Section` (bench/report/sections/base.py).

notebooks/report.ipynb shows REPORT; adding a section is one module here and one line in the list."""

from . import (
    answer,
    best_batch,
    distributed,
    energy,
    engines,
    environment,
    findings,
    frameworks,
    header,
    input_pipeline,
    int8,
    machine,
    methodology,
    model_vs_published,
    not_run,
    parallelism,
    published,
    references,
    study_coverage,
    then_and_now,
    throughput,
)
from .display import show_all, show_section

REPORT = [header, answer, findings, machine, throughput, best_batch, engines, int8, distributed, parallelism,
          input_pipeline, model_vs_published, energy, then_and_now, published, study_coverage, frameworks, references,
          not_run, methodology, environment]

__all__ = ["REPORT", "show_all", "show_section"]
