"""Page 1 of the report: the status in one line, the answer table (per row the frameworks compared, one of the four
verdicts, the speed-up with its interval, what would decide an undecided row; footnotes for rows that could not be
judged) and the machine in one line."""

from __future__ import annotations

import pandas as pd

from ..measurement.flags import RULES
from ..results.record import Record
from ..stats.judge import Judge
from ..stats.printed import bounds, ratio_interval
from ..stats.verdicts import (
    BOUND,
    DECIDED,
    DIRECTION,
    UNDECIDED,
    WINNER,
    Verdict,
    support_kind,
    undecidable,
    verdict_count,
)
from ..values import counted
from . import coverage, estimates
from .hosts import gpus_of, newest_runs

# The reason behind an undecided verdict, once per report however many rows share it: a throughput flag's own
# (bench/measurement/flags.py: its Rule's why_no_winner) or one that needs no flag.
REASONS = {
    "one framework": "only one framework measured this configuration: nothing to compare",
    **{r.name: r.why_no_winner for r in RULES if r.why_no_winner},
    "fewer than two processes": "no interval: fewer than two processes on a side",
}
POOLED = "pooled"
POOLED_NOTE = ("decided with the sweep's pooled variance (*Statistics* in the details' methodology); its own processes "
               "alone (Welch) give the interval after the speed-up, which would not decide it the same way")


def _number(v) -> float | None:
    return None if v is None or v != v else float(v)


def own_verdict(r, judge: Judge) -> Verdict:
    """A page-1 row's verdict from its two configs' own processes alone (Welch), beside the moderated one."""
    return judge.verdict(r["speedup"], _number(r.get("welch_ci_low")), _number(r.get("welch_ci_high")))


def rests_on_pooling(r, judge: Judge) -> bool:
    """A decided row (a winner, a small difference, an equivalence) that its own processes alone would not show: the
    sweep's pooled variance decided it."""
    return r["verdict"] in DECIDED and own_verdict(r, judge).word != r["verdict"]


def own_bounds(r, judge: Judge) -> str:
    """'[0.93-1.20]': a page-1 row's interval from its own processes alone (its footnote says what it means)."""
    v = own_verdict(r, judge)
    return "no interval" if v.ci_low is None else bounds(v.ci_low, v.ci_high)


def own_text(r, judge: Judge) -> str:
    """'its own processes alone: [0.93-1.20], undecided'."""
    return f"its own processes alone: {own_bounds(r, judge)}, {own_verdict(r, judge).word}"


def pooled_winners_text(summary: pd.DataFrame, best: pd.DataFrame | None, judge: Judge) -> str:
    """How many of page 1's winners rest on the sweep's pooled variance (their own processes' Welch interval does
    not exclude 1x), and which; '' without a winner."""
    rows = page_rows(summary, best)
    if rows.empty:
        return ""
    winners = rows[rows["verdict"] == WINNER]
    if winners.empty:
        return ""
    pooled = [r for _, r in winners.iterrows() if rests_on_pooling(r, judge)]  # winners here; page 1 marks both
    if not pooled:
        return (f"None of page 1's {len(winners)} winners rests on the pooling: each one's own processes' Welch "
                "interval excludes 1x too.")
    which = "; ".join(f"{r['model']} {r['mode']} {_where(r)}: {ratio_interval(r['speedup'], r['ci_low'], r['ci_high'])}"
                      f" pooled, {own_text(r, judge)}" for r in pooled)
    verb = "rests" if len(pooled) == 1 else "rest"
    return (f"{len(pooled)} of page 1's {len(winners)} winners {verb} on the pooling (their own processes' Welch "
            f"interval does not exclude 1x; page 1 marks them): {which}.")


def _where(r) -> str:
    return "at each framework's best batch" if r["batch_size"] == "best" else f"batch {r['batch_size']}"


def batch_order(batch) -> float:
    """A page-1 row's place among its model and mode's rows: its batch size, the best-batch row ('best') last."""
    return batch if isinstance(batch, int | float) and batch == batch else 10**9


def page_rows(summary: pd.DataFrame, best: pd.DataFrame | None) -> pd.DataFrame:
    """Page 1's rows: the per-batch comparisons and the best-batch ones, with `_order` sorting a model and mode's
    best-batch row after its batches."""
    rows = pd.concat([summary, best if best is not None else pd.DataFrame()], ignore_index=True)
    if not rows.empty:
        rows["_order"] = [batch_order(b) for b in rows["batch_size"]]
    return rows


def _reason_text(key: str) -> str:
    if key == POOLED:
        return POOLED_NOTE
    return REASONS.get(key, f"{key} (see the flagged numbers in details)")


def _sentence(text: str) -> str:
    """A footnote ends with a full stop."""
    return text if text.endswith(".") else text.rstrip() + "."


def _batch(r) -> str:
    if r["batch_size"] == "best":
        return f"best ({r['fastest']} {int(r['fastest_batch'])}, {r['runner_up']} {int(r['runner_up_batch'])})"
    return str(r["batch_size"])


def to_decide(r, max_repeats: int | None, margin: float | None = None) -> str:
    """An undecided row's *to decide* cell: only more sweeps where only they would; '~n more a side' where that
    stays within the sweep's process cap (`max_repeats`, None: no cap known); else the cap, reached or passed, and
    that another sweep of the same profile adds processes."""
    sweeps = r.get("more_sweeps")  # only more sweeps would decide it (NaN in a frame without such rows)
    if isinstance(sweeps, str) and sweeps:
        return sweeps
    extra = r.get("extra_processes")
    if extra is None or extra != extra:  # the true reason: on the margin, or too noisy
        return undecidable(r["speedup"], margin) if margin else "not decidable at this spread"
    fewest = r.get("fewest_processes")
    if max_repeats and fewest == fewest and fewest is not None and fewest + int(extra) > max_repeats:
        return f"~{int(extra)} more a side: past the sweep's {max_repeats}-process cap (another sweep adds them)"
    return f"~{int(extra)} more a side"


def answer_table(summary: pd.DataFrame, best: pd.DataFrame | None, judge: Judge,
                 max_repeats: int | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Model, mode, batch -> the frameworks compared, the verdict (winner, equivalent, undecided:
    bench/stats/verdicts.py), the fastest and its speed-up over the runner-up with the 95% interval, and for an
    undecided row what would decide it; per model and mode one more row, every framework at its own best batch.
    Footnotes, one per distinct reason a row could not be judged (a side not sound, one framework)."""
    if summary.empty:
        return pd.DataFrame(), []
    s = page_rows(summary, best).sort_values(["platform", "model", "mode", "precision", "_order"])
    keys: dict[str, int] = {}
    rows, alone = [], []
    for _, r in s.iterrows():
        compared = r["verdict"] != estimates.NOT_COMPARED
        if not compared and r["batch_size"] != "best":
            # nothing to compare: named in one line under the table, not a row (page 1 holds the comparisons)
            alone.append(f"{r.get('compared') or r.get('fastest') or ''} {r['model']} {r['mode']} "
                         f"{r['precision']} batch {r['batch_size']}".strip())
            continue
        reasons = list(r.get("unsound_flags") or []) if r["verdict"] == UNDECIDED or not compared else []
        if not compared:
            reasons = ["one framework"] + reasons
        elif r["verdict"] == UNDECIDED and not reasons and r["ci_low"] != r["ci_low"]:
            reasons = ["fewer than two processes"]
        pooled = compared and not reasons and rests_on_pooling(r, judge)
        marks = [keys.setdefault(k, len(keys) + 1) for k in reasons + ([POOLED] if pooled else [])]
        # a speed-up with a side not sound is not stated (the methodology's rule): blank, its footnote says why
        known = compared and not reasons and r["ci_low"] is not None and r["ci_low"] == r["ci_low"]
        interval = ratio_interval(r["speedup"], r["ci_low"], r["ci_high"]) if known else ""
        # said next to the row: the sweep's prior decided it, not its own processes
        own = f"; own processes: {own_bounds(r, judge)}" if pooled else ""
        decide = to_decide(r, max_repeats, judge.margin) if r["verdict"] == UNDECIDED and not reasons else ""
        rows.append({"platform": r["platform"], "precision": r["precision"], "model": r["model"], "mode": r["mode"],
                     "batch": _batch(r), "compared": r.get("compared") or "",
                     "verdict": (r["verdict"] if compared else "-") + (
                         " " + "".join(f"[{m}]" for m in marks) if marks else ""),
                     "fastest": r["fastest"] if r["verdict"] == WINNER else "",
                     "speed-up [95% CI]": ("" if not interval else
                                           f"{interval} vs {r['runner_up']}{own}" if r["verdict"] == WINNER else
                                           f"{r['fastest']} / {r['runner_up']}: {interval}{own}"),
                     "to decide": decide})
    table = pd.DataFrame(rows)
    if table.empty:
        return table, [f"Measured in one framework only (nothing to compare): {'; '.join(alone)}."] if alone else []
    # one platform, one precision: a column that never changes is said once, in the machine line
    for col in ("platform", "precision"):
        if table[col].nunique() == 1:
            table = table.drop(columns=col)
    notes = [f"[{n}] {_sentence(_reason_text(k))}" for k, n in keys.items()]
    if alone:
        notes.append(f"Measured in one framework only (nothing to compare; their own sections say more): "
                     f"{'; '.join(alone)}.")
    return table, notes


def tiers_text(rows: list[dict]) -> str:
    """'Tiers ...: resnet50 inference fp32 batch 16: openvino, onnxruntime > tensorflow > torch, jax.' for the rows
    where three or more frameworks ran ('' where none did), the rule and its multiplicity said once."""
    if not rows:
        return ""
    said = "; ".join(f"{r['model']} {r['mode']} {r['precision']} batch {r['batch_size']}: "
                     + " > ".join(", ".join(t) for t in r["tiers"]) for r in rows)
    steps = max(r["steps"] for r in rows)
    return (f"**Tiers** (fastest first; each '>' a decided winner at 95%, up to {steps} a row: at most "
            f"{steps * 5}% familywise, Bonferroni): {said}.")


def answer_notes(notes: list[str]) -> str:
    return "<br>".join(notes)


def machine_line(records: list[Record]) -> str:
    """Each host in one line from its newest framework run: CPU, cores, virtual machine or not, GPU."""
    parts = []
    for host, r in newest_runs(records).items():
        cpu = r.manifest.cpu
        vm = {True: "virtual machine", False: "not a virtual machine"}.get(cpu.virtual_machine, "VM unknown")
        parts.append(f"{host}: {cpu.model or 'CPU model unknown'}, {cpu.physical_cores} cores / "
                     f"{cpu.logical_cpus} logical CPUs, {vm}, {gpus_of(r)}")
    return "**Machine:** " + ("; ".join(parts) if parts else "no framework run recorded") + "."


def status_line(d, records: list[Record]) -> str:
    """Complete or not, how many processes were disturbed, and what that means for the numbers below."""
    covs = coverage.coverages(d.sweeps, records)
    if not covs:
        state = "single runs (no sweep manifest)"
    elif all(c.complete for c in covs):
        state = "complete (" + "; ".join(c.runs_text() for c in covs) + ")"
    else:
        state = "**incomplete** (" + "; ".join(c.runs_text() for c in covs) + ")"
    # earlier sweeps whose records the numbers below also count (the sweep is a level of the statistics)
    newest = {c.sweep_id for c in covs}
    counted_ids = {r.sweep.id for r in records if r.sweep and r.status == "ok"}
    earlier = [coverage.sweep_coverage(m, records) for m in d.sweeps
               if m.sweep_id not in newest and m.sweep_id in counted_ids]
    if earlier:
        state += "; counted too, from earlier sweeps: " + "; ".join(
            f"`{c.sweep_id}` ({c.profile}: {c.runs_text()})" for c in earlier)
    procs = d.processes
    n, bad = len(procs), int((~procs["clean"]).sum()) if not procs.empty else 0
    configs = d.configs
    unsound = int((~configs["sound"]).sum()) if not configs.empty else 0
    # the framework comparisons' processes: synthetic data, one process each (real-files runs have their section)
    # "successful": the runs above less those that failed or were skipped (the header counts those)
    disturbed = (f"{bad} of the {n} successful single-process runs on synthetic data disturbed or jittery (left out "
                 "of their config's number where a clean one remains)" if bad else f"none of the {n} successful "
                 "single-process runs on synthetic data disturbed")
    sound = (f"{unsound} of {len(configs)} configs not sound (fewer than {estimates.MIN_PROCESSES} clean processes "
             "or a flag on the throughput), so their rows are undecided" if unsound else
             f"all {counted(len(configs), 'config')} sound")
    return f"**Status:** {state}; {disturbed}; {sound}."


def short_status(d, records: list[Record]) -> str:
    """Page 1's status in one line: complete or not (runs recorded of planned), configs sound, processes left out;
    page 2 says it at length (`status_line`)."""
    covs = coverage.coverages(d.sweeps, records)
    done, planned = sum(c.done for c in covs), sum(c.planned for c in covs)
    state = ("single runs (no sweep manifest)" if not covs else
             f"complete, {done} of {planned} planned runs" if all(c.complete for c in covs) else
             f"**incomplete**, {done} of {planned} planned runs")
    procs, configs = d.processes, d.configs
    bad = int((~procs["clean"]).sum()) if not procs.empty else 0
    unsound = int((~configs["sound"]).sum()) if not configs.empty else 0
    sound = (f"{unsound} of {len(configs)} configs not sound" if unsound else
             f"all {counted(len(configs), 'config')} sound")
    left = f"{bad} of {len(procs)} processes flagged (left out where a clean one remains)" if bad else \
        f"none of {len(procs)} processes flagged"
    return f"**Status:** {state}; {sound}; {left}."


def decided_line(summary: pd.DataFrame, best: pd.DataFrame | None, judge: Judge) -> str:
    """How many of page 1's compared rows are decided, by verdict (the verdicts no row got left out), at the
    report's margin."""
    rows = page_rows(summary, best)
    if rows.empty:
        return ""
    rows = rows[rows["verdict"] != estimates.NOT_COMPARED]
    counts = rows["verdict"].value_counts()
    decided = int(sum(counts.get(w, 0) for w in DECIDED))
    each = ", ".join(verdict_count(int(counts.get(w, 0)), w) for w in (*DECIDED, UNDECIDED) if counts.get(w, 0))
    open_rows = rows[(rows["verdict"] == UNDECIDED) & rows["unsound_flags"].map(lambda f: not list(f or []))] \
        if "unsound_flags" in rows else rows[rows["verdict"] == UNDECIDED]
    kinds = [support_kind(_number(r["ci_low"]), _number(r["ci_high"])) for _, r in open_rows.iterrows()]
    said = [f"{kinds.count(k)} {k}" for k in (DIRECTION, BOUND) if kinds.count(k)]
    if said:  # what the undecided rows' intervals do support
        each += f" ({', '.join(said)})"
    return (f"**Decided {decided} of {len(rows)} compared rows** (each row's fastest against its runner-up) at "
            f"{judge.within}: {each}.")
