"""Flags that need several configs: a jump across batch sizes, training cheaper than inference."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import pandas as pd

from ...measurement.flags import BATCH_DROP_LIMIT, flag

if TYPE_CHECKING:
    from .configs import ConfigEstimate

# What else must match for two configs to be neighbours in batch size (or the same config in two modes): the
# image size, the data placement and a distributed run's layout (strategy, workers, nodes), so that, e.g., one
# worker's and two workers' batch 16 are never read as one curve.
SAME_SETTINGS = ["image_size", "sequence_length", "data", "strategy", "workers", "nodes", "scaling"]


def _lo(r) -> float:
    return r["ci_low"] if r["ci_low"] == r["ci_low"] else r["ips"]


def _hi(r) -> float:
    return r["ci_high"] if r["ci_high"] == r["ci_high"] else r["ips"]


def _same_except(configs: pd.DataFrame, keys: list[str]):
    """configs grouped by `keys` and every SAME_SETTINGS column present (missing values match each other)."""
    by = keys + [c for c in SAME_SETTINGS if c in configs.columns]
    return configs.groupby(by, dropna=False)


def cross_run_flags(estimates: list[ConfigEstimate]) -> None:
    """Add to each estimate the flags its neighbours earn it (a config's flags are judged once, here and in
    bench/report/estimates/configs.py)."""
    configs = pd.DataFrame([{**e.config, "ips": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high}
                            for e in estimates])
    for _, g in _same_except(configs, ["platform", "model", "mode", "precision", "series"]):
        g = g.sort_values("batch_size")
        for (i, a), (j, b) in itertools.pairwise(g.iterrows()):
            # Per-iteration time: a larger batch cannot finish sooner than a smaller one.
            if b["batch_size"] / _lo(b) < a["batch_size"] / _hi(a):
                why = (f"batch {b['batch_size']} took less time per iteration than batch {a['batch_size']} "
                       f"({1e3 * b['batch_size'] / b['ips']:.0f} vs "
                       f"{1e3 * a['batch_size'] / a['ips']:.0f} ms) beyond the CIs")
            elif _hi(b) < _lo(a) * (1 - BATCH_DROP_LIMIT):
                why = (f"throughput fell from {a['ips']:.3g} img/s at batch {a['batch_size']} "
                       f"to {b['ips']:.3g} at batch {b['batch_size']} (more than "
                       f"{BATCH_DROP_LIMIT:.0%} beyond the CIs)")
            else:
                continue
            for k in (i, j):
                estimates[k].flags.append(flag("batch_jump", why))
    for _, g in _same_except(configs, ["platform", "model", "precision", "series", "batch_size"]):
        tr, inf = g[g["mode"] == "training"], g[g["mode"] == "inference"]
        if len(tr) and len(inf) and _lo(tr.iloc[0]) > _hi(inf.iloc[0]):
            why = (f"training ({tr.iloc[0]['ips']:.3g} img/s) beat inference "
                   f"({inf.iloc[0]['ips']:.3g} img/s) beyond the CIs")
            for k in (tr.index[0], inf.index[0]):
                estimates[k].flags.append(flag("training_cheaper_than_inference", why))
