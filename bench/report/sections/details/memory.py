"""Peak memory against batch size, and the largest batch that fits (left out where none was searched)."""

from __future__ import annotations

from ...figures import memory_vs_batch
from ...memory import largest_for_display, memory_probes_figure
from ..base import Figures, Section, heading, optional

INTRO = "CPU: the run process's peak resident set size; GPU: the framework allocator's peak."


LARGEST = ("Per framework, model, mode and precision: the largest batch that fits within the profile's memory cap, "
           "found by short probes in fresh processes (never in the throughput numbers).")


def render(d) -> Section:
    return (Section([heading("Peak memory", INTRO), Figures(memory_vs_batch(d.configs), "memory")])
            + optional("Largest batch", largest_for_display(d.memory), LARGEST)
            + optional("Largest batch: probes", memory_probes_figure(d.memory), name="largest_batch", level=3))
