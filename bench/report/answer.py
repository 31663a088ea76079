"""Page 1 of the report: the status in one line, the answer table (fastest, speed-up with its interval, a short
verdict keyed to one footnote per distinct reason) and the machine in one line."""

from __future__ import annotations

import pandas as pd

from ..adapters import measures_a_framework
from ..measurement.flags import RULES
from ..results.record import Record, as_records
from . import coverage, estimates

# The reason behind a "no winner" verdict, once per report however many rows share it: a throughput flag's own
# (bench/measurement/flags.py: its Rule's why_no_winner) or one of the verdicts that need no flag.
REASONS = {
    "within noise": "within noise: the 95% interval of the speed-up includes 1x, so neither is faster",
    "one framework": "only one framework measured this configuration: nothing to compare",
    **{r.name: r.why_no_winner for r in RULES if r.why_no_winner},
    "fewer than two processes": "no interval: fewer than two processes on a side",
}


def _reason_text(key: str) -> str:
    return REASONS.get(key, f"{key} (see the flagged numbers in details)")


def _x(v) -> str:
    return f"{v:.2f}x"


def answer_table(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Model, mode, batch -> fastest, speed-up [95% CI], verdict (a short word and footnote keys); and the
    footnotes, one per distinct reason. Fastest and speed-up are blank wherever no winner is stated."""
    if summary.empty:
        return pd.DataFrame(), []
    s = summary.sort_values(["platform", "model", "mode", "precision", "batch_size"])
    keys: dict[str, int] = {}
    rows = []
    for _, r in s.iterrows():
        winner = bool(r.get("winner")) and r["verdict"].endswith(" faster")
        if winner:
            reasons, word = [], "winner"
        elif r["verdict"] == "within noise":
            reasons, word = ["within noise"], f"tie: {r['fastest']} ~ {r['runner_up']}"
        elif r["runner_up"] is None or r["runner_up"] != r["runner_up"]:
            reasons, word = ["one framework"] + list(r.get("unsound_flags") or []), f"{r['fastest']} only"
        else:
            flags = list(r.get("unsound_flags") or [])
            reasons, word = flags or ["fewer than two processes"], "no winner"
        marks = [keys.setdefault(k, len(keys) + 1) for k in reasons]
        row = {"platform": r["platform"], "precision": r["precision"], "model": r["model"], "mode": r["mode"],
               "batch": r["batch_size"], "fastest": r["fastest"] if winner else "",
               "x faster [95% CI]": f"{_x(r['speedup'])} [{r['ci_low']:.2f}-{r['ci_high']:.2f}] vs {r['runner_up']}"
               if winner else "",
               "verdict": word + (" " + "".join(f"[{m}]" for m in marks) if marks else "")}
        rows.append(row)
    table = pd.DataFrame(rows)
    # one platform, one precision: a column that never changes is said once, in the machine line
    for col in ("platform", "precision"):
        if table[col].nunique() == 1:
            table = table.drop(columns=col)
    notes = [f"[{n}] {_reason_text(k)}" for k, n in keys.items()]
    return table, notes


def answer_notes(notes: list[str]) -> str:
    return "<br>".join(notes)


def machine_line(records: list[Record]) -> str:
    """Each host in one line from its newest framework run: CPU, cores, virtual machine or not, GPU."""
    newest: dict[str, Record] = {}
    for r in sorted(as_records(records), key=lambda r: r.created):
        if r.manifest is not None and measures_a_framework(r.config.framework):
            newest[r.host] = r
    parts = []
    for host, r in sorted(newest.items()):
        cpu, gpus = r.manifest.cpu, r.manifest.gpus
        vm = {True: "virtual machine", False: "not a virtual machine"}.get(cpu.virtual_machine, "VM unknown")
        gpu = ", ".join(g.name or "unnamed GPU" for g in gpus) if gpus else "no GPU"
        parts.append(f"{host}: {cpu.model or 'CPU model unknown'}, {cpu.physical_cores} cores / "
                     f"{cpu.logical_cpus} logical CPUs, {vm}, {gpu}")
    return "**Machine:** " + ("; ".join(parts) if parts else "no framework run recorded") + "."


def status_line(d, records: list[Record]) -> str:
    """Complete or not, how many processes were disturbed, and what that means for the numbers below."""
    covs = coverage.coverages(d.sweeps, records)
    if not covs:
        state = "single runs (no sweep manifest)"
    elif all(c.complete for c in covs):
        state = "complete (" + "; ".join(f"{c.done} of {c.planned} planned runs" for c in covs) + ")"
    else:
        state = "**incomplete** (" + "; ".join(f"{c.done} of {c.planned} planned runs" for c in covs) + ")"
    procs = d.processes
    n, bad = len(procs), int((~procs["clean"]).sum()) if not procs.empty else 0
    configs = d.configs
    unsound = int((~configs["sound"]).sum()) if not configs.empty else 0
    disturbed = (f"{bad} of {n} processes disturbed or jittery (left out of their config's number where a clean "
                 "one remains)" if bad else f"none of {n} processes disturbed")
    return (f"**Status:** {state}; {disturbed}; {unsound} of {len(configs)} configs not sound (fewer than "
            f"{estimates.MIN_PROCESSES} clean processes or a flag on the throughput), so no winner is stated from "
            "them.")
