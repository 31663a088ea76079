"""The report's sections, in reading order: each a module with `render(d) -> Section` (bench/report/sections/base.py).

notebooks/report.ipynb shows REPORT; adding a section is one module here and one line in the list."""

from . import (
    answer,
    best_batch,
    decide,
    distributed,
    energy,
    engines,
    environment,
    frameworks,
    header,
    input_pipeline,
    int8,
    machine,
    methodology,
    not_run,
    parallelism,
    published,
    same_network,
    then_and_now,
    throughput,
)
from .display import show_all, show_section

# Page 1 is the answer; page 2 what it needs more words for. The findings in prose, each study's coverage, the
# references, the alpha-beta model against published set-ups and the whole methodology are the details'.
REPORT = [header, answer, decide, machine, throughput, best_batch, engines, int8, same_network, distributed,
          parallelism, input_pipeline, energy, then_and_now, published, frameworks, not_run, methodology, environment]

__all__ = ["REPORT", "show_all", "show_section"]
