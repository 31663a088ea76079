"""Energy per image where a meter read the run (left out where none did)."""

from __future__ import annotations

from ..energy import measured_energy_table
from .base import Section, optional

INTRO = ("Images per joule over the timed loop, where a meter read the run: NVIDIA GPUs' NVML energy counter "
         "(Volta or newer), or the CPU packages' RAPL counters (read by one process per machine). Where none could "
         "be read (a virtual machine exposes no RAPL counters, Linux makes them readable by root only since 5.10, "
         "a GPU older than Volta has no energy counter) the details say so per config; distributed runs carry the "
         "same column in the scaling table.")


def render(d) -> Section:
    return optional("Energy per image", measured_energy_table(d.runs), INTRO)
