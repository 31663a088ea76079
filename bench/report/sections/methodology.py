"""The methodology, generated from the records and sweep manifests of this report."""

from __future__ import annotations

import os

import pandas as pd

from ...adapters import measures_a_framework
from ...adapters.base import OPTIMIZER
from ...measurement import flags as checks
from ...measurement.loop import STEADY_WINDOW, WARMUP_TOLERANCE
from ...measurement.peak import PEAK_N, PEAK_TRIALS
from ...stats.judge import Judge
from ...stats.sweep_level import sweep_means
from ...values import counted
from .. import calibration, coverage, not_run, overhead
from ..answer import pooled_winners_text
from ..text import prose
from .base import Section, Text, all_records, heading

INTRO = ("Generated from the records and sweep manifests of this report; the distributed runs' methodology is in "
         "the details.")


def _spread(values) -> str:
    values = sorted(values)
    if not values:
        return "none"
    mid = values[len(values) // 2]
    return f"{values[0]}" if values[0] == values[-1] else f"{values[0]}-{values[-1]} (median {mid})"


def _counts(values) -> str:
    return ", ".join(f"{v}: {n}" for v, n in pd.Series(values).value_counts().items()) or "none"


def pooling_text(configs: pd.DataFrame) -> str:
    """What the sweep's prior did for this report's configs: how many borrowed from it, with how many degrees of
    freedom, and how many kept their own spread."""
    if configs.empty or "spread_pooled" not in configs:
        return ""
    pooled = configs["spread_pooled"].fillna(False).astype(bool)
    own = configs["spread_var"].notna() & ~pooled  # a spread of its own (over processes, or over sweeps)
    if not pooled.any():
        return ("No config's spread was moderated (fewer than three configs with two or more processes on a "
                "platform, or none shares a spread): every interval is the config's own.")
    dfs = configs.loc[pooled, "spread_df"]
    own_dfs = [_own_df(v, s) for v, s in zip(configs.loc[pooled, "process_ips"], configs.loc[pooled, "process_sweeps"])]
    return (f"Here {int(pooled.sum())} of {len(configs)} configs borrowed from their platform's prior (degrees of "
            f"freedom {dfs.min():.0f}-{dfs.max():.0f} instead of their own {min(own_dfs)}-{max(own_dfs)}); "
            f"{int(own.sum())} kept their own spread (a spread unlike the others', or nothing to borrow from).")


def _own_df(values, sweeps) -> int:
    """A config's own degrees of freedom for its between-process variance: processes less one per sweep (its
    processes' spread is taken around their own sweep's mean)."""
    return int(sweep_means(values, sweeps).within_df)


def own_spread_text(configs: pd.DataFrame, judge: Judge) -> str:
    """How little a config's own processes say about its spread, from this report's configs: 'With 2-6 processes a
    config's own between-process variance has 1-5 degrees of freedom (t up to 12.7)'."""
    ips = configs.get("process_ips", pd.Series(dtype=object))
    sweeps = configs.get("process_sweeps", pd.Series([[None] * len(v) for v in ips], index=ips.index))
    pairs = sorted((len(v), _own_df(v, s)) for v, s in zip(ips, sweeps) if _own_df(v, s) >= 1)
    if not pairs:
        return "No config has two processes, so none has a between-process variance of its own"
    lo, hi = pairs[0][0], pairs[-1][0]
    df_lo, df_hi = min(d for _, d in pairs), max(d for _, d in pairs)
    t_max = judge.t(df_lo)
    per_sweep = " (less one per sweep where two sweeps measured it)" if any(n - d > 1 for n, d in pairs) else ""
    if lo == hi and df_lo == df_hi:
        return (f"With {lo} processes a config's own between-process variance has {counted(df_lo, 'degree')} of "
                f"freedom{per_sweep} (t = {t_max:.1f})")
    return (f"With {lo}-{hi} processes a config's own between-process variance has {df_lo}-{df_hi} degrees of "
            f"freedom{per_sweep} (t up to {t_max:.1f})")


def thread_pools(settings) -> str:
    """'4 intra-op / 1 inter-op': the pools a run's framework read back, only those it has (OpenVINO, MXNet and JAX
    report one), 'not reported' when none."""
    pools = [f"{settings[key]} {pool}" for key, pool in (("intra_op_threads", "intra-op"),
                                                          ("inter_op_threads", "inter-op"))
             if settings.get(key) is not None]
    return " / ".join(pools) or "not reported"


def _after(sentence: str) -> str:
    """A sentence that follows another in a template's paragraph: a space before it, nothing when it is empty."""
    return f" {sentence}" if sentence else ""


def process_settings(environment: dict) -> str:
    """'LD_PRELOAD=libtcmalloc.so.4 (set by the project)': a run's process settings as it had them (a library by its
    file name: where it lives says nothing)."""
    return ", ".join(f"{k}={os.path.basename(str(v.get('value'))) if k == 'LD_PRELOAD' else v.get('value')} "
                     f"(set by the {v.get('set_by')}"
                     + ("; not loaded: the loader did not find it" if v.get("loaded") is False else "") + ")"
                     if v.get("set_by") != "unset" else f"{k} unset"
                     for k, v in environment.items())


def methodology(d) -> str:
    """Markdown describing what was measured and how, generated from the records and sweep manifests."""
    ok = [r for r in d.records if r.status == "ok" and measures_a_framework(r.config.framework)]
    if not ok:
        return "*No successful runs: nothing to describe.*"
    cfg = [r.config for r in ok]
    protocols = _counts(c.protocol for c in cfg)
    warm = [len(r.samples.warmup_s) for r in ok]
    timed = [len(r.samples.timed_s) for r in ok]
    budgets = sorted({c.time_budget_s for c in cfg if c.protocol == "adaptive"})
    threads = _counts(f"{r.config.framework}: {thread_pools(r.settings)}" for r in ok)
    settings = _counts(f"{r.config.framework}: {process_settings(r.settings['process_environment'])}" for r in ok
                       if r.settings.get("process_environment")) or "none (no framework declares one)"
    sweeps = [m for m in d.sweeps if any(r.sweep and r.sweep.id == m["sweep_id"] for r in ok)]
    sweep_lines = []
    for m in sweeps:
        c = coverage.sweep_coverage(m, all_records(d))
        peaks = []
        for key, p in (m.get("peaks") or {}).items():
            start, end = p.get("start"), p.get("end")
            if start:
                tail = (f", end {end['flops_per_sec'] / 1e9:.0f} GFLOP/s (spread {end['spread']:.0%})" if end
                        else ", no end measurement")
                others = [f"{lib} {v['flops_per_sec'] / 1e9:.0f}" for lib, v in (start.get("libraries") or {}).items()
                          if lib != start.get("library") and "flops_per_sec" in v]
                by = (f" by {start['library']}" + (f" (others: {', '.join(others)} GFLOP/s)" if others else "")
                      if start.get("library") else "")
                peaks.append(f"{key}: start {start['flops_per_sec'] / 1e9:.0f} GFLOP/s{by} "
                             f"(trial spread {start['spread']:.0%}){tail}")
        sweep_lines.append(
            f"- sweep `{m['sweep_id']}` on {m['host']}: profile `{m['profile']}`, {m['repeats']} repetitions "
            f"per config, order seed {m['order_seed']}, up to {counted(m['retries'] or 0, 'retry', 'retries')} "
            "of a disturbed or jittery run "
            f"({c.retries()}); {c.runs_text()}, {c.failed} failed or skipped; "
            f"{coverage.budget_text(m, c)}; status {m['status']}. Device peak: "
            + ("; ".join(peaks) or "not measured") + ".")
    procs = d.processes
    n_disturbed = int((~procs["clean"]).sum()) if not procs.empty else 0
    return prose("methodology", runs=coverage.successful_runs_text(all_records(d)), synthetic=len(ok),
                 protocols=protocols, warmup=_spread(warm),
                 warmup_stops=_counts(r.samples.warmup_stop for r in ok), timed=_spread(timed),
                 timed_stops=_counts(r.samples.timed_stop for r in ok),
                 budgets=", ".join(f"{b:g} s" for b in budgets) or "none", threads=threads, optimizer=OPTIMIZER,
                 process_settings=settings,
                 warmup_tolerance=WARMUP_TOLERANCE, steady_window=STEADY_WINDOW,
                 sweeps="\n".join(sweep_lines) or "- no sweep manifests (single runs)",
                 min_processes=checks.MIN_PROCESSES, guards="\n".join(r.methodology_line() for r in checks.GUARDS),
                 disturbed=n_disturbed, processes=len(procs),
                 peak_trials=PEAK_TRIALS, peak_n_cpu=PEAK_N["cpu"], peak_n_gpu=PEAK_N["gpu"],
                 impossible_guards="\n".join(r.methodology_line() for r in checks.RULES if r.impossible),
                 pooling=pooling_text(d.configs), own_spread=own_spread_text(d.configs, d.judge),
                 pooled_winners=_after(pooled_winners_text(d.summary, d.best, d.judge)),
                 verdicts=d.judge.definition()) \
        + "".join(f"\n\n{part}" for part in (overhead.sweep_cost_text(all_records(d), sweeps),
                                              calibration.methodology_text(
                                                  calibration.aa_check(d.records, d.sweeps, d.judge)),
                                              calibration.resampling_text(
                                                  calibration.resampling_check(d.configs, d.judge)),
                                              not_run.not_run_text(d.sweeps)) if part)


# The paragraphs the report itself carries (the verdict words page 1 uses, what ran, what is inside the timer, the
# rule for disturbed processes); the whole methodology is the details' (bench/report/sections/details/methodology.py).
BRIEF = ("**What ran.**", "**Inside the timer.**", "**Verdicts.**", "**Disturbed processes")
BRIEF_INTRO = ("Generated from the records and sweep manifests of this report: what page 1 rests on. The whole "
               "methodology (warm-up, statistics, guards, calibration, each sweep's peaks and cost) is in the details.")


def brief(text: str) -> str:
    """The paragraphs of the methodology that open with one of BRIEF's headings, in order."""
    return "\n\n".join(p for p in text.split("\n\n") if p.lstrip().startswith(BRIEF))


def render(d) -> Section:
    return Section([heading("Methodology", BRIEF_INTRO), Text(brief(methodology(d)))])


def render_full(d) -> Section:
    return Section([heading("Methodology", INTRO), Text(methodology(d))])
