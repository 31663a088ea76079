"""Plain-language findings computed from the estimates; only sound numbers state a winner."""

from __future__ import annotations

import pandas as pd

from ...adapters import ADAPTERS
from ...measurement import flags as checks
from ...measurement.certificate import parity_table
from ...stats.judge import Judge
from ...stats.printed import ratio_and_range
from ...stats.verdicts import EQUIVALENT, SMALL, UNDECIDED, WINNER
from ...values import listed, sentence
from .. import estimates
from ..answer import own_text, page_rows, rests_on_pooling
from .base import Section, bullets, heading


def _where(r) -> str:
    return f"{r['model']} {r['mode']}, batch {r['batch_size']} ({r['precision']}, {r['platform']})"


def compared_findings(rows: pd.DataFrame) -> list[str]:
    """Which frameworks each of page 1's comparisons compared, per model and mode, where they differ between its
    rows (e.g. batches 1, 4 and 32 only TensorFlow and PyTorch, batch 16 every framework): a winner at a batch is the
    fastest of those frameworks only."""
    out = []
    compared = rows[rows["verdict"] != estimates.NOT_COMPARED]
    for (platform, model, mode, precision), g in compared.groupby(estimates.GROUP, sort=True):
        sets = {}
        for _, r in g.sort_values("_order").iterrows():
            sets.setdefault(r["compared"], []).append("best" if r["batch_size"] == "best" else str(r["batch_size"]))
        if len(sets) < 2:
            continue
        parts = []
        for frameworks, batches in sets.items():
            sized = [b for b in batches if b != "best"]
            what = (f"batch{'es' if len(sized) > 1 else ''} {listed(sized)}" if sized else "")
            what += (" and " if sized and "best" in batches else "") + (
                "each framework at its best batch" if "best" in batches else "")
            parts.append(f"{what}: {frameworks}")
        out.append(f"{model} {mode} ({precision}, {platform}) compared different frameworks at different batches, "
                   f"so each row's fastest is the fastest of its own frameworks only: {'; '.join(parts)}.")
    return out



def best_engine_findings(configs: pd.DataFrame, judge: Judge) -> list[str]:
    """Per configuration and framework measured with several engines: its fastest engine against its
    runner-up, with the process-level interval, judged at the report's equivalence margin (only sound numbers name a
    winner)."""
    out = []
    for key, g in configs.groupby(estimates.GROUP + ["batch_size", "framework"], sort=True):
        if g["engine"].nunique() < 2:
            continue
        first, second = (r for _, r in g.sort_values("images_per_sec_median", ascending=False).head(2).iterrows())
        pair = estimates.compare_pair(first, second, judge)
        where = f"{_where(first)}, {key[-1]}"
        if pd.isna(first["sweep_id"]) or first["sweep_id"] != second["sweep_id"]:
            where += " (the two engines were not measured in one interleaved sweep)"
        notes = ADAPTERS.get(key[-1]).engine_notes if key[-1] in ADAPTERS else {}
        caveat = "".join(f" Note on {e}: {notes[e]}." for e in (first["engine"], second["engine"]) if e in notes)
        speedup, ci = ratio_and_range(pair["speedup"], pair["speedup_ci_low"], pair["speedup_ci_high"])
        if pair["winner"]:
            out.append(f"{where}: {WINNER}: its best engine is **{first['engine']}**, {speedup} its "
                       f"runner-up {second['engine']} [95% CI {ci}].{caveat}")
        elif pair["small"]:
            out.append(f"{where}: {SMALL}: engine {first['engine']} is {speedup} faster than {second['engine']} "
                       f"[95% CI {ci}], by less than {judge.within}.{caveat}")
        elif pair["equivalent"]:
            out.append(f"{where}: engines {first['engine']} and {second['engine']} are **equivalent** "
                       f"({speedup} [95% CI {ci}], {pair['reason']}).{caveat}")
        else:
            out.append(f"{where}: engines {first['engine']} and {second['engine']} lead, undecided "
                       f"({pair['reason']}).{caveat}")
    return out


def findings(configs: pd.DataFrame, summary: pd.DataFrame, best: pd.DataFrame | None,
             judge: Judge) -> list[str]:
    """Plain-language conclusions computed from the data; only sound numbers state a winner."""
    if configs.empty:
        return ["No successful runs yet: run `make report` (or `python -m bench sweep`) first."]
    out = []
    if not summary.empty:
        rows = page_rows(summary, best)
        out += compared_findings(rows)
        for _, r in rows.sort_values(["platform", "model", "mode", "_order"]).iterrows():
            where = (f"{_where(r)[:-1]}; {r['compared']} compared)" if r["batch_size"] != "best" else
                     f"{r['model']} {r['mode']}, each framework at its best batch ({r['precision']}, {r['platform']}; "
                     f"over {r['compared']})")
            speedup, ci = ratio_and_range(r["speedup"], r["ci_low"], r["ci_high"])
            if r["verdict"] == WINNER:
                pooled = (f", with the sweep's pooled variance ({own_text(r, judge)})"
                          if rests_on_pooling(r, judge) else "")
                out.append(f"{where}: {WINNER}: **{r['fastest']} is {speedup} faster** than "
                           f"{r['runner_up']} [95% CI {ci}]{pooled}.")
            elif r["verdict"] == SMALL:
                out.append(f"{where}: {SMALL}: {r['fastest']} is {speedup} faster than {r['runner_up']} "
                           f"[95% CI {ci}], by less than {judge.within}.")
            elif r["verdict"] == EQUIVALENT:
                pooled = (f", with the sweep's pooled variance ({own_text(r, judge)})"
                          if rests_on_pooling(r, judge) else "")
                out.append(f"{where}: {r['fastest']} and {r['runner_up']} are **equivalent** within "
                           f"{judge.within} ({speedup} [95% CI {ci}]){pooled}.")
        # the undecided rows are on page 1 with what would decide them: one line here, not one per row
        open_rows = rows[rows["verdict"] == UNDECIDED].sort_values(["platform", "model", "mode", "_order"])
        compared = int((rows["verdict"] != estimates.NOT_COMPARED).sum())
        if len(open_rows):
            which = "; ".join(f"{r['model']} {r['mode']} "
                              + ("at each framework's best batch" if r["batch_size"] == "best" else
                                 f"batch {r['batch_size']}") + f" ({r['compared']})" for _, r in open_rows.iterrows())
            out.append(f"Undecided in {len(open_rows)} of {compared} compared rows (the data show neither a difference "
                       f"nor equality within {judge.within}): {which}; the answer table says what would decide "
                       "each.")
    engines = best_engine_findings(configs, judge)
    out += [e for e in engines if ", undecided (" not in e]
    if open_engines := [e for e in engines if ", undecided (" in e]:
        out.append(f"No best engine stated for {len(open_engines)} framework(s) and configuration(s) (undecided or "
                   "not sound); every engine pair is in the details.")
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
    if d.configs.empty and (note := d.only_distributed()):
        return Section([heading("Findings"), bullets([sentence(note)])])
    return Section([heading("Findings"), bullets(findings(d.configs, d.summary, d.best, d.judge))])
