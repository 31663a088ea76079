"""Fairness checks: per run (threads, autograd, parameter count) and across frameworks (parity)."""

from __future__ import annotations

import pandas as pd

from .models import get_model

PARITY_TOLERANCE = 0.01  # same model, same parameter count within 1% in every framework


def run_checks(config, settings: dict, params: int | None) -> dict:
    """The certificate one record carries: each check is True/False, or None where it does not apply."""
    spec = get_model(config.model)
    threads = settings.get("intra_op_threads")
    rel = None
    if params and spec.published_params_millions and spec.num_classes == 1000:
        rel = abs(params / 1e6 - spec.published_params_millions) / spec.published_params_millions
    return {
        "threads_requested": config.threads,
        "threads_effective": threads,
        "threads_match": None if threads is None else threads == config.threads,
        "no_autograd_in_inference": (None if config.mode != "inference" or "autograd_in_inference" not in settings
                                     else not settings["autograd_in_inference"]),
        "params": params,
        "params_published_millions": spec.published_params_millions,
        "params_rel_diff_vs_published": rel,
        "params_match_published": None if rel is None else rel <= PARITY_TOLERANCE,
        "optimizer": settings.get("optimizer"),
        "loss": settings.get("loss"),
        "data_placement": config.data,
        "inside_timer": settings.get("inside_timer"),
    }


def parity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model: parameter count in each framework and whether they agree within the tolerance."""
    ok = runs[(runs["status"] == "ok") & runs["params"].notna() & (runs["framework"] != "null")]
    if ok.empty:
        return pd.DataFrame(columns=["model", "frameworks", "min_params", "max_params", "rel_spread", "parity"])
    g = ok.groupby("model")["params"]
    table = pd.DataFrame({
        "frameworks": ok.groupby("model")["framework"].agg(lambda s: ", ".join(sorted(set(s)))),
        "min_params": g.min(), "max_params": g.max()}).reset_index()
    table["rel_spread"] = (table["max_params"] - table["min_params"]) / table["max_params"]
    table["parity"] = table["rel_spread"] <= PARITY_TOLERANCE
    return table
