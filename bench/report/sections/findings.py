"""Plain-language findings computed from the estimates; only sound numbers state a winner."""

from __future__ import annotations

import pandas as pd

from ...adapters import ADAPTERS
from ...measurement import flags as checks
from ...measurement.certificate import parity_table
from .. import estimates
from ..tables import ci_range, factor
from .base import Section, bullets, heading


def _where(r) -> str:
    return f"{r['model']} {r['mode']}, batch {r['batch_size']} ({r['precision']}, {r['platform']})"


def best_engine_findings(configs: pd.DataFrame) -> list[str]:
    """Per configuration and framework measured with several engines: its fastest engine against its
    runner-up, with the process-level interval (only sound numbers name a winner)."""
    out = []
    for key, g in configs.groupby(estimates.GROUP + ["batch_size", "framework"], sort=True):
        if g["engine"].nunique() < 2:
            continue
        first, second = (r for _, r in g.sort_values("images_per_sec_median", ascending=False).head(2).iterrows())
        pair = estimates.compare_pair(first, second)
        where = f"{_where(first)}, {key[-1]}"
        if pd.isna(first["sweep_id"]) or first["sweep_id"] != second["sweep_id"]:
            where += " (the two engines were not measured in one interleaved sweep)"
        notes = ADAPTERS.get(key[-1]).engine_notes if key[-1] in ADAPTERS else {}
        caveat = "".join(f" Note on {e}: {notes[e]}." for e in (first["engine"], second["engine"]) if e in notes)
        if pair["winner"]:
            ci = ci_range(pair["speedup_ci_low"], pair["speedup_ci_high"])
            out.append(f"{where}: its best engine is **{first['engine']}**, {factor(pair['speedup'])} its runner-up "
                       f"{second['engine']} [95% CI {ci}].{caveat}")
        else:
            out.append(f"{where}: engines {first['engine']} and {second['engine']} lead, no winner stated "
                       f"({pair['verdict']}).{caveat}")
    return out


def findings(configs: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Plain-language conclusions computed from the data; only sound numbers state a winner."""
    if configs.empty:
        return ["No successful runs yet: run `make report` (or `python -m bench sweep`) first."]
    out = []
    if not summary.empty:
        for _, r in summary.sort_values(["platform", "model", "mode", "batch_size"]).iterrows():
            if r["verdict"].endswith(" faster"):
                out.append(f"{_where(r)}: **{r['fastest']} is {factor(r['speedup'])} faster** than {r['runner_up']} "
                           f"[95% CI {ci_range(r['ci_low'], r['ci_high'])}].")
        # the configurations without a winner are on page 1 with their reasons: one line here, not one per row
        ties = int((summary["verdict"] == "within noise").sum())
        unreliable = int(summary["verdict"].str.startswith(estimates.UNRELIABLE).sum())
        if ties or unreliable:
            out.append(f"No winner in {ties + unreliable} of {len(summary)} comparisons (model, mode, batch; "
                       f"{ties} within noise, {unreliable} with a side not sound): the answer table gives each one's "
                       "reason.")
    engines = best_engine_findings(configs)
    out += [e for e in engines if "no winner stated" not in e]
    if open_engines := [e for e in engines if "no winner stated" in e]:
        out.append(f"No best engine stated for {len(open_engines)} framework(s) and configuration(s) (engines within "
                   "noise or not sound); every engine pair is in the details.")
    sound = configs[configs["sound"]]
    util = sound[sound["utilisation"].notna()]
    if not util.empty:
        u = util.loc[util["utilisation"].idxmax()]
        over = (" (above 100%: faster than this machine's best GEMM, plausible, see *utilisation_over_peak* in the "
                "methodology)" if u["utilisation"] > checks.UTILISATION_LIMIT else "")
        out.append(f"Highest utilisation of the measured matrix-multiply peak among sound numbers: "
                   f"{u['utilisation']:.0%}{over} ({u['series']} {u['model']} {u['mode']} batch {u['batch_size']}).")
    par = parity_table(configs)
    if not par.empty:
        bad = par[~par["parity"]]
        out.append("Parameter counts agree across frameworks for every model." if bad.empty else
                   f"Parameter counts differ across frameworks for: {', '.join(bad['model'])}.")
    return out


def render(d) -> Section:
    return Section([heading("Findings"), bullets(findings(d.configs, d.summary))])
