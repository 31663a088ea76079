"""Fairness checks: per run (threads, autograd, parameter count) and across frameworks (parity)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import strategies
from ..adapters import measures_a_framework
from ..adapters.base import CertificateFacts
from ..host.devices import is_gpu
from ..models import get_model
from ..results.record import CERTIFICATE_CHECKS, Certificate

if TYPE_CHECKING:  # the run side imports this module in lean environments (MXNet's) without pandas
    import pandas as pd

PARITY_TOLERANCE = 0.01  # same model, same parameter count within 1% in every framework
# The optimiser a strategy trains with where it is not the common recipe's SGD: Sandblaster's L-BFGS by definition.


__all__ = ["CERTIFICATE_CHECKS", "parity_table", "placement_matches", "run_checks"]


def placement_matches(config, observed: dict | None) -> bool | None:
    """Does the batch a step feeds live where the config says? `device`: one resident batch in the run device's
    memory, reused every step; `host`: a fresh batch every step (the copy from host memory is inside the timer,
    wherever the framework makes it). None when the workload could not be observed."""
    if not observed:
        return None
    if config.data in ("host", "files"):  # files: a fresh batch from the framework's input pipeline every step
        return observed["fresh_per_step"]
    return not observed["fresh_per_step"] and observed["location"] == ("gpu" if is_gpu(config.device) else "cpu")


def run_checks(config, facts: CertificateFacts | Mapping[str, Any], params: int | None, flops: float | None = None,
               weights: tuple[float | None, float | None] = (None, None),
               placement: dict | None = None) -> Certificate:
    """The certificate one record carries: each check is True/False, or None where it does not apply.

    `facts`: the workload's (Workload.certificate_facts; a settings mapping is read as its facts). `weights`: a
    checksum of the trainable weights before and after the timed loop (training only): a training step that updates
    nothing fails `weights_changed`. `placement`: where the workload's batch was observed to live
    (`Workload.input_placement`)."""
    if not isinstance(facts, CertificateFacts):
        facts = CertificateFacts.of(facts)
    spec = get_model(config.model)
    threads = facts.intra_op_threads
    rel = None
    if params and spec.published_params_millions and spec.num_classes == 1000:
        rel = abs(params / 1e6 - spec.published_params_millions) / spec.published_params_millions
    training = config.mode == "training"
    before, after = weights
    certificate = Certificate(
        threads_requested=config.threads,
        threads_effective=threads,
        threads_match=None if threads is None else threads == config.threads,
        no_autograd_in_inference=(None if config.mode != "inference" or facts.autograd_in_inference is None
                                  else not facts.autograd_in_inference),
        params=params,
        params_published_millions=spec.published_params_millions,
        params_rel_diff_vs_published=rel,
        params_match_published=None if rel is None else rel <= PARITY_TOLERANCE,
        flops_per_image=flops,  # one figure per model and image size, measured once per host
        optimizer=facts.optimizer,
        loss=facts.loss,
        recipe_match=(None if not training else facts.optimizer == strategies.strategy(config.strategy).recipe
                      and "cross" in str(facts.loss or "").lower()),
        weights_checksum_before=before,
        weights_checksum_after=after,
        weights_changed=None if not training or before is None or after is None else before != after,
        data_placement=config.data,
        data_placement_observed=placement,
        data_placement_match=placement_matches(config, placement),
        inside_timer=facts.inside_timer,
    )
    certificate.failed = certificate.failed_checks
    return certificate


def parity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model: parameter count in each framework and whether they agree within the tolerance."""
    import pandas as pd

    # a folder of distributed runs only has no single-process configs: an empty frame without columns
    ok = runs[(runs["status"] == "ok") & runs["params"].notna() & runs["framework"].map(measures_a_framework)] \
        if "status" in runs else runs
    if ok.empty:
        return pd.DataFrame(columns=["model", "frameworks", "min_params", "max_params", "rel_spread", "parity"])
    g = ok.groupby("model")["params"]
    table = pd.DataFrame({
        "frameworks": ok.groupby("model")["framework"].agg(lambda s: ", ".join(sorted(set(s)))),
        "min_params": g.min(), "max_params": g.max()}).reset_index()
    table["rel_spread"] = (table["max_params"] - table["min_params"]) / table["max_params"]
    table["parity"] = table["rel_spread"] <= PARITY_TOLERANCE
    return table
