"""Report tables and computed findings: environment per host, fairness, failures, framework verdicts."""

from __future__ import annotations

import pandas as pd

from ..adapters.base import OPTIMIZER
from ..config import DEFAULT_CI_TARGET, PROTOCOL_DEFAULTS
from ..fairness import parity_table
from .data import GROUP, best_batch, ok_runs


def environment_table(records: list[dict]) -> pd.DataFrame:
    """One column per host: the machine and software its newest record was measured with."""
    newest: dict[str, dict] = {}
    for r in sorted(records, key=lambda r: r["created"]):
        if r["config"]["framework"] != "null":
            newest[r["host"]] = r
    cols = {}
    for host, r in sorted(newest.items()):
        m = r["manifest"]
        libs = m.get("libraries", {})
        cols[host] = {
            "CPU": m["cpu"]["model"],
            "physical cores / logical CPUs": f"{m['cpu']['physical_cores']} / {m['cpu']['logical_cpus']}",
            "CPU flags (vector/matrix)": " ".join(m["cpu"]["flags"]),
            "memory (GiB)": f"{m.get('memory_bytes', 0) / 2**30:.1f}",
            "GPUs": ", ".join(f"{g['name']} (driver {g['driver']})" for g in m.get("gpus", [])) or "none",
            "Python": m.get("python"),
            "platform": m.get("platform"),
            **{lib: libs.get(lib, "not installed") for lib in ("torch", "torchvision", "tensorflow-cpu", "keras",
                                                              "numpy")},
            "git commit": (m["git"].get("commit") or "unknown")[:12] + (" (dirty)" if m["git"].get("dirty") else ""),
            "recorded env vars": ", ".join(f"{k}={v}" for k, v in m.get("env", {}).items()) or "none",
        }
    return pd.DataFrame(cols)


def fairness_summary(records: list[dict]) -> pd.DataFrame:
    """Per-run certificate checks aggregated: how many runs passed, failed, or had no such check."""
    checks = ["threads_match", "no_autograd_in_inference", "params_match_published"]
    counts = {c: {"passed": 0, "failed": 0, "not applicable": 0} for c in checks}
    for r in records:
        f = r.get("fairness") or {}
        if r["status"] != "ok" or r["config"]["framework"] == "null":
            continue
        for c in checks:
            v = f.get(c)
            counts[c]["not applicable" if v is None else "passed" if v else "failed"] += 1
    return pd.DataFrame(counts).T


def failures_table(runs: pd.DataFrame) -> pd.DataFrame:
    if runs.empty:
        return runs
    bad = runs[runs["status"] != "ok"]
    return bad[["platform", "label", "status", "reason"]].reset_index(drop=True)


def parity(runs: pd.DataFrame) -> pd.DataFrame:
    return parity_table(runs)


def ratios_for_display(ratios: pd.DataFrame) -> pd.DataFrame:
    """The ratio table with readable columns: A/B, its 95% CI and the verdict."""
    if ratios.empty:
        return ratios
    return pd.DataFrame({
        "platform": ratios["platform"], "model": ratios["model"], "mode": ratios["mode"],
        "precision": ratios["precision"], "batch": ratios["batch_size"],
        "A / B": ratios["a"] + " / " + ratios["b"],
        "ratio": ratios["ratio_a_over_b"].map("{:.3f}".format),
        "95% CI": ratios["ci_low"].map("{:.3f}".format) + " - " + ratios["ci_high"].map("{:.3f}".format),
        "verdict": ratios["verdict"]})


def published_for_display(published: pd.DataFrame) -> pd.DataFrame:
    """Published figures (not measured here), the columns a reader needs, source kept."""
    cols = ["model", "mode", "framework", "hardware", "accelerators", "precision", "batch_per_device",
            "images_per_sec", "source"]
    return published[cols].sort_values(["model", "mode", "images_per_sec"]).reset_index(drop=True)


def _fmt_ratio(r) -> str:
    return f"{r['ratio_a_over_b']:.2f}x [95% CI {r['ci_low']:.2f}-{r['ci_high']:.2f}]"


def findings(runs: pd.DataFrame, ratios: pd.DataFrame) -> list[str]:
    """Plain-language conclusions computed from the data; nothing here is typed in by hand."""
    ok = ok_runs(runs)
    if ok.empty:
        return ["No successful runs yet: run `make report` (or `python -m bench sweep`) first."]
    out = []
    for key, g in ratios.groupby(GROUP) if not ratios.empty else []:
        platform, model, mode, precision = key
        top = g.loc[g["batch_size"].idxmax()]
        where = f"{model} {mode} ({precision}) at batch {top['batch_size']} on {platform}"
        if top["verdict"] == "within noise":
            out.append(f"{where}: {top['a']} and {top['b']} are within noise ({_fmt_ratio(top)}).")
        else:
            out.append(f"{where}: {top['verdict']} - {top['a']}/{top['b']} = {_fmt_ratio(top)}.")
    best = best_batch(ok)
    for (platform, model, mode, _), g in best.groupby(GROUP):
        w = g.loc[g["images_per_sec_median"].idxmax()]
        out.append(f"Highest throughput for {model} {mode} on {platform}: {w['series']} at batch {w['batch_size']}, "
                   f"{w['images_per_sec_median']:.2f} img/s [95% CI {w['images_per_sec_ci_low']:.2f}-"
                   f"{w['images_per_sec_ci_high']:.2f}].")
    if ok["utilisation"].notna().any():
        u = ok.loc[ok["utilisation"].idxmax()]
        out.append(f"Best utilisation of the measured matmul peak: {u['utilisation']:.0%} ({u['label']}).")
    n_bad = int((runs["status"] != "ok").sum())
    out.append(f"{len(ok)} runs succeeded; {n_bad} were skipped or failed (listed with reasons below).")
    par = parity_table(runs)
    if not par.empty:
        bad = par[~par["parity"]]
        out.append("Parameter counts agree across frameworks for every model." if bad.empty else
                   f"Parameter counts differ across frameworks for: {', '.join(bad['model'])}.")
    return out


def methodology() -> str:
    """Markdown describing what was measured and how, with the constants the code actually uses."""
    seed, adaptive = PROTOCOL_DEFAULTS["seed"], PROTOCOL_DEFAULTS["adaptive"]
    return f"""
**Inside the timer.** Inference: the forward pass with autograd off (PyTorch `torch.inference_mode()`,
TensorFlow `training=False` without a gradient tape). Training: forward + cross-entropy loss + backward +
{OPTIMIZER} update. Data are synthetic, generated once and resident on the device
("device" placement); the "host" placement copies the batch from a NumPy array inside the timer. Each run
records exactly what was inside its timer.

**Clock.** The device is synchronised before every clock read (CUDA events on NVIDIA GPUs; on the CPU,
`time.perf_counter` around a synchronous step).

**Protocols.** `seed` = the 2019 study: {seed['warmup']} warm-up + {seed['iterations']} timed iterations.
`adaptive` (default): warm up until the iteration time is steady (the median of the last two iterations
within 5% of the two before; at most {adaptive['warmup']} iterations), then time at least
{adaptive['iterations']} iterations and continue until the 95% CI of the median is within
+-{DEFAULT_CI_TARGET:.0%} or the time budget ends. Profiles may tighten these (the quick profile does).

**Statistics.** Headline: median images/s with a distribution-free 95% confidence interval (binomial order
statistics). Also mean, standard deviation, standard error, MAD jitter and p50/p90/p99 latency. Framework
comparisons: the ratio of medians with a 95% percentile-bootstrap CI (4000 resamples of the per-iteration
images/s); "within noise" when the interval contains 1.

**Phases** (h2d, forward, backward, update) come from a separate instrumented pass after the timed loop, so
instrumentation never slows the headline number. TensorFlow's backward is (forward+backward) - forward.

**Utilisation** = model FLOPs per image (counted with PyTorch's FLOP counter on the same architecture;
training = 3x forward) x images/s / the device's measured peak (the best of five 4096x4096 matrix products
at the run's thread count and precision, measured once per host in a fresh process).

**Memory.** CPU: the run process's peak resident set size (every run is its own process). GPU: the
framework allocator's peak.

**Fairness.** Identical architectures in both frameworks (Keras definitions written to match torchvision
layer for layer: parameter counts are compared below), the same loss, optimizer and data placement, no
autograd in inference, and the same intra-/inter-op thread count for every framework, read back and checked
per run.
"""
