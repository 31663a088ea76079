"""A/A calibration: `bench compare A A'` on two sweeps of the same code and machine should name (almost) no config a
winner; the share it calls faster or slower is the compare feature's false-verdict rate, and the
between-sweep share of variance says how much a second sweep moves a number beyond its processes' spread."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..results.record import Record, as_records
from ..results.sweep_manifest import SweepManifest, as_manifests
from ..stats import power
from ..stats.judge import Judge
from ..stats.verdicts import WINNER
from ..values import counted
from .compare import compare_tables
from .data import config_tables
from .estimates import UNRELIABLE

TARGET_RATE = 0.05  # a 95% interval: at most about one config in twenty called different by chance


def aa_false_verdicts(table: pd.DataFrame) -> dict:
    """From a compare table of two sweeps of the same code: how many pairs had an interval to judge, how many
    of those were called faster or slower (false verdicts, since nothing changed), and the rate."""
    judged = table[table["ci_low"].notna() & ~table["verdict"].str.startswith("only in")
                   & ~table["verdict"].str.contains(UNRELIABLE, regex=False)]
    false = judged["verdict"].str.startswith(WINNER)
    n, k = int(len(judged)), int(false.sum())
    return {"judged": n, "false": k, "rate": k / n if n else None,
            "false_configs": [f"{r['model']} {r['mode']} bs={r['batch_size']} {r['series']}: {r['verdict']}"
                              for _, r in judged[false].iterrows()]}


def same_code_sweeps(records: list[Record]) -> list[tuple[str, str]]:
    """Pairs of consecutive sweeps (by their first record) on one host with the same clean git commit and the
    same profile: sweeps of the same code on the same machine, whose difference is only the day."""
    firsts: dict[str, Record] = {}
    commits: dict[str, set] = {}
    for r in sorted(as_records(records), key=lambda r: r.created or ""):
        if not r.sweep or not r.sweep.id or r.status != "ok":
            continue
        firsts.setdefault(r.sweep.id, r)
        git = r.manifest.git if r.manifest else None
        commits.setdefault(r.sweep.id, set()).add(None if git is None or git.dirty else git.commit)
    keyed = [(sid, r.host, r.sweep.profile, next(iter(commits[sid]))) for sid, r in firsts.items()
             if len(commits[sid]) == 1 and None not in commits[sid]]
    return [(a[0], b[0]) for a, b in zip(keyed, keyed[1:]) if a[1:] == b[1:]]


def aa_check(records: list[Record], sweeps: list[SweepManifest], judge: Judge) -> dict | None:
    """The A/A false-verdict rate of the latest two sweeps of the same code here, and the median between-sweep
    share of variance over the configs both measured; None when no two such sweeps exist."""
    records, sweeps = as_records(records), as_manifests(sweeps)
    pairs = same_code_sweeps(records)
    if not pairs:
        return None
    a_id, b_id = pairs[-1]
    sides = []
    for sid in (a_id, b_id):
        mine = [r for r in records if r.sweep and r.sweep.id == sid]
        sides.append(config_tables(mine, [m for m in sweeps if m.sweep_id == sid])[2])
    if any(side.empty for side in sides):
        return None
    verdicts = aa_false_verdicts(compare_tables(*sides, judge))
    both = [r for r in records if r.sweep and r.sweep.id in (a_id, b_id)]
    configs = config_tables(both, [m for m in sweeps if m.sweep_id in (a_id, b_id)])[2]
    shares = configs["between_sweep_share"].dropna() if "between_sweep_share" in configs else pd.Series([])
    pooled = configs[configs["sweep_var"].notna()] if "sweep_var" in configs else configs.iloc[:0]
    differ = configs[configs["sweeps_differ"].fillna(False).astype(bool)] if "sweeps_differ" in configs \
        else configs.iloc[:0]
    return {"sweep_a": a_id, "sweep_b": b_id, **verdicts,
            "between_sweep_share": float(np.median(shares)) if len(shares) else None,
            "configs_with_sweep_level": int(len(shares)),
            "tau": math.sqrt(float(pooled["sweep_var"].iloc[0])) if len(pooled) else None,
            "tau_df": float(pooled["sweep_df"].iloc[0]) if len(pooled) else None,
            "differ": [f"{r['series']} {r['mode']} bs={r['batch_size']}" for _, r in differ.iterrows()]}


def chance_of_at_least(k: int, n: int, rate: float = TARGET_RATE) -> float:
    """P(X >= k) for X ~ Binomial(n, rate): how often k or more of n pairs are called different by chance alone
    when the true false-verdict rate is `rate`."""
    return float(sum(math.comb(n, i) * rate ** i * (1 - rate) ** (n - i) for i in range(k, n + 1)))


def _against_target(k: int, n: int) -> str:
    """' - met', or whether k of n false verdicts is more than a true 5% rate gives by chance (a one-sided binomial
    test at 5%): 2 of 22 is 9% but happens 30% of the time at 5%, so it says nothing against the intervals."""
    if k <= TARGET_RATE * n:
        return " - met"
    p = chance_of_at_least(k, n)
    if p >= 0.05:
        return (f" - above it, but {k} or more of {n} happen by chance {p:.0%} of the time at a true "
                f"{TARGET_RATE:.0%}: no evidence that the intervals are too narrow (more sweeps would tell)")
    return (f" - NOT met: {k} or more of {n} happen by chance only {p:.1%} of the time at a true {TARGET_RATE:.0%}: "
            "the intervals are narrower than what a second sweep sees")


def _level_text(check: dict) -> str:
    """What the sweep level holds: the between-sweep SD pooled over the configs and its degrees of freedom, and the
    configs whose sweeps differ beyond it (their own sweep-level variance)."""
    out = ""
    if check.get("tau") is not None:
        out += (": the between-sweep SD pooled over them is 0 (the sweeps differ no more than their processes "
                "explain, so the level adds nothing to these intervals)" if check["tau"] == 0 else
                f": the between-sweep SD pooled over them is {check['tau']:.1%} of throughput "
                f"({check['tau_df']:.0f} df)")
    if check.get("differ"):
        n = len(check["differ"])
        out += (f"; {counted(n, 'config')} whose sweeps differ beyond it {'keeps its' if n == 1 else 'keep their'} "
                f"own (one degree of freedom per extra sweep): {', '.join(check['differ'])}")
    return out


def methodology_text(check: dict | None) -> str:
    """The methodology's calibration paragraph (empty when there are no two sweeps of the same code)."""
    if not check:
        return ""
    rate = "no config had intervals on both sides" if check["rate"] is None else (
        f"{check['false']} of {counted(check['judged'], 'single-process config')} on synthetic data "
        f"({check['rate']:.0%}) were called faster or slower (distributed and real-file configs: `bench compare`); "
        f"target at most {TARGET_RATE:.0%}" + _against_target(check["false"], check["judged"]))
    share = ("" if check["between_sweep_share"] is None else
             f" Over the {counted(check['configs_with_sweep_level'], 'config')} each sweep measured in two or more "
             "processes, "
             f"the median between-sweep share of the variance of log throughput is "
             f"{check['between_sweep_share']:.0%}; their intervals carry the sweep (the day) as a level above the "
             f"process" + _level_text(check) + ".")
    return (f"**A/A calibration.** Sweeps `{check['sweep_a']}` and `{check['sweep_b']}` ran the same code on this "
            f"machine; comparing them as `bench compare` does, {rate}.{share}")


# Processes a side at which the power curve is drawn (the default plan gives 2, and up to 6 to undecided rows).
POWER_PROCESSES = (2, 3, 4, 6, 8)
POWER_SHIFTS = (0.10, 0.20)  # a winner is a difference beyond the margin (+-5% by default): power beyond it
PLAN_FOUND_SHIFT = 0.15  # the adaptive plan's power, for a difference three times the default margin


def resampling_check(configs: pd.DataFrame, judge: Judge, trials: int = 20) -> dict | None:
    """How the verdicts work on this machine's own processes (bench/stats/power.py): the false-winner rate when each
    config's processes are split in halves (A/A), and the share of planted 10% and 20% shifts called a winner, and
    of equal sides shown equivalent, per number of processes a side; each config's processes of one sweep are one
    sample (a config over two sweeps gives two); None with fewer than three usable samples."""
    usable = configs[configs["sound"] & (configs["process_ips"].map(len) >= 2)
                     & configs["ci_method"].str.startswith(("t over processes", "t over sweeps"))
                     ] if not configs.empty else configs
    # one sample per config and sweep: a shift between sweeps is not process spread, nor a split-half difference
    values = {(i, sweep): [v for v, s in zip(ips, sweeps) if s == sweep]
              for i, ips, sweeps in zip(usable.index, usable["process_ips"], usable["process_sweeps"])
              for sweep in dict.fromkeys(sweeps)}
    values = {k: v for k, v in values.items() if len(v) >= 2}
    if len(values) < 3:
        return None
    return {"configs": len({i for i, _ in values}), "samples": len(values),
            "split_configs": sum(len(v) >= 4 for v in values.values()),
            "processes": sum(map(len, values.values())),
            "split_half": power.split_half_aa(values, judge, trials=trials),
            "power": {shift: power.curve(values, shift, judge, processes=POWER_PROCESSES, trials=trials)
                      for shift in POWER_SHIFTS},
            "equivalence": power.curve(values, 0.0, judge, word="equivalent", processes=POWER_PROCESSES,
                                       trials=trials),
            # the default plan as it runs: 2 processes a side, one more at a time while undecided, up to 6
            # a true difference right at the margin is the hardest case for a winner (beyond it) to be false
            "plan": {"edge": power.adaptive_plan(values, judge.margin, judge, trials=trials // 2),
                     "found": power.adaptive_plan(values, PLAN_FOUND_SHIFT, judge, trials=trials // 2)},
            "judge": judge}


def resampling_text(check: dict | None) -> str:
    """The methodology's paragraph on the A/A rate and the power of this report's own data."""
    if not check:
        return ""
    aa = check["split_half"]
    split = check.get("split_configs")
    aa_text = ("no config had four or more processes to split" if not aa.judged else
               f"{aa.text()} split-half comparisons called a winner (target at most {TARGET_RATE:.0%}"
               + (f"; {split} config-sweeps split {aa.judged // split} times each, so the trials share their "
                  f"processes: about {split} independent comparisons, not {aa.judged}"
                  if split else "") + ")")

    def row(curve: dict) -> str:
        return ", ".join(f"{n}: {r.rate:.0%}" for n, r in curve.items() if r.judged)

    shifts = "; ".join(f"a {shift:.0%} shift called a winner with n processes a side - {row(curve)}"
                       for shift, curve in check["power"].items())
    samples = check.get("samples", check["configs"])
    over = f"{samples} config-sweeps, " if samples != check["configs"] else ""
    return (f"**A/A and power on this machine's own processes** (bench/stats/power.py, "
            f"{check['configs']} sound configs, "
            f"{over}{check['processes']} processes): each config's processes of a sweep split at random into halves "
            f"and judged "
            f"against each other as the report judges: {aa_text}. Synthetic comparisons drawn from the pooled, "
            f"centred log residuals of these processes (this machine's spread, not an assumed one): {shifts}; two "
            f"equal sides shown equivalent within {check['judge'].within} - {row(check['equivalence'])}."
            + plan_text(check.get("plan"), check["judge"]))


def plan_text(plan: dict | None, judge: Judge) -> str:
    """The adaptive plan's own rates (bench/stats/power.py: adaptive_plan): winners among pairs whose true difference
    is exactly the margin (false: a winner is a difference beyond it) and the power for a PLAN_FOUND_SHIFT
    difference, when a comparison starts at 2 processes a side and grows to 6 while undecided, stopping once decided
    (a winner only at the plan's interim confidence)."""
    if not plan:
        return ""
    edge, found = plan.get("edge"), plan.get("found")
    if edge is None or found is None or not edge.rate.judged:
        return ""
    return (f" As the adaptive plan runs (2 processes a side, one more at a time while undecided, up to 6; it stops "
            f"a comparison as a winner only once its {judge.stopping_confidence:.1%} interval lies beyond "
            f"{judge.within}): pairs whose true difference is exactly {judge.margin:.0%} called a winner in "
            f"{edge.rate.text()} (the "
            f"optional-stopping false-winner rate; target at most {TARGET_RATE:.0%}), a {PLAN_FOUND_SHIFT:.0%} "
            f"difference in {found.rate.text()}, with {found.mean_processes:.1f} processes a side on average.")
