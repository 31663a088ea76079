"""Every pair of frameworks per model, mode, precision and batch, and the answer per comparison: the fastest, its
speed-up over the runner-up with the interval, and the verdict (bench/stats/config_intervals.py computes all
three)."""

from __future__ import annotations

import itertools

import pandas as pd

from ...stats.judge import Judge
from ...values import listed
from .judgement import unsound_flags
from .pair_verdicts import compare_pair

GROUP = ["platform", "model", "mode", "precision"]


def ratio_table(configs: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """Every pair of series on the same platform/model/mode/precision/batch, with a process-level CI and verdict."""
    rows = []
    if configs.empty:
        return pd.DataFrame()
    for key, g in configs.groupby(GROUP + ["batch_size"]):
        for (_, a), (_, b) in itertools.combinations(g.sort_values("series").iterrows(), 2):
            rows.append({**dict(zip(GROUP + ["batch_size"], key)), **compare_pair(a, b, judge)})
    return pd.DataFrame(rows)


def best_engine(rows: pd.DataFrame) -> pd.Series:
    """A framework's fastest config among `rows` (its engines at one batch, or at every batch for its best batch):
    the fastest sound one, or the fastest where none is sound (then shown flagged)."""
    usable = rows[rows["sound"]] if rows["sound"].any() else rows
    return usable.loc[usable["images_per_sec_median"].idxmax()]


NOT_COMPARED = "not compared"  # a row with one framework: no comparison, so no verdict


def summary_table(configs: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """Model x mode x batch (per platform and precision): the fastest framework at its best engine, its speed-up over
    the runner-up framework (at its best engine) with the CI, and the verdict with its reason."""
    rows = []
    if configs.empty:
        return pd.DataFrame()
    for key, every in configs.groupby(GROUP + ["batch_size"]):
        # frameworks compared, each at its best engine (engine against engine is the Engines section's)
        g = pd.DataFrame([best_engine(s) for _, s in every.groupby("framework")])
        g = g.sort_values("images_per_sec_median", ascending=False)
        base = dict(zip(GROUP + ["batch_size"], key))
        if len(g) < 2:
            top = g.iloc[0]
            rows.append({**base, "fastest": top["series"], "images_per_sec": top["images_per_sec_median"],
                         "runner_up": None, "speedup": None, "ci_low": None, "ci_high": None,
                         "verdict": NOT_COMPARED, "reason": f"only {top['series']} measured",
                         "compared": compared(every), "certificates": top.get("certificate"), "winner": False,
                         "equivalent": False, "extra_processes": None,
                         "unsound_flags": unsound_flags(top["flag_list"])})
            continue
        c = compare_pair(g.iloc[0], g.iloc[1], judge)
        rows.append({**base, "fastest": c["faster"], "images_per_sec": g.iloc[0]["images_per_sec_median"],
                     "runner_up": c["slower"], "speedup": c["speedup"], "ci_low": c["speedup_ci_low"],
                     "ci_high": c["speedup_ci_high"], "verdict": c["verdict"], "reason": c["reason"],
                     "winner": c["winner"], "equivalent": c["equivalent"], "extra_processes": c["extra_processes"],
                     "fewest_processes": min(len(g.iloc[0]["process_ips"]), len(g.iloc[1]["process_ips"])),
                     **own_interval(c), "compared": compared(every),
                     "certificates": f"{g.iloc[0].get('certificate')} / {g.iloc[1].get('certificate')}",
                     "unsound_flags": list(dict.fromkeys(unsound_flags(g.iloc[0]["flag_list"])
                                                         + unsound_flags(g.iloc[1]["flag_list"])))})
    return pd.DataFrame(rows)


def tiers(configs: pd.DataFrame, judge: Judge) -> list[dict]:
    """Per row of three or more frameworks (each at its best engine): the frameworks in tiers by one rule, fastest
    first, a new tier wherever the faster neighbour is a decided winner over the next (each step a 95% comparison
    of neighbours; `steps` says how many were made, the multiplicity a reader weighs)."""
    out = []
    if configs.empty:
        return out
    for key, every in configs.groupby(GROUP + ["batch_size"]):
        g = [best_engine(s) for _, s in every.groupby("framework")]
        if len(g) < 3:
            continue
        g.sort(key=lambda r: -r["images_per_sec_median"])
        groups, breaks = [[g[0]["framework"]]], 0
        for faster, slower in zip(g, g[1:]):
            c = compare_pair(faster, slower, judge)
            if c["winner"] and c["faster"] == faster["series"]:
                groups.append([])
                breaks += 1
            groups[-1].append(slower["framework"])
        out.append({**dict(zip(GROUP + ["batch_size"], key)), "tiers": groups, "steps": len(g) - 1,
                    "decided_steps": breaks})
    return out


def best_batch_table(configs: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """Per model and mode (platform, precision) measured at more than one batch size: every framework at its own
    best batch and engine, the fastest of them against the runner-up with the verdict. Over every framework
    measured, whatever batches each ran: the answer to "which framework is fastest for this model" when
    frameworks ran at different batch sizes."""
    rows = []
    if configs.empty:
        return pd.DataFrame()
    for key, g in configs.groupby(GROUP):
        if g["batch_size"].nunique() < 2:  # one batch: its own row already answers
            continue
        best = [best_engine(s) for _, s in g.groupby("framework")]
        if len(best) < 2:
            continue
        best.sort(key=lambda r: -r["images_per_sec_median"])
        c = compare_pair(best[0], best[1], judge)
        faster, slower = (best[0], best[1]) if c["faster"] == best[0]["series"] else (best[1], best[0])
        rows.append({**dict(zip(GROUP, key)), "batch_size": "best", "fastest": c["faster"],
                     "fastest_batch": int(faster["batch_size"]), "runner_up": c["slower"],
                     "runner_up_batch": int(slower["batch_size"]),
                     "images_per_sec": faster["images_per_sec_median"], "speedup": c["speedup"],
                     "ci_low": c["speedup_ci_low"], "ci_high": c["speedup_ci_high"], "verdict": c["verdict"],
                     "reason": c["reason"], "winner": c["winner"], "equivalent": c["equivalent"],
                     "extra_processes": c["extra_processes"],
                     "fewest_processes": min(len(best[0]["process_ips"]), len(best[1]["process_ips"])),
                     **own_interval(c), "compared": compared(g, batches=True),
                     "unsound_flags": list(dict.fromkeys(unsound_flags(best[0]["flag_list"])
                                                         + unsound_flags(best[1]["flag_list"])))})
    return pd.DataFrame(rows)


def own_interval(c: dict) -> dict:
    """A page-1 row's speed-up interval from its two configs' own processes alone (Welch, no pooled prior), beside
    the moderated one its verdict rests on, whether the sweep's prior moderated both sides, and, where only more
    sweeps would decide it, why ('' else)."""
    return {"welch_ci_low": c["welch_ci_low"], "welch_ci_high": c["welch_ci_high"], "pooled": c["pooled"],
            "more_sweeps": c["more_sweeps"]}


def compared(g: pd.DataFrame, batches: bool = False) -> str:
    """The frameworks a row compared, with how many engines where some ran in several; with `batches` (a best-batch
    row) and frameworks run at different batch sizes, which batches each ran: 'tensorflow, torch at batches 1, 4,
    16 and 32; onnxruntime, openvino at batch 16 only' (a best batch is picked among those only)."""
    frameworks = sorted(g["framework"].unique())
    engines = g["series"].nunique()
    suffix = f" ({engines} engines)" if engines > len(frameworks) else ""
    ran = {fw: tuple(sorted({int(b) for b in s["batch_size"]})) for fw, s in g.groupby("framework")}
    if not batches or len(set(ran.values())) < 2:
        return ", ".join(frameworks) + suffix
    groups: dict[tuple, list[str]] = {}
    for fw in frameworks:
        groups.setdefault(ran[fw], []).append(fw)
    parts = [f"{', '.join(fws)} at batch{'es' if len(b) > 1 else ''} {listed(b)}" + ("" if len(b) > 1 else " only")
             for b, fws in sorted(groups.items(), key=lambda kv: (-len(kv[0]), kv[0]))]
    return "; ".join(parts) + suffix

