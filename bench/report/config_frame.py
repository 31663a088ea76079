"""The configs table every figure and table is drawn from: one row per config estimate, keeping the runs table's
column names (images_per_sec_median/ci_low/ci_high, latency_ms_p50, ...), plus how its interval, certificate and
flags read. The numbers are the estimates' (bench/report/estimates/); only the wording is made here."""

from __future__ import annotations

import pandas as pd

from .estimates import Certificate, ConfigEstimate, Interval, join_reasons, sound


def interval_method(interval: Interval) -> str:
    """What a config's interval is over, in words."""
    kind = interval.kind
    if kind == "pooled":
        return f"t over processes, spread moderated by the sweep ({interval.spread_df:.0f} df)"
    if kind == "sweeps":
        return (f"t over sweeps ({interval.sweeps}; they differ beyond the others': their own variance)"
                if interval.sweeps_differ else f"t over processes and sweeps ({interval.sweeps} sweeps; the "
                f"between-sweep variance pooled over the configs, {interval.sweep_df:.0f} df)")
    return {"within": "within one process only",
            "nodes": f"t over nodes ({interval.nodes}, each the mean of its processes)",
            "processes": "t over processes"}[kind]


def certificate_text(certificate: Certificate | None) -> str:
    """A config's fairness certificate over its processes: 'passed n/n' or the checks that failed."""
    if certificate is None:
        return "none"
    if certificate.failed:
        return "FAILED: " + ", ".join(certificate.failed)
    return f"{certificate.checked}/{certificate.checked} checks passed" if certificate.checked else "none"


def config_row(e: ConfigEstimate) -> dict:
    """One estimate as a row of the configs table."""
    row = dict(e.config)
    row.update({
        "images_per_sec_median": e.estimate, "images_per_sec_ci_low": e.ci_low, "images_per_sec_ci_high": e.ci_high,
        "ci_method": interval_method(e.interval),
        "processes": e.processes, "clean_processes": e.clean_processes, "process_ips": e.interval.replicates,
        "process_sweeps": e.interval.replicate_sweeps, "sweeps": e.sweeps, "process_blocks": e.blocks,
        "block_var": e.residual.var if e.residual else None, "block_df": e.residual.df if e.residual else None,
        "between_sweep_share": e.interval.between_sweep_share,
        "spread_var": e.interval.spread_var, "spread_df": e.interval.spread_df, "spread_pooled": e.interval.pooled,
        "sweep_var": e.interval.sweep_var, "sweep_df": e.interval.sweep_df, "sweeps_differ": e.interval.sweeps_differ,
        "own_ci_low": e.interval.own_ci_low, "own_ci_high": e.interval.own_ci_high,
        "spread_rests_on": e.interval.rests_on or interval_method(e.interval),
        **{f"latency_ms_{k}": v for k, v in e.latency_ms.items()},
        "peak_memory_bytes": e.peak_memory_bytes, "utilisation": e.utilisation, "cv_median": e.cv_median,
        "between_share": e.variance["between_share"], "within_var": e.variance["within_var"],
        "between_var": e.variance["between_var"], "duration_s": e.duration_s,
        "certificate": certificate_text(e.certificate), "prepare_s": e.prepare_s,
        "first_iteration_s": e.first_iteration_s, "flag_list": e.flags,
    })
    row.update(e.phases)
    return row


def configs_frame(estimates: list[ConfigEstimate]) -> pd.DataFrame:
    """The configs table: a row per estimate, with its flags' names, their reasons and whether it is sound."""
    if not estimates:
        return pd.DataFrame()
    configs = pd.DataFrame([config_row(e) for e in estimates])
    configs["flags"] = [", ".join(dict.fromkeys(f.name for f in fl)) for fl in configs["flag_list"]]
    configs["flag_reasons"] = [join_reasons(f"{f.name}: {f.reason}" for f in fl) for fl in configs["flag_list"]]
    configs["sound"] = [sound(fl) for fl in configs["flag_list"]]
    return configs
