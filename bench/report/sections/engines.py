"""Each framework's best engine: per configuration the engine with the most images/s among those measured, its
runner-up's verdict, and its share of the measured fp32 GEMM peak (int8: its speed-up over fp32 instead)."""

from __future__ import annotations

import pandas as pd

from ...stats.printed import ratio_and_range
from ..estimates import engines_table
from ..units import cell_in_unit, rows_note
from .base import Section, Table, heading, number

INTRO = ("Per framework measured with several engines (eager, compiled, graph, exported runtimes, XLA options), its "
         "best engine by images/s, every engine measured, and the best engine's verdict against its runner-up (95% "
         "interval over processes; a winner only on sound numbers). *GEMM-peak share*: the best engine's model FLOP/s "
         "as a share of this machine's measured fp32 matrix-multiply peak; int8 has no GEMM peak here, so its row "
         "gives int8's speed-up over the same framework's fastest fp32 engine instead.")


def _display(r) -> dict:
    vs = ""
    if isinstance(r["runner-up"], str) and r["runner-up"]:  # a frame's missing cell is NaN, which is truthy
        speedup, ci = ratio_and_range(r["speed-up"], r["ci_low"], r["ci_high"])
        vs = f"{r['verdict']}: {speedup}" + (f" [{ci}]" if ci else "") + f" vs {r['runner-up']}"
    share = number(r["utilisation"], ".0%")
    if r["precision"] == "int8":
        int8, _ = ratio_and_range(r["int8 speed-up"], None, None)
        share = f"int8 {int8} over fp32" if int8 else ""
    return {"platform": r["platform"], "model": r["model"], "mode": r["mode"], "precision": r["precision"],
            "batch": r["batch_size"], "framework": r["framework"], "best engine": r["best engine"],
            "img/s": cell_in_unit(number(r["img/s"], ".1f"), r["model"]), "vs runner-up": vs,
            "GEMM-peak share (int8: speed-up)": share,
            "engines (img/s)": r["engines"]}


def render(d) -> Section:
    table = engines_table(d.configs, d.judge)
    if not table.empty:  # a framework with one engine compares nothing here (page 1 shows its number)
        table = table[[isinstance(r, str) and bool(r) for r in table["runner-up"]]]
    if table.empty:
        return Section()
    shown = pd.DataFrame([_display(r) for _, r in table.iterrows()])
    if shown["platform"].nunique() == 1:
        shown = shown.drop(columns="platform")
    return Section([heading("Engines", INTRO + rows_note(shown["model"])), Table(shown)])
