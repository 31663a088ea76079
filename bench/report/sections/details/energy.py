"""Energy per image for every config, with the reason where no meter could be read."""

from __future__ import annotations

from ...energy import energy_table
from ...marks import NOT_MEASURED
from ..base import Section, Table, Text, heading

INTRO = ("Images per joule over the timed loop, where a meter read the run: NVIDIA GPUs' NVML energy counter "
         "(Volta or newer), or the CPU packages' RAPL counters (read by one process per machine). Where none could "
         "be read (a virtual machine exposes no RAPL counters, Linux makes them readable by root only since 5.10, "
         "a GPU older than Volta has no energy counter) the reason is given; distributed runs carry the same "
         "column in the scaling table.")


def render(d) -> Section:
    table = energy_table(d.runs)
    if not table.empty and (table["measured"] == 0).all() and table["images/J"].nunique() == 1:
        # one reason for every row: said once, not once per config
        return Section([heading("Energy per image", INTRO),
                        Text(f"*No run measured energy ({len(table)} configs): "
                             f"{table['images/J'].iloc[0].removeprefix(NOT_MEASURED + ': ')}.*")])
    return Section([heading("Energy per image", INTRO), Table(table, "no successful runs yet")])
