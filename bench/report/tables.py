"""Report tables and computed findings: environment per host, fairness, failures, framework verdicts."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import PurePath

import pandas as pd

from ..adapters import ADAPTERS, measures_a_framework
from ..adapters.base import OPTIMIZER
from ..host import interference
from ..host.manifest import mask_text
from ..measurement import flags as checks
from ..measurement.certificate import CERTIFICATE_CHECKS, parity_table
from ..measurement.loop import WARMUP_TOLERANCE
from ..measurement.peak import PEAK_N, PEAK_TRIALS
from ..results.record import Certificate, Record, as_records
from . import answer, calibration, coverage, estimates, not_run, overhead
from .systems import status_rows
from .text import prose


def _environment_name(interpreter: str | None) -> str:
    """'main', or the folder of a framework's own environment (declared by its adapter), from sys.prefix."""
    if not interpreter:
        return "not recorded"
    own = {a.environment for a in (ADAPTERS.get(n) for n in ADAPTERS) if a.environment}
    folder = PurePath(interpreter).name
    return folder if folder in own else "main"


def environment_table(records: list[Record]) -> pd.DataFrame:
    """One column per host and environment (interpreter) that produced runs: the runs and frameworks it covers,
    and the machine and software of its newest record. A framework with an environment of its own (other
    library versions, other variables) is never described by another environment's values."""
    groups: dict[tuple[str, str | None], list[Record]] = {}
    for r in sorted(as_records(records), key=lambda r: r.created):
        if measures_a_framework(r.config.framework) and r.manifest is not None:
            groups.setdefault((r.host, r.manifest.interpreter), []).append(r)
    cols = {}
    for (host, interpreter), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        m = rs[-1].manifest
        cpu = m.cpu
        frameworks = Counter(r.config.framework for r in rs)
        name = f"{host}: {_environment_name(interpreter)}"
        shown = mask_text(interpreter) if interpreter else "not recorded"  # a home folder names its user: masked
        if name in cols:  # two main environments on one host (two checkouts): the interpreter tells them apart
            name += f" ({shown})"
        cols[name] = {
            "environment (interpreter)": shown,
            "runs": str(len(rs)),
            "frameworks (runs)": ", ".join(f"{f} ({n})" for f, n in sorted(frameworks.items())),
            "CPU": cpu.model,
            "physical cores / logical CPUs": f"{cpu.physical_cores} / {cpu.logical_cpus}",
            "CPU flags (vector/matrix)": " ".join(cpu.flags),
            "memory (GiB)": f"{m.memory_bytes / 2**30:.1f}",
            "GPUs": ", ".join(f"{g.name} (driver {g.driver})" for g in m.gpus) or "none",
            "Python": m.python,
            "platform": m.platform,
            "CPU clock (advertised)": cpu.mhz_advertised or "unknown",
            "SMT / virtual machine": f"{cpu.smt} / {cpu.virtual_machine}",
            **{lib: version for lib, version in sorted(m.libraries.items())},
            "git commit": (m.git.commit or "unknown")[:12] + (" (dirty)" if m.git.dirty else ""),
            "recorded env vars": ", ".join(f"{k}={v}" for k, v in m.env.items()) or "none",
        }
    # Libraries one environment lacks stay blank in its column rather than borrowing another's version.
    return pd.DataFrame(cols).fillna("")


def fairness_summary(records: list[Record]) -> pd.DataFrame:
    """Per-run certificate checks aggregated: how many runs passed, failed, or had no such check."""
    checks = list(CERTIFICATE_CHECKS)
    counts = {c: {"passed": 0, "failed": 0, "not applicable": 0} for c in checks}
    for r in as_records(records):
        f = r.fairness or Certificate()
        if r.status != "ok" or not measures_a_framework(r.config.framework):
            continue
        for c in checks:
            v = f.check(c)
            counts[c]["not applicable" if v is None else "passed" if v else "failed"] += 1
    return pd.DataFrame(counts).T


def failures_table(runs: pd.DataFrame) -> pd.DataFrame:
    if runs.empty:
        return runs
    bad = runs[runs["status"] != "ok"]
    return bad[["platform", "label", "repeat", "status", "reason"]].reset_index(drop=True)


def parity(runs: pd.DataFrame) -> pd.DataFrame:
    return parity_table(runs)


def _x(v, digits: int = 2) -> str:
    return "" if v is None or v != v else f"{v:.{digits}f}x"


def _ci(lo, hi, digits: int = 2) -> str:
    return "" if lo is None or lo != lo else f"{lo:.{digits}f}-{hi:.{digits}f}"


def startup_for_display(configs: pd.DataFrame) -> pd.DataFrame:
    """Start-up cost per series, apart from steady-state throughput: building the model (for ONNX Runtime
    and OpenVINO: the ONNX export and session compile) and the first iteration (tracing, jit compile)."""
    if configs.empty or "prepare_s" not in configs:
        return pd.DataFrame()
    c = configs[configs["prepare_s"].notna()].sort_values(["platform", "model", "mode", "batch_size", "series"])
    c = c[c["batch_size"] == c.groupby(["platform", "model", "mode", "series"])["batch_size"].transform("max")]
    return pd.DataFrame({
        "platform": c["platform"], "model": c["model"], "mode": c["mode"], "batch": c["batch_size"],
        "series": c["series"], "build / export + compile (s)": c["prepare_s"].map("{:.2f}".format),
        "first iteration (s)": c["first_iteration_s"].map("{:.2f}".format),
        "steady step (ms)": c["latency_ms_median"].map("{:.1f}".format),
        "first / steady": (c["first_iteration_s"] * 1e3 / c["latency_ms_median"]).map("{:.1f}x".format)})


def against_fastest(ratios: pd.DataFrame) -> pd.DataFrame:
    """Only the pairs with each configuration's fastest series (the one faster in most of its pairs): with
    many engines, every pair is a quadratic table; every series against the leader says what a reader asks."""
    keep = []
    for _, g in ratios.groupby(estimates.GROUP + ["batch_size"], sort=False):
        leader = g["faster"].value_counts().idxmax()
        keep += list(g.index[(g["a"] == leader) | (g["b"] == leader)])
    return ratios.loc[sorted(keep)]


def ratios_for_display(ratios: pd.DataFrame, only_against_fastest: bool = False) -> pd.DataFrame:
    """Every pair (or only those with the fastest series): which is faster, by how much (>= 1x), the
    process-level 95% CI and the verdict."""
    if ratios.empty:
        return ratios
    if only_against_fastest:
        ratios = against_fastest(ratios)
    # a speed-up with an unsound side is not stated (the rule in the methodology): blank, the verdict says why
    stated = ~ratios["verdict"].str.startswith(estimates.UNRELIABLE)
    return pd.DataFrame({
        "platform": ratios["platform"], "model": ratios["model"], "mode": ratios["mode"],
        "precision": ratios["precision"], "batch": ratios["batch_size"],
        "faster / slower": ratios["faster"] + " / " + ratios["slower"],
        "speed-up": [_x(v) if ok else "" for v, ok in zip(ratios["speedup"], stated)],
        "95% CI": [_ci(lo, hi) if ok else "" for lo, hi, ok in zip(ratios["speedup_ci_low"],
                                                                   ratios["speedup_ci_high"], stated)],
        "verdict": ratios["verdict"]})


def flagged_table(configs: pd.DataFrame, processes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every flag: configs a guard flagged (shown, never a finding) and single process runs left out of
    their config's number (disturbed, or far jitterier than their repetitions)."""
    rows = []
    if configs is not None and not configs.empty:
        for _, f in configs[configs["flags"] != ""].iterrows():
            rows.append({"platform": f["platform"], "what": f"config: {_config_name(f)}",
                         "processes (clean)": f"{f['processes']} ({f['clean_processes']})",
                         "flags": f["flag_reasons"]})
    if processes is not None and not processes.empty:
        for _, p in processes[~processes["clean"]].iterrows():
            reasons = "; ".join(f"{x.name}: {x.reason}" for x in p["process_flags"])
            rows.append({"platform": p["platform"], "what": f"process run {p['repeat']} of {_config_name(p)} "
                         "(left out of the config's number)", "processes (clean)": "", "flags": reasons})
    return pd.DataFrame(rows)


def _config_name(r) -> str:
    return f"{r['series']} {r['model']} {r['mode']} bs{r['batch_size']}"


def over_budget_table(sweeps: list[dict], runs: pd.DataFrame) -> pd.DataFrame:
    """Configs the newest sweep of each host and profile dropped to fit its budget and never measured."""
    measured = set(runs["config_key"]) if not runs.empty else set()
    rows = [{"host": m["host"], "profile": m["profile"], "config": d["label"], "status": d["reason"]}
            for m in coverage.newest_sweeps(sweeps) for d in m.get("dropped", []) if d["config_key"] not in measured]
    return pd.DataFrame(rows)


def not_applicable_table(sweeps: list[dict]) -> pd.DataFrame:
    """What the newest sweep of each host and profile asked for that a framework cannot run there, and why
    (expanded away before any kernel started)."""
    rows = [{"host": m["host"], "profile": m["profile"], "left out": item.split(": ", 1)[0],
             "reason": item.split(": ", 1)[1] if ": " in item else "not implemented by this framework"}
            for m in coverage.newest_sweeps(sweeps) for item in m.get("not_applicable", [])]
    return pd.DataFrame(rows)


def variance_table(configs: pd.DataFrame) -> pd.DataFrame:
    """Per framework: how much of the iteration-time variance lies between processes rather than within."""
    if configs.empty or configs["between_share"].isna().all():
        return pd.DataFrame()
    g = configs.dropna(subset=["between_share"]).groupby(["platform", "series"])
    return pd.DataFrame({
        "configs": g.size(),
        "between-process share (median)": g["between_share"].median().map("{:.0%}".format),
        "range": g["between_share"].min().map("{:.0%}".format) + " - " + g["between_share"].max().map("{:.0%}".format),
        "iteration CV (median)": g["cv_median"].median().map("{:.1%}".format),
    }).reset_index()


def published_for_display(published: pd.DataFrame) -> pd.DataFrame:
    """Published figures (not measured here), the columns a reader needs, source kept. A source's paths may break
    after each '/' (a zero-width space), so a long path wraps inside its cell instead of running off the page."""
    cols = ["model", "mode", "framework", "hardware", "accelerators", "precision", "batch_per_device",
            "images_per_sec", "source"]
    out = published[cols].sort_values(["model", "mode", "images_per_sec"]).reset_index(drop=True)
    out["source"] = out["source"].astype(str).str.replace("/", "/\u200b", regex=False)
    return out.rename(columns={"accelerators": "devices", "batch_per_device": "batch per device",
                               "images_per_sec": "images/s"})


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
            out.append(f"{where}: its best engine is **{first['engine']}**, {_x(pair['speedup'])} its runner-up "
                       f"{second['engine']} [95% CI {_ci(pair['speedup_ci_low'], pair['speedup_ci_high'])}].{caveat}")
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
                out.append(f"{_where(r)}: **{r['fastest']} is {_x(r['speedup'])} faster** than {r['runner_up']} "
                           f"[95% CI {_ci(r['ci_low'], r['ci_high'])}].")
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


def _all_records(d) -> list[Record]:
    """Every record of the report, distributed ones included: a sweep's coverage counts both."""
    return list(d.records) + (list(d.scaling.records) if d.scaling else [])


def _earlier_sweeps(sweeps: list[dict], c) -> str:
    """What the newest sweep of a profile on a host does not say: the earlier sweeps of it whose records count too
    (the sweep is a level of the statistics)."""
    earlier = sum(m["host"] == c.host and m["profile"] == c.profile for m in sweeps) - 1
    return f" (the newest of {earlier + 1} sweeps of it; every sweep's records count)" if earlier > 0 else ""


def header(d) -> str:
    """The first lines of the report: an unfinished sweep first, then when, which profile(s), which machines,
    how much was covered and flagged (coverage from the sweep manifests and records, never assumed)."""
    runs, configs = d.runs, d.configs
    built = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    top = coverage.banner(d.sweeps, _all_records(d))
    top = top + "\n\n" if top else ""
    if runs.empty:
        return f"{top}Built {built}. No results yet."
    hosts = "; ".join(f"**{h}** ({', '.join(sorted(set(g['hardware'])))})" for h, g in runs.groupby("host"))
    sweeps = "; ".join(f"`{c.profile}` on {c.host}: {'complete' if c.complete else c.status}, {c.done} of {c.planned} "
                       f"planned runs recorded{_earlier_sweeps(d.sweeps, c)}"
                       for c in coverage.coverages(d.sweeps, _all_records(d)))
    dates = sorted(runs["created"].str[:10])
    status = runs["status"].value_counts()
    return (f"{top}{answer.status_line(d, _all_records(d))}\n\n{answer.machine_line(d.records)}\n\n"
            f"Built {built} from {len(runs)} process runs recorded {dates[0]}"
            f"{' to ' + dates[-1] if dates[-1] != dates[0] else ''} on {hosts}; "
            f"sweep(s): {sweeps or 'none (single runs)'}; {len(configs)} configs, each measured in "
            f"{_processes_phrase(configs)}; of the {len(runs)} recorded runs "
            f"{int(status.get('error', 0))} failed and {int(status.get('skipped', 0))} were skipped. "
            "Every number was measured by this project unless it is labelled *published*.")


def _minutes(budget) -> str:
    return f"{budget:g} min" if budget else "none"


def _processes_phrase(configs: pd.DataFrame) -> str:
    if configs.empty:
        return "no processes"
    lo, hi = int(configs["processes"].min()), int(configs["processes"].max())
    return f"{lo} fresh processes" if lo == hi else f"{lo} to {hi} fresh processes"


def _spread(values) -> str:
    values = sorted(values)
    if not values:
        return "none"
    mid = values[len(values) // 2]
    return f"{values[0]}" if values[0] == values[-1] else f"{values[0]}-{values[-1]} (median {mid})"


def _counts(values) -> str:
    return ", ".join(f"{v}: {n}" for v, n in pd.Series(values).value_counts().items()) or "none"


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
    threads = _counts(f"{r.config.framework}: {r.settings.get('intra_op_threads')} intra-op / "
                      f"{r.settings.get('inter_op_threads')} inter-op" for r in ok)
    sweeps = [m for m in d.sweeps if any(r.sweep and r.sweep.id == m["sweep_id"] for r in ok)]
    sweep_lines = []
    for m in sweeps:
        c = coverage.sweep_coverage(m, _all_records(d))
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
            f"per config, order seed {m['order_seed']}, up to {m['retries']} retries of a disturbed run "
            f"({c.retries()}); {c.done} of {c.planned} planned runs recorded, {c.failed} failed or skipped; "
            f"budget {_minutes(m['budget_minutes'])} (estimated {m['estimate_s'] / 60:.0f} min, "
            f"{c.duration()}; {len(m.get('dropped', []))} configs over budget); status {m['status']}. Device peak: "
            + ("; ".join(peaks) or "not measured") + ".")
    procs = d.processes
    n_disturbed = int((~procs["clean"]).sum()) if not procs.empty else 0
    return prose("methodology", runs=len(ok), protocols=protocols, warmup=_spread(warm),
                 warmup_stops=_counts(r.samples.warmup_stop for r in ok), timed=_spread(timed),
                 timed_stops=_counts(r.samples.timed_stop for r in ok),
                 budgets=", ".join(f"{b:g} s" for b in budgets) or "none", threads=threads, optimizer=OPTIMIZER,
                 warmup_tolerance=WARMUP_TOLERANCE,
                 sweeps="\n".join(sweep_lines) or "- no sweep manifests (single runs)",
                 min_processes=estimates.MIN_PROCESSES, other_cpu_limit=interference.OTHER_CPU_LIMIT,
                 steal_limit=interference.STEAL_LIMIT, min_window_s=interference.MIN_WINDOW_S,
                 cv_outlier_factor=interference.CV_OUTLIER_FACTOR, cv_floor=interference.CV_FLOOR,
                 utilisation_limit=checks.UTILISATION_LIMIT, phase_sum_tolerance=checks.PHASE_SUM_TOLERANCE,
                 batch_drop_limit=estimates.BATCH_DROP_LIMIT, disturbed=n_disturbed, processes=len(procs),
                 peak_trials=PEAK_TRIALS, peak_n_cpu=PEAK_N["cpu"], peak_n_gpu=PEAK_N["gpu"],
                 impossible_guards="\n".join(f"- *{name}*: {rule}." for name, rule in checks.IMPOSSIBLE.items())) \
        + "".join(f"\n\n{part}" for part in (overhead.sweep_cost_text(d.records, sweeps),
                                              calibration.methodology_text(calibration.aa_check(d.records, d.sweeps)),
                                              not_run.not_run_text(d.sweeps)) if part)



def frameworks_table(records: list[Record] | None = None) -> pd.DataFrame:
    """Every system the source studies compared (and today's choices): measured here, or why not."""
    counts = None
    if records is not None:
        counts = {}
        for r in as_records(records):
            if r.status == "ok":
                version = r.framework_version or "version unrecorded"
                per = counts.setdefault(r.config.framework, Counter())
                per[f"{version} on {r.host}"] += 1
    return pd.DataFrame(status_rows(counts))
