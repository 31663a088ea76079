"""Every framework's measured images/s per model, mode and batch size, with its interval: the numbers the report's
throughput figures draw."""

from __future__ import annotations

from ...estimates import MIN_PROCESSES
from ...tables import throughput_table
from ..base import Section, Table, heading

INTRO = ("The numbers the report's throughput figures draw: images/s per framework and batch size, the geometric mean "
         "over processes with its 95% interval [low-high] and, in parentheses, the processes it rests on; '!' marks a "
         f"number that is not sound (fewer than {MIN_PROCESSES} clean processes, or a flag on its throughput: "
         "*Flagged* below says why).")


RESTS_ON = ("What each config's interval rests on: the sweep's prior (its between-process spread moderated by the "
            "other configs'), the prior of its family (a framework and mode whose spread differs from the rest), or "
            "its own processes (a spread unlike the others', or processes in two groups).")


def rests_on_table(configs):
    if configs.empty or "spread_rests_on" not in configs:
        return None
    c = configs.sort_values(["platform", "model", "mode", "precision", "series", "batch_size"])
    table = c[["platform", "series", "model", "mode", "batch_size", "processes", "spread_rests_on"]].rename(
        columns={"series": "framework", "batch_size": "batch", "spread_rests_on": "interval rests on"})
    return table.drop(columns="platform") if table["platform"].nunique() == 1 else table


def render(d) -> Section:
    return Section([heading("Measured images/s, every framework and batch size", INTRO),
                    Table(throughput_table(d.configs), "no successful runs yet"),
                    heading("What each interval rests on", RESTS_ON, level=3),
                    Table(rests_on_table(d.configs), "no successful runs yet")])
