"""The distributed section's words and display tables: each scaling row's numbers as printed (efficiency and
communication with their intervals, or n/a with the guard), what a decided verdict reads, the findings (a scaling
finding only when decided) and the methodology. The numbers themselves are bench/report/scaling.py's."""

from __future__ import annotations

import statistics

import pandas as pd

from ..adapters import declared
from ..measurement import scaling_pairs as pairs
from ..measurement.flags import not_available
from ..results.links import SIZES
from ..results.record import BatchMethod, Record, as_records
from ..stats.printed import quantity
from ..stats.verdicts import UNDECIDED, Verdict, phrase, said
from ..strategies import strategy
from ..values import counted
from .energy import energy_text
from .scaling import _size, rows_where
from .text import prose


def efficiency_text(r) -> str:
    """A row's efficiency as printed everywhere: the number with its CI (its top bounded at what weak scaling can
    reach, marked 'clipped': bench/measurement/scaling_pairs.py), or n/a with the guard that fired or why there is
    none; a pipeline compared with one worker at another batch names that batch."""
    if r["efficiency_flags"]:
        return not_available(r["efficiency_flags"])
    if r.get("eff_why") and (r["efficiency"] is None or pd.isna(r["efficiency"])):
        return r["eff_why"]
    text = _ci(r["efficiency"], r["eff_ci_low"], r["eff_ci_high"], ".0%")
    text = text[:-1] + ", clipped]" if r.get("eff_clipped") and text.endswith("]") else text
    batch = r.get("eff_baseline_batch")
    return text + (f" (vs 1 worker at batch {int(batch)})" if text and batch is not None and batch == batch else "")


def comm_text(r) -> str:
    """A row's communication cost as printed everywhere: the number with its CI, or n/a with the guard."""
    if r["comm_flags"]:
        return not_available(r["comm_flags"])
    return _ci(r["comm_cost_ms"], r["comm_ci_low"], r["comm_ci_high"], ".1f")


# What each scaling comparison's verdict says (bench/measurement/scaling_pairs.py): a winner below 1x, a winner
# above 1x, equivalent. A winner names the faster side, as a framework comparison's does ('winner: B faster').
READINGS = {pairs.EFFICIENCY: ("linear scaling faster (efficiency below linear)",
                               "the workers faster than linear (efficiency above linear)", "linear"),
            pairs.COMMUNICATION: ("the independent run faster (communication costs time)",
                                  "faster than the independent run", "no cost"),
            pairs.OVERLAP: ("no overlap faster (overlap made the step longer)",
                            "overlap faster (it shortened the step)", "no difference")}


def reading(v: Verdict, kind: str) -> str:
    """A decided scaling verdict in the one form (bench/stats/verdicts.py): 'winner: linear scaling faster (efficiency
    below linear)', 'equivalent: linear (within +-5%)'."""
    below, above, same = READINGS[kind]
    return said(v, above, below, same)


def _undecided_why(v: Verdict, clipped: bool = False) -> str:
    """What an undecided scaling verdict says beyond the word: why the data cannot tell, and what would decide it."""
    bound = f"clipped at {pairs.EFFICIENCY_BOUND:.0%}, the most N workers sharing one machine reach; " \
        if clipped else ""
    return phrase(UNDECIDED, detail=f"{bound}{v.to_decide()}")


def _ci(est, lo, hi, fmt: str) -> str:
    return quantity(est, lo, hi, fmt, "(no CI: < 2 processes)")


def data_parallel(table: pd.DataFrame) -> pd.DataFrame:
    """The scaling table's data-parallel configs (and their baselines): the model- and pipeline-parallel ones have
    their own section."""
    return table if table.empty else table[~rows_where(table, lambda s: s.pipeline)]


def scaling_for_display(table: pd.DataFrame) -> pd.DataFrame:
    """The scaling table as printed. Columns that say nothing row by row are left out so it fits a page: the
    hardware when every run shares it (page 1's machine line names it), images per joule when no run measured
    energy (the details' energy table gives the reason), flags when none was raised."""
    if table.empty:
        return table
    t = table.sort_values(["platform", "framework", "model", "workers", "nodes", "strategy", "bucket_mb"]
                          + (["profile"] if "profile" in table else []))
    shown = pd.DataFrame({
        "run": [f"{r.framework} {r.model} {r.image_size}px, {r.strategy} x{r.workers}"
                + (f" (strong, global bs {r.global_batch})" if r.scaling == "strong" else "") for r in t.itertuples()],
        "profile": t["profile"] if "profile" in t else "",
        "hardware": t["hardware_label"],
        "link; buckets": [link + (f"; {b:g} MB" if strategy(s).buckets else "")
                          for link, b, s in zip(t["link"], t["bucket_mb"], t["strategy"])],
        "batch, threads per worker": [f"{b}, {n}" for b, n in zip(t["worker_batch"], t["threads"])],
        # Sandblaster's step is one L-BFGS iteration over the whole training set (about 2 evaluations): a per-step
        # batch count says nothing of its work, so its rate is read from its accuracy over time instead
        "images/s [95% CI]": ["n/a: a batch method, see accuracy over time" if not strategy(r.strategy).rate_is_images
                              else _ci(r.images_per_sec, r.ci_low, r.ci_high, ".1f") for r in t.itertuples()],
        "step ms": t["step_ms"].round(1),
        "comm. cost ms/step [CI]": [comm_text(r) for _, r in t.iterrows()],
        "efficiency [CI]": [efficiency_text(r) if r["workers"] > 1 else "" for _, r in t.iterrows()],
        "overlap": [f"{v:.0%}" if v is not None and not pd.isna(v) else "" for v in t["overlap_share"]],
        "images/J": [energy_text(v, why) for v, why in zip(t["images_per_joule"], t["energy_reason"])],
        "processes": t["processes"],
        "flags": ["; ".join(x for x in (f"{n} flagged: {why}" if n else "",
                                         f"step breakdown {not_available(ph)}" if ph else "") if x)
                  for n, why, ph in zip(t["flagged"], t["flag_reasons"], t["phase_flags"])],
    })
    silent = [c for c, says_nothing in (("hardware", shown["hardware"].nunique() <= 1),
                                        ("profile", shown["profile"].nunique() <= 1),
                                        ("images/J", t["images_per_joule"].isna().all()),
                                        ("flags", (shown["flags"] == "").all())) if says_nothing]
    return shown.drop(columns=silent)


def _guarded(frame: pd.DataFrame, column: str, fmt: str) -> list[str]:
    """A column as printed: each value in `fmt`, or n/a with the guards in the row's `flags`."""
    return [not_available(fl) if fl else f"{v:{fmt}}" for v, fl in zip(frame[column], frame["flags"])]


def predictions_for_display(pred: pd.DataFrame) -> pd.DataFrame:
    if pred.empty:
        return pred
    return pd.DataFrame({
        "framework": pred["framework"], "strategy": pred["strategy"], "workers": pred["workers"],
        "link": pred["link"], "DDP buckets (MB)": [f"{b:g}" if _bucketed(s, f) else "" for b, s, f in
                                                    zip(pred["bucket_mb"], pred["strategy"], pred["framework"])],
        "compute ms (independent)": _guarded(pred, "compute_ms", ".1f"),
        "model comm. ms": pred["comm_model_ms"].round(1), "overlap used": pred["overlap_share"].map("{:.0%}".format),
        "predicted ms": _guarded(pred, "predicted_ms", ".1f"), "measured ms": pred["measured_ms"].round(1),
        "error": _guarded(pred, "error", "+.0%"),
        "link fit": [f"{a:.0f} us, {b:.2f} Gbit/s" for a, b in zip(pred["alpha_us"], pred["bandwidth_gbit"])],
    })


def sandblaster_for_display(procs: pd.DataFrame) -> pd.DataFrame:
    """One row per Sandblaster process run: its processes and their CPU use (how the cores were shared), the work
    units each worker took (load balancing) and the gradient evaluations per L-BFGS iteration."""
    if procs.empty or "batch_method" not in procs:
        return pd.DataFrame()
    rows = []
    for _, p in procs[procs["batch_method"].notna()].iterrows():
        s: BatchMethod = p["batch_method"]
        cpu = ", ".join(f"{q['role']} {q['cpu_share_of_one_core']:.0%}" for q in s.processes
                        if q.get("cpu_share_of_one_core") is not None)
        rows.append({"framework": p["framework"], "workers": p["workers"], "repeat": p["repeat"],
                     "processes on cores": f"{len(s.processes)} on {s.cores}",
                     "CPU of one core (timed window)": cpu,
                     "units per worker (taken from another's shard)":
                         ", ".join(f"{t} ({k})" for t, k in zip(s.units_per_worker, s.units_stolen_per_worker)),
                     "ms per unit per worker": ", ".join(f"{ms:.2f}" for ms in s.worker_ms_per_unit),
                     "evaluations per iteration": round(s.evaluations_per_iteration or 0, 2)})
    return pd.DataFrame(rows)


def accuracy_for_display(acc: pd.DataFrame) -> pd.DataFrame:
    if acc.empty:
        return acc
    return pd.DataFrame({
        "framework": acc["framework"], "strategy": acc["strategy"], "workers": acc["workers"],
        "processes": acc["processes"], "at training seconds": acc["at_s"].round(2),
        "test accuracy then (mean, range)": [f"{a:.1%} ({lo:.1%}-{hi:.1%})" for a, lo, hi in
                                             zip(acc["accuracy"], acc["min"], acc["max"])],
        "final accuracy (after training seconds)": [f"{a:.1%} ({e:.2f} s)" for a, e in
                                                     zip(acc["final_accuracy"], acc["end_s"])],
        "steps per worker": acc["steps_per_worker"].round(0).astype(int),
    })


def extrapolation_inputs(networks: dict, table: pd.DataFrame) -> tuple[float, float, str]:
    """(alpha, overlap share, note): this machine's loopback latency, and the overlap DDP measured with its
    default 25 MB buckets on loopback (median over such configs)."""
    alphas = [e["fit_allreduce"]["alpha_s"] for links in networks.values() for k, e in links.items()
              if k.startswith("loopback")]
    alpha = statistics.median(alphas) if alphas else 50e-6
    bucketed = [_bucketed(s, f) for s, f in zip(table["strategy"], table["framework"])] if not table.empty else []
    ddp = table[pd.Series(bucketed, index=table.index, dtype=bool) & (table["link"] == "loopback")
                & (table["bucket_mb"] == 25.0) & table["overlap_share"].notna()] if not table.empty else table
    overlap = float(ddp["overlap_share"].median()) if len(ddp) else 0.0
    note = (f"alpha = {alpha * 1e6:.0f} us ({'this machine’s loopback fit' if alphas else 'assumed: no fit yet'}); "
            f"overlap = {overlap:.0%} ("
            + ("the share of communication PyTorch DDP hid behind backward here, 25 MB buckets on loopback; "
               "whether hiding it also shortened the step is in *Where the step goes*" if len(ddp)
               else "none measured") + ")")
    return alpha, overlap, note


def failures(records: list[Record]) -> pd.DataFrame:
    bad = [r for r in as_records(records) if r.status != "ok"]
    return pd.DataFrame([{"run": r.label, "repeat": r.repeat, "status": r.status, "reason": r.reason}
                         for r in bad])


def _bucketed(name: str, framework: str) -> bool:
    """An all-reduce that sends gradients in buckets (PyTorch DDP): its bucket size is part of what was run."""
    return strategy(name).overlaps_backward and bool(declared(framework, "distributed.bucketed_allreduce", False))


def _buckets(r) -> str:
    """'; 25 MB buckets' for bucketed all-reduce runs, so runs that differ only in bucket size read differently."""
    b = r.get("bucket_mb")
    shown = _bucketed(r["strategy"], r["framework"]) and b is not None and not pd.isna(b)
    return f"; {b:g} MB buckets" if shown else ""


def _profile(t: pd.DataFrame, r) -> str:
    """' [quick profile]' where the table holds several profiles' runs (their settings differ), else ''."""
    several = "profile" in t and t["profile"].nunique() > 1
    return f" [{r['profile']} profile]" if several and isinstance(r.get("profile"), str) else ""


def _comm_clause(r) -> str:
    """The part of a finding that says what communication cost, against the no-communication ceiling."""
    if strategy(r["strategy"]).baseline:
        return (f"; it has no communication at all: on {counted(int(r['threads']), 'thread')} per worker instead of "
                f"{r['threads'] * r['workers']}, what is lost is the shared cores, not the network; this is the "
                f"ceiling for every strategy at {r['workers']} workers here")
    if r["comm_flags"]:
        return f"; communication cost {comm_text(r)}"
    if r["comm_cost_ms"] is None or pd.isna(r["comm_cost_ms"]):
        return ""
    ceiling = (f" (ceiling without communication: {not_available(r['ceiling_flags'])})" if r["ceiling_flags"]
               else f" (ceiling without communication: {r['ceiling']:.0%})"
               if r["ceiling"] is not None and not pd.isna(r["ceiling"]) else "")
    lo, hi, v = r["comm_ci_low"], r["comm_ci_high"], r["comm_verdict"]
    if lo is None or pd.isna(lo):
        return f"{ceiling}; communication costs {r['comm_cost_ms']:.0f} ms per step (no CI)"
    cost = f"{ceiling}; communication cost {r['comm_cost_ms']:.0f} ms per step [{lo:.0f} to {hi:.0f}]"
    return f"{cost}: {reading(v, pairs.COMMUNICATION) if v.decided else _undecided_why(v)}"


def _overlap_findings(t: pd.DataFrame) -> list[str]:
    """What DDP's overlap bought: each bucketed DDP config against all-reduce after backward, same link and N."""
    out = []
    for _, r in t[t["overlap_diff"].notna() & t["overlap_share"].notna()].sort_values("bucket_mb").iterrows():
        diff, lo, hi, v = r["overlap_diff"]
        if lo is None:
            continue
        out.append(f"What overlap buys, {r['framework']} {r['model']} x{r['workers']} ({r['link']}): with "
                   f"{r['bucket_mb']:g} MB buckets DDP hid {r['overlap_share']:.0%} of its communication behind "
                   f"backward, yet the step took {diff:+.0f} ms [{lo:+.0f} to {hi:+.0f}] against all-reduce after "
                   f"backward: {reading(v, pairs.OVERLAP) if v.decided else _undecided_why(v)}"
                   + (". On a CPU, gloo's communication runs on the same cores backward needs, so communication "
                      "hidden behind backward is not free time." if hi >= 0 and r["device"] == "cpu" else "."))
    return out


def _efficiency_finding(r) -> str:
    """A row's scaling efficiency with its verdict: a finding only when decided, else undecided with what would
    decide it."""
    v = r["eff_verdict"]
    why = reading(v, pairs.EFFICIENCY) if v.decided else _undecided_why(v, bool(r["eff_clipped"]))
    return f"scaling efficiency {efficiency_text(r)}: {why}"


def findings(data) -> list[str]:
    """Sentences from the distributed tables; a number without two clean processes is not a finding."""
    out = []
    t = data.table
    if t.empty:
        return ["No distributed run is recorded in these results (a profile's distributed configs over its budget "
                "or not yet run are listed under *Not run*)."]
    shown = (t["efficiency"].notna() | t["efficiency_flags"].map(bool)) & ~rows_where(t, lambda s: s.pipeline)
    for _, r in t[(t["workers"] > 1) & shown].sort_values(["framework", "strategy"]).iterrows():
        what = f"{r['framework']} {r['model']} {r['strategy']} x{r['workers']} ({r['link']}{_buckets(r)})" \
            + _profile(t, r)
        if r["efficiency_flags"]:
            out.append(f"{what}: scaling efficiency {efficiency_text(r)}.")
            continue
        if not r["sound"] or r["eff_ci_low"] is None or pd.isna(r["eff_ci_low"]):
            out.append(f"{what}: not measured reliably ({r['flag_reasons'] or 'fewer than 2 clean processes'}).")
            continue
        out.append(f"{what}: {_efficiency_finding(r)}{_comm_clause(r)}.")
    out += _overlap_findings(t)
    split = int(rows_where(t, lambda s: s.pipeline).sum())
    if split:
        out.append(f"{counted(split, 'model- or pipeline-parallel config')} ran too: they are in *Parallelism "
                   "strategies*, against data parallel and one worker of their own profile.")
    for _, p in data.predictions.iterrows():
        if p["flags"]:
            out.append(f"Model vs measurement, {p['framework']} {p['model']} {p['strategy']} x{p['workers']} "
                       f"on {p['link']}{_buckets(p)}{_profile(t, p)}: {not_available(p['flags'])}.")
            continue
        out.append(f"Model vs measurement, {p['framework']} {p['model']} {p['strategy']} x{p['workers']} "
                   f"on {p['link']}{_buckets(p)}{_profile(t, p)}: "
                   f"predicted {p['predicted_ms']:.0f} ms, measured {p['measured_ms']:.0f} ms ({p['error']:+.0%})"
                   + (f"; the fit is gloo's, and {declared(p['framework'], 'display_name')}'s own collectives "
                      f"({own}) spent {p['exposed_comm_ms']:.0f} ms per step where the model allows "
                      f"{p['comm_model_ms']:.0f}" if (own := declared(p["framework"], "distributed.own_collectives"))
                      and p["exposed_comm_ms"] else "") + ".")
    for _, a in data.accuracy.iterrows():
        out.append(f"After {a['at_s']:.2f} s of training, {a['framework']} {a['strategy']} x{a['workers']} reached "
                   f"{a['accuracy']:.1%} test accuracy on digits (range over {a['processes']} processes "
                   f"{a['min']:.1%}-{a['max']:.1%}).")
    return out


def methodology(data) -> str:
    procs = data.processes
    if procs.empty:
        return "No distributed runs in this report."
    return prose("distributed_methodology", smallest=_size(SIZES[0]), largest=_size(SIZES[-1]),
                 bound=f"{pairs.EFFICIENCY_BOUND:.0%}").strip()
