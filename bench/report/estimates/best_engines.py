"""Page 1's numbers: per model, mode, precision and batch every framework at its best engine (images/s with the
interval), the row's fastest, and the fastest against the reference framework (PyTorch) with its interval and
verdict, so a reader sees how far each framework is from the fastest, not only the runner-up."""

from __future__ import annotations

import pandas as pd

from ...adapters import reference_adapter
from ...stats.judge import Judge
from .comparisons import GROUP, best_engine
from .pair_verdicts import compare_pair

# The framework every row is also set against: the adapters' reference framework (the one most readers use, and the
# 2019 study's baseline).
REFERENCE = reference_adapter().name


def _row(key: dict, batch, rows: pd.DataFrame, judge: Judge) -> dict:
    picks = {fw: best_engine(s) for fw, s in rows.groupby("framework", sort=True)}
    fastest = max(picks.values(), key=lambda r: r["images_per_sec_median"])
    several = {fw for fw, s in rows.groupby("framework") if s["engine"].nunique() > 1}
    out = {**key, "batch_size": batch, "picks": picks, "several_engines": several,
           "fastest_framework": fastest["framework"], "reference": None}
    ref = picks.get(REFERENCE)
    if ref is not None and ref["framework"] != fastest["framework"]:
        # the fastest over the reference: >= 1x by construction of `fastest` unless the interval says otherwise
        out["reference"] = compare_pair(fastest, ref, judge)
    return out


def framework_grid(configs: pd.DataFrame, judge: Judge) -> list[dict]:
    """One entry per platform, model, mode, precision and batch (and per model and mode at each framework's best
    batch, `batch_size` 'best', where more than one batch was measured): `picks` maps each framework to its config
    at its best engine (at its best batch in a 'best' entry), `several_engines` names the frameworks that ran more
    than one engine there, `fastest_framework` names the fastest, and
    `reference` is the fastest against PyTorch (compare_pair's dict; None where PyTorch is the fastest or absent)."""
    if configs.empty:
        return []
    out = []
    for key, g in configs.groupby(GROUP, sort=True):
        base = dict(zip(GROUP, key))
        for batch, b in g.groupby("batch_size", sort=True):
            out.append(_row(base, int(batch), b, judge))
        if g["batch_size"].nunique() > 1 and g["framework"].nunique() > 1:
            out.append(_row(base, "best", g, judge))
    return out
