"""Whether a framework ran the same network as PyTorch: its outputs on one seeded input against PyTorch's.

A catalogue model's weights are one seeded set every framework loads (bench/models/cnn_weights.py for the CNNs,
bench/models/transformers.py for the transformers), so before any timing each run computes its model's logits for a
probe batch (PROBE_SEED, the run's batch size and input size) the way its engine computes them, and compares them
with the reference framework's eager fp32 logits for the same batch (computed once per host in a fresh process of the
main environment, cached like the FLOP counts). An engine that compiles (PyTorch compiled, TensorFlow graph and XLA,
JAX jit) is checked through its eager model before the timing and, in inference, through the compiled forward the
timed loop ran after it (`check_compiled`). The difference allowed is a share of the reference's largest logit, per
precision; a run whose outputs stray further is flagged (`outputs_disagree`) and never a winner. int8 runs are judged
against their own fp32 model instead (bench/measurement/agreement.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..adapters import reference_adapter
from ..adapters.onnx_export import input_batch, model_source_digest
from ..config import make_config
from ..models import family_of, get_model
from ..models.inputs import describe
from .agreement import OUTPUTS_TOLERANCE, compare_outputs
from .fresh_process import cached

PROBE_SEED = 20261128
OUTPUTS_FILE = "reference_outputs.json"


def probe(model: str, batch_size: int, input_size: int) -> np.ndarray:
    """The probe batch: the batch the PyTorch adapter draws (NCHW float32 images or int64 token ids), from PROBE_SEED
    (no framework needed)."""
    return input_batch(model, batch_size, input_size, PROBE_SEED)


def applies(model: str, precision: str) -> bool:
    """The check runs for a model with one set of weights everywhere (every catalogue model but the smoke-test CNN
    and the digits MLP) at a precision with a tolerance."""
    return get_model(model).shared_weights and precision in OUTPUTS_TOLERANCE


def compute_reference(model: str, input_size: int, batch_size: int) -> dict:
    """The reference framework's eager fp32 logits for the probe batch (run in the fresh process)."""
    adapter = reference_adapter()
    size = {family_of(model).size_field: input_size}
    config = make_config(framework=adapter.name, model=model, mode="inference", batch_size=batch_size,
                         engine=adapter.engines_for("inference", "fp32")[0], **size)
    logits = adapter.prepare(config).logits(probe(model, batch_size, input_size))
    return {"logits": np.asarray(logits, dtype=np.float32).tolist(),
            "method": f"{adapter.name} {adapter.version()} {config.engine} fp32"}


def reference_key(model: str, input_size: int, batch_size: int) -> str:
    """The cache's key of a reference: the probe's shape and the digest of the code that decides the weights, the
    network and the probe, so that a reference computed before any of them changed is never served."""
    return f"{model}|{input_size}|{batch_size}|{model_source_digest(Path(__file__).resolve())}"


def _reference(results_dir: Path | str, model: str, input_size: int, batch_size: int) -> dict:
    return cached(results_dir, OUTPUTS_FILE, reference_key(model, input_size, batch_size),
                  ["outputs", "--model", model, "--input-size", str(input_size), "--batch-size", str(batch_size)])


def check(workload, config, results_dir: Path | str) -> dict[str, Any] | None:
    """The record's `settings["outputs_check"]` for `config`'s prepared `workload`, or None where no check applies.
    A reference that cannot be computed, or an engine that does not expose its outputs, is said, not failed."""
    if not applies(config.model, config.precision):
        return None
    head = {"inputs": f"{describe(config.model, config.batch_size, config.input_size)} (seed {PROBE_SEED})",
            "precision": config.precision}
    logits = workload.logits(probe(config.model, config.batch_size, config.input_size))
    if logits is None:
        return {**head, "passed": None, "reason": f"{config.framework}/{config.engine} does not expose its outputs"}
    try:
        reference = _reference(results_dir, config.model, config.input_size, config.batch_size)
    except (OSError, RuntimeError, ValueError) as exc:
        return {**head, "passed": None, "reason": f"no reference: {exc}"}
    return {**head, "reference": reference["method"],
            **compare_outputs(logits, np.asarray(reference["logits"]), config.precision)}


COMPILED = "the compiled forward the timed loop ran, called after it on the probe (the loop's batch shape)"


def check_compiled(workload, config, results_dir: Path | str, check: dict[str, Any] | None) -> None:
    """After the timed loop of an inference run whose `logits` came from its eager model (PyTorch compiled,
    TensorFlow graph and XLA, JAX jit): the compiled forward's outputs for the same probe against the same reference,
    into `check["compiled"]`. A compiler whose numerics stray beyond the tolerance fails the check as a definition
    would (`passed` False): it did not compute the same network. Called after the loop so that the check compiles
    nothing the timing would have included; a training run's compiled function is its whole step, so it has none."""
    if not check or "max_abs_diff" not in check:  # no check, or none against a reference
        return
    try:
        outputs = workload.compiled_logits(probe(config.model, config.batch_size, config.input_size))
        if outputs is None:
            return
        logits, again = outputs
        reference = _reference(results_dir, config.model, config.input_size, config.batch_size)
    except Exception as exc:  # the timing stands; the check says why it has no second half
        check["compiled"] = {"computed": COMPILED, "passed": None, "reason": f"{type(exc).__name__}: {exc}"[:300]}
        return
    compiled = compare_outputs(logits, np.asarray(reference["logits"]), config.precision)
    check["compiled"] = {"computed": COMPILED, "compiled_again": again, **compiled}
    if not compiled["passed"]:
        check["passed"] = False
