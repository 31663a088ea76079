"""Report tables for display: every pair, flagged numbers, start-up cost, variance, failures, configs not run."""

from __future__ import annotations

import pandas as pd

from ..measurement.certificate import parity_table
from ..stats import printed
from ..stats.printed import ratio_and_range
from . import coverage, estimates


def failures_table(runs: pd.DataFrame) -> pd.DataFrame:
    if runs.empty:
        return runs
    bad = runs[runs["status"] != "ok"]
    return bad[["platform", "label", "repeat", "status", "reason"]].reset_index(drop=True)


def parity(runs: pd.DataFrame) -> pd.DataFrame:
    return parity_table(runs)


def throughput_table(configs: pd.DataFrame) -> pd.DataFrame:
    """The measured images/s of every framework (series), model, mode and precision per batch size: the config's
    number with its 95% interval over processes and how many processes it rests on; '!' marks a number that is not
    sound (shown, never a finding). A column per batch size keeps it to a row per series."""
    if configs.empty:
        return pd.DataFrame()
    c = configs.sort_values(["platform", "model", "mode", "precision", "series", "batch_size"])
    cells = {}
    for _, r in c.iterrows():
        lo, hi = r["images_per_sec_ci_low"], r["images_per_sec_ci_high"]
        interval = " " + printed.interval(lo, hi, ".1f")
        cells.setdefault((r["platform"], r["model"], r["mode"], r["precision"], r["series"]), {})[
            int(r["batch_size"])] = (f"{r['images_per_sec_median']:.1f}{interval} ({len(r['process_ips'])})"
                                    + ("" if r["sound"] else " !"))
    batches = sorted({int(b) for b in c["batch_size"]})
    rows = [{"platform": k[0], "model": k[1], "mode": k[2], "precision": k[3], "framework": k[4],
             **{f"batch {b}": by.get(b, "") for b in batches}} for k, by in cells.items()]
    table = pd.DataFrame(rows)
    # a column that never changes is said once (the machine line names the platform)
    return table.drop(columns=[col for col in ("platform", "precision") if table[col].nunique() == 1])


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
    # a speed-up with an unsound side is not stated (the rule in the methodology): blank, the reason says why
    stated = ~ratios["reason"].str.startswith(estimates.UNRELIABLE)
    return pd.DataFrame({
        "platform": ratios["platform"], "model": ratios["model"], "mode": ratios["mode"],
        "precision": ratios["precision"], "batch": ratios["batch_size"],
        "faster / slower": ratios["faster"] + " / " + ratios["slower"],
        "speed-up": [printed_ratio(v, lo, hi, ok)[0] for v, lo, hi, ok in zip(
            ratios["speedup"], ratios["speedup_ci_low"], ratios["speedup_ci_high"], stated)],
        "95% CI": [printed_ratio(v, lo, hi, ok)[1] for v, lo, hi, ok in zip(
            ratios["speedup"], ratios["speedup_ci_low"], ratios["speedup_ci_high"], stated)],
        "own spreads (Welch)": [printed_ratio(v, lo, hi, ok)[1] for v, lo, hi, ok in zip(
            ratios["speedup"], ratios["welch_ci_low"], ratios["welch_ci_high"], stated)],
        "verdict": ratios["verdict"], "reason": ratios["reason"]})


def printed_ratio(ratio, low, high, stated: bool) -> tuple[str, str]:
    """A speed-up and its bounds as every surface prints them (bench/stats/printed.py), blank where not stated."""
    return ratio_and_range(ratio, low, high) if stated else ("", "")


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
