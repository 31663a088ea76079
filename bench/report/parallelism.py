"""The report's parallelism strategies: data parallel beside model parallel, GPipe and 1F1B on the same model and
global batch: throughput with its process-level interval and verdict against data parallel, efficiency, memory per
worker and the activations a stage holds for its backward, the measured bubble against (p-1)/(m+p-1), the predicted
step time against the measured one, and each schedule's timeline measured beside expected
(bench/runs/distributed/pipeline.py writes what they come from)."""

from __future__ import annotations

import statistics

import pandas as pd

from ..results.record import Pipeline, Record, as_records
from ..stats.judge import Judge, SpreadJudge
from ..stats.moderated import SweepSpreads
from ..stats.printed import quantity
from ..stats.verdicts import WINNER, said
from ..strategies import names, strategy
from ..values import listed
from .scaling import of_profile, rows_where, spreads_of
from .scaling_text import efficiency_text

PROFILE_MS = (2, 4, 8)  # the micro-batch counts PROFILE=parallelism runs for GPipe and 1F1B



def _pipes(frame: pd.DataFrame) -> pd.DataFrame:
    """The pipeline strategies' rows."""
    return frame[rows_where(frame, lambda s: s.pipeline)]


def _pipeline_facts(records: list[Record]) -> dict[str, dict]:
    """Per config key: the pipeline sections' means over ok processes, memory per worker, one timeline."""
    out: dict[str, dict] = {}
    for r in as_records(records):
        if r.status != "ok" or not r.distributed:
            continue
        peaks = [k.peak_rss_bytes for k in r.distributed.ranks if k.peak_rss_bytes]
        entry = out.setdefault(r.config_key, {"memory": [], "sections": []})
        if peaks:
            entry["memory"].append(max(peaks))
        if r.distributed.pipeline:
            entry["sections"].append(r.distributed.pipeline)
    return out


def _per_stage(sections: list[Pipeline], key: str) -> list[float] | None:
    """Each stage's `key`, the mean over processes; None when a process's section lacks it."""
    if not sections:
        return None
    per = [[getattr(s.stages[i], key) for s in sections] for i in range(len(sections[0].stages))]
    return None if any(v is None for values in per for v in values) else [statistics.mean(v) for v in per]


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def table(records: list[Record], scaling_table: pd.DataFrame, judge: Judge,
          spreads: SweepSpreads | None = None) -> pd.DataFrame:
    """One row per config of the strategies compared (same model, image size and global batch as a pipeline run).
    `spreads`: the scaling table's own (bench/report/scaling.py: configs_and_spreads), fitted again only when not
    given."""
    if scaling_table is None or scaling_table.empty:
        return pd.DataFrame()
    pipes = _pipes(scaling_table)
    if pipes.empty:
        return pd.DataFrame()
    facts = _pipeline_facts(records)
    # the same moderated spreads as every other distributed comparison
    on = judge.on(spreads if spreads is not None else spreads_of(scaling_table))
    rows = []
    for (model, size, batch, host, profile), g in pipes.groupby(
            ["model", "image_size", "global_batch", "host", "profile"], dropna=False):
        # each profile's pipelines beside the same profile's one-worker and data-parallel runs (measured alike),
        # where it ran them
        same = of_profile(scaling_table[(scaling_table["model"] == model) & (scaling_table["image_size"] == size)
                                        & (scaling_table["host"] == host) & (scaling_table["link"] == "loopback")],
                          profile)
        one = same[rows_where(same, lambda s: s.baseline) & (same["workers"] == 1)]
        # several data-parallel configs (e.g. the default profile's and PROFILE=parallelism's): the one measured in
        # the most processes is the baseline, never one whose single process gives no interval
        dp = same[rows_where(same, lambda s: s.pipeline_baseline) & (same["global_batch"] == batch)].sort_values(
            "processes", ascending=False, kind="stable")
        order = {st: i for i, st in enumerate(names(lambda s: s.pipeline))}
        g = g.assign(_o=g["strategy"].map(order)).sort_values(["_o", "link", "micro_batches"]).drop(columns="_o")
        for _, row in pd.concat([one, dp, g]).iterrows():
            rows.append({**_row(row, facts.get(row["config_key"], {}), dp, on), "profile": profile})
    out = pd.DataFrame(rows)
    if len(out):  # two profiles' runs in one report: each row's words name its profile
        several = out["profile"].nunique() > 1
        out["label"] = [f"{n} [{p} profile]" if several else n for n, p in zip(out["name"], out["profile"])]
    return out


def _row(row, facts: dict, dp: pd.DataFrame, on: SpreadJudge) -> dict:
    sections = facts.get("sections", [])
    m = sections[0].micro_batches if sections else None
    predicted = [s.predicted.step_s or s.predicted.compute_step_s for s in sections]
    with_link = all(s.predicted.step_s is not None for s in sections) if sections else None
    verdict = None
    me = strategy(row["strategy"])
    if len(dp) and not me.pipeline_baseline and not me.baseline:
        # moderated where both sides are sound; a side not sound: its own values, undecided (as the scaling
        # section judges: bench/stats/judge.py, compare_values)
        _, verdict = on.compare_values(row["config_key"], dp.iloc[0]["config_key"], row["values"],
                                       dp.iloc[0]["values"])
    # the scaling table's efficiency, defined once (bench/report/scaling.py): its interval, guard or why none
    efficiency = row["efficiency"] if row["workers"] > 1 else None
    return {
        "config_key": row["config_key"], "model": row["model"], "image_size": row["image_size"],
        "strategy": row["strategy"], "name": me.title
        + (", time-balanced cut" if sections and _timed(sections[0]) else ""),
        "workers": row["workers"], "link": row["link"], "global_batch": row["global_batch"], "micro_batches": m,
        "processes": row["processes"], "images_per_sec": row["images_per_sec"], "ci_low": row["ci_low"],
        "comm_cost_ms": row.get("comm_cost_ms"), "comm_ci_low": row.get("comm_ci_low"),
        "comm_ci_high": row.get("comm_ci_high"), "step_ms": row.get("step_ms"),
        "ci_high": row["ci_high"], "efficiency": efficiency,
        "efficiency_text": efficiency_text(row) if row["workers"] > 1 else "", "flag_reasons": row["flag_reasons"],
        "memory_per_worker_bytes": _mean(facts.get("memory", [])),
        # the one verdict form (bench/stats/verdicts.py): which of the two is faster, never 'slower 0.67x'
        "verdict_vs_dp": said(verdict, f"{me.title} faster",
                              "data parallel faster", "as fast as data parallel", verdict.interval())
        if verdict else None,
        "ratio_vs_dp": verdict.interval() if verdict else None,
        "bubble_measured": _mean(s.measured_bubble for s in sections),
        "bubble_formula": sections[0].predicted.bubble if sections else None,
        "step_measured_ms": _mean(s.measured_step_s for s in sections) * 1e3 if sections else None,
        "step_predicted_ms": _mean(predicted) * 1e3 if sections and _mean(predicted) else None,
        "prediction_has_link": with_link,
        "cut": f"{sections[0].cut_rule}; starts {sections[0].cut_starts}" if sections else None,
        "stage_params": sections[0].stage_params if sections else None,
        "micro_batches_held": [s_.micro_batches_held_max for s_ in sections[0].stages] if sections else None,
        # per stage, its compute and idle share (mean over processes): an unbalanced cut shows here
        "stage_compute_ms": _per_stage(sections, "compute_ms"),
        "stage_idle_share": _per_stage(sections, "bubble_share"),
        "activations_held_bytes": _held(sections),
        "timeline": sections[-1].timeline if sections else None,
        "expected_timeline": sections[-1].expected_timeline if sections else None,
    }


def _timed(section: Pipeline) -> bool:
    """Whether the run's cut was balanced by measured time (pipeline_cut "time"), not by counted FLOPs."""
    return (section.cut_rule or "").startswith("balanced by measured time")


def _held(sections: list[Pipeline]) -> int | None:
    """The most activation bytes any stage held for its backward (mean over processes)."""
    peaks = [max((st.activations_held_peak_bytes or 0) for st in s.stages) for s in sections]
    peaks = [p for p in peaks if p]
    return int(statistics.mean(peaks)) if peaks else None


def _pct(x) -> str:
    return "" if x is None else f"{x:.0%}"


def for_display(t: pd.DataFrame) -> pd.DataFrame:
    """The section's table: what a reader compares, each number with its interval or its source."""
    if t.empty:
        return t
    t = t.astype(object).where(t.notna(), None)  # a missing number is None here, never a printed nan
    rows = []
    for _, r in t.iterrows():
        m = "" if r["micro_batches"] is None else int(r["micro_batches"])
        error = (r["step_predicted_ms"] / r["step_measured_ms"] - 1) if r["step_predicted_ms"] and \
            r["step_measured_ms"] else None
        rows.append({
            "profile": r.get("profile") or "", "strategy": r["name"], "workers": int(r["workers"]), "link": r["link"],
            "m": m,
            "global batch": int(r["global_batch"]),
            "images/s [95% CI]": quantity(r["images_per_sec"], r["ci_low"], r["ci_high"], ".1f", "[no interval]"),
            "vs data parallel (strategy / data parallel)": r["verdict_vs_dp"] or "",
            "efficiency vs 1 worker [95% CI]": r["efficiency_text"] or "",
            "memory / worker (MB)": f"{r['memory_per_worker_bytes'] / 2**20:.0f}"
            if r["memory_per_worker_bytes"] else "",
            "activations held (MB)": f"{r['activations_held_bytes'] / 2**20:.0f}" if r["activations_held_bytes"]
            else "",
            "bubble measured / formula": f"{_pct(r['bubble_measured'])} / {_pct(r['bubble_formula'])}"
            if r["bubble_formula"] is not None else "",
            "step ms measured / predicted": f"{r['step_measured_ms']:.0f} / {r['step_predicted_ms']:.0f} "
                                            f"({error:+.0%}{'' if r['prediction_has_link'] else ', no link fit'})"
            if error is not None else "",
            "processes": int(r["processes"]), "flags": r["flag_reasons"] or ""})
    shown = pd.DataFrame(rows)
    # a column that says the same on every row, or nothing, is left out so the table fits a page (the link is said
    # in the section's text when it is one)
    for col in ("profile", "link", "flags"):
        if col in shown and (shown[col].nunique() <= 1 and (col != "flags" or not shown[col].astype(bool).any())):
            shown = shown.drop(columns=col)
    return shown


def findings(t: pd.DataFrame) -> list[str]:
    """What the rows say, in words computed from them."""
    if t.empty:
        return []
    out = []
    pipes = _pipes(t)
    for _, r in pipes.iterrows():
        if r["micro_batches_held"]:
            out.append(f"{r['label']} at m = {int(r['micro_batches'])}: the stages held at most "
                       f"{', '.join(str(x) for x in r['micro_batches_held'])} micro-batches' activations at once "
                       f"(1F1B holds at most p - stage, GPipe all m); cut: {r['cut']}, parameters per stage "
                       f"{', '.join(f'{p:,}' for p in r['stage_params'])}.")
            break
    out += bubble_findings(pipes)
    out += model_parallel_findings(t)
    fitted = pipes[pipes["step_predicted_ms"].notna() & pipes["step_measured_ms"].notna()]
    if len(fitted):
        errors = (fitted["step_predicted_ms"] / fitted["step_measured_ms"] - 1).abs()
        within = int((errors <= 0.25).sum())
        out.append(f"The pipeline model's step time (predicted / measured - 1 in the table) is within 25% of the "
                   f"measured one for {within} of {len(fitted)} pipeline configs (largest miss {errors.max():.0%}).")
    return out


def model_parallel_findings(t: pd.DataFrame) -> list[str]:
    """Where the naive model-parallel split beat data parallel, why, from the rows' own numbers: its step is its
    stages' compute one after the other, with only activations sent between them, while data parallel's step
    carries the gradient all-reduce (its communication cost against the independent run at the same N)."""
    out = []
    for _, g in t.groupby("profile", dropna=False, sort=False):
        mp = g[rows_where(g, lambda s: s.pipeline and not s.micro_batched)]
        dp = g[rows_where(g, lambda s: s.pipeline_baseline)]
        if mp.empty or dp.empty:
            continue
        m, d = mp.iloc[0], dp.iloc[0]
        compute, comm = m["stage_compute_ms"], d["comm_cost_ms"]
        if not str(m["verdict_vs_dp"] or "").startswith(WINNER) or not compute or comm is None or comm != comm \
                or m["images_per_sec"] < d["images_per_sec"]:
            continue
        stages = " + ".join(f"{c:.0f}" for c in compute)
        out.append(f"Why {m['label']} is faster than data parallel here ({m['ratio_vs_dp']}): its step of "
                   f"{m['step_measured_ms']:.0f} ms is its stages' compute one after the other ({stages} = "
                   f"{sum(compute):.0f} ms, each stage on its own core over the whole batch of "
                   f"{int(m['global_batch'])}), with only the cut's activations sent between them; data parallel's "
                   f"step of {d['step_ms']:.0f} ms carries {comm:.0f} ms [{d['comm_ci_low']:.0f}-"
                   f"{d['comm_ci_high']:.0f}] of gradient all-reduce (its communication cost against the "
                   f"independent run at 2 workers), more than the split's stages lose by taking turns.")
    return out


# a measured bubble this far from the formula's (in percentage points) is said to come from unequal stages
BUBBLE_GAP = 0.05


def stage_times(r) -> list[dict] | None:
    """Per stage of a pipeline row, the step split as the table's numbers add up: its compute (ms), its idle time
    (the record's idle share of the step less the update, in ms: compute x share / (1 - share)) and the rest of the
    table's measured step (the update, and waits outside the schedule), so compute + idle + rest = the step."""
    compute, idle, step = r["stage_compute_ms"], r["stage_idle_share"], r["step_measured_ms"]
    if not compute or not idle or step is None or any(i >= 1 for i in idle):
        return None
    out = []
    for c, share in zip(compute, idle):
        idle_ms = c * share / (1 - share)
        out.append({"compute_ms": c, "idle_ms": idle_ms, "idle_share": share,
                    "rest_ms": max(0.0, step - c - idle_ms)})
    return out


def bubble_findings(pipes: pd.DataFrame) -> list[str]:
    """The measured bubble against the formula's, said once, then per pipeline config only its own numbers: each
    stage's compute and idle time in ms of the table's measured step (the idle shares are of the step less the
    update, as the table's 'bubble measured' is their mean), and which configs' stages are unequal in time."""
    lines, unequal = [], {}
    several_links = pipes["link"].nunique() > 1
    for _, r in pipes.iterrows():
        stages = stage_times(r)
        if r["bubble_formula"] is None or r["bubble_measured"] is None or stages is None:
            continue
        gap = r["bubble_measured"] - r["bubble_formula"]
        label = f"{r['label']} at m = {int(r['micro_batches'])}" + (f" ({r['link']})" if several_links else "")
        if abs(gap) > BUBBLE_GAP:
            cut = "balanced by measured time" if "time-balanced" in r["name"] else "balanced by counted FLOPs"
            unequal.setdefault(cut, []).append(label)
        each = "; ".join(f"stage {i} computed {s['compute_ms']:.0f} ms and idled {s['idle_ms']:.0f} ms "
                         f"({_pct(s['idle_share'])}), rest {s['rest_ms']:.0f} ms" for i, s in enumerate(stages))
        lines.append(f"{label}: measured {_pct(r['bubble_measured'])} against {_pct(r['bubble_formula'])} "
                     f"({gap * 100:+.0f} percentage points); of its {r['step_measured_ms']:.0f} ms step: {each}")
    if not lines:
        return []
    said_once = ("Measured bubble against the formula's (p-1)/(m+p-1), which assumes equal stages: a stage's idle "
                 "time is the part of its step, less the update, in which it computed nothing, and the table's "
                 "'bubble measured' is the stages' mean idle share; the rest of the table's step is the update and "
                 "waits outside the schedule.")
    why = "; ".join(f"the cut {cut} is not balanced in time here ({', '.join(dict.fromkeys(labels))}: the faster "
                    "stage idles beyond the formula)" for cut, labels in unequal.items())
    return [said_once + (f" Unequal stages: {why}." if why else ""), *(f"{line}." for line in lines)]


def coverage_text(t: pd.DataFrame) -> str:
    """What the section measured (each strategy, with its m) and what it did not of what PROFILE=parallelism runs
    (the model-parallel split, the pipelines at each m of PROFILE_MS, a cut balanced by measured time)."""
    measured = []
    for name, g in t.groupby("label", sort=False):
        ms = sorted({int(m) for m in g["micro_batches"].dropna()})
        measured.append(name + (f" at m = {listed(ms)}" if ms else ""))
    links = sorted(set(t["link"].dropna()))
    text = "Measured here" + (f" over {links[0]}" if len(links) == 1 else "") + f": {listed(measured)}."
    missing = [] if rows_where(t, lambda s: s.pipeline and not s.micro_batched).any() else ["model parallel (m = 1)"]
    for swept in names(lambda s: s.micro_batch_sweep):
        ran = {int(m) for m in t.loc[t["strategy"] == swept, "micro_batches"].dropna()}
        if rest := [m for m in PROFILE_MS if m not in ran]:
            missing.append(f"{strategy(swept).title} at m = {listed(rest)}")
    if not t["name"].str.contains("time-balanced", regex=False).any():
        missing.append("a cut balanced by measured time")
    if missing:
        text += (f" Not measured here: {'; '.join(missing)}; `make sweep PROFILE=parallelism && make render` "
                 "measures them.")
    return text



def timelines(t: pd.DataFrame) -> list[dict]:
    """Per pipeline config with a timeline: its label, the measured and the expected per-stage actions."""
    out = []
    for _, r in _pipes(t).iterrows():
        if r["timeline"] and all(r["timeline"]):
            out.append({"label": f"{r['label']}, m = {int(r['micro_batches'])}", "measured": r["timeline"],
                        "expected": r["expected_timeline"], "flagged": bool(r["flag_reasons"])})
    return out
