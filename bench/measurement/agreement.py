"""How closely an int8 model's logits follow its fp32 model's on a held-out image set (framework-free metrics), and
the thresholds below which an int8 run is flagged and never a winner.

MLPerf inference accepts an int8 result whose accuracy is at least 99% of fp32's. The weights here are random, so
there is no accuracy to keep; what is kept is the fp32 model's output. The thresholds say the int8 logits carry at
most 1% of the fp32 logits' energy as error: SQNR >= 20 dB (noise power <= 1% of signal power) and a mean cosine
similarity >= 0.99. Top-1 agreement is reported, not judged: a random network's logits are near ties (a flipped
arg-max says little), and one that predicts a single class for most inputs agrees trivially, hence the count of
distinct classes fp32 predicted beside it.

The same metrics' simpler sibling judges a run's logits against the reference framework's on one probe
batch (`compare_outputs`, bench/measurement/outputs_check.py): the same weights everywhere, so the largest difference
must stay within a share of the largest logit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

SQNR_MIN_DB = 20.0
COSINE_MIN = 0.99


@dataclass(frozen=True)
class Agreement:
    """int8 against fp32 on the same images: per-image cosine (mean and worst), SQNR over all logits, top-1."""

    images: int
    cosine_mean: float
    cosine_min: float
    sqnr_db: float
    top1_agreement: float
    fp32_distinct_classes: int

    @property
    def failures(self) -> list[str]:
        """What falls below the thresholds, in words (empty: it agrees)."""
        out = []
        if not self.sqnr_db >= SQNR_MIN_DB:  # written so that NaN fails
            out.append(f"SQNR {self.sqnr_db:.1f} dB < {SQNR_MIN_DB:g} dB")
        if not self.cosine_mean >= COSINE_MIN:
            out.append(f"mean cosine similarity {self.cosine_mean:.4f} < {COSINE_MIN:g}")
        return out

    def to_json(self) -> dict:
        return {**asdict(self), "thresholds": {"sqnr_db_min": SQNR_MIN_DB, "cosine_mean_min": COSINE_MIN},
                "agrees": not self.failures}


def agreement(fp32: np.ndarray, int8: np.ndarray) -> Agreement:
    """Compare int8 logits with fp32 logits of the same images, both (images, classes)."""
    a = np.asarray(fp32, dtype=np.float64).reshape(len(fp32), -1)
    b = np.asarray(int8, dtype=np.float64).reshape(len(int8), -1)
    if a.shape != b.shape or not len(a):
        raise ValueError(f"logits of different shapes: fp32 {a.shape}, int8 {b.shape}")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosine = np.where(norms > 0, (a * b).sum(axis=1) / np.where(norms > 0, norms, 1), 0.0)
    noise = float(((a - b) ** 2).sum())
    signal = float((a ** 2).sum())
    sqnr = float("inf") if noise == 0 else (10 * np.log10(signal / noise) if signal > 0 else float("-inf"))
    top_a, top_b = a.argmax(axis=1), b.argmax(axis=1)
    return Agreement(images=len(a), cosine_mean=float(cosine.mean()), cosine_min=float(cosine.min()),
                     sqnr_db=float(np.clip(sqnr, -999.0, 999.0)), top1_agreement=float((top_a == top_b).mean()),
                     fp32_distinct_classes=int(len(np.unique(top_a))))


def judged(settings_int8: dict | None) -> list[str]:
    """The failures recorded in a run's int8 section's `agreement` (empty: no int8 run, or it agrees)."""
    if not settings_int8:
        return []
    found = settings_int8.get("agreement")
    if not found:
        return ["no agreement with fp32 was measured"]
    fields = {k: found[k] for k in Agreement.__dataclass_fields__}
    return Agreement(**fields).failures


def attach(settings: dict, fp32, int8) -> None:
    """Add the agreement of `int8` with `fp32` to a run's `settings["int8"]` (what the flag rule judges)."""
    settings["int8"] = {**settings.get("int8", {}), "agreement": agreement(fp32, int8).to_json()}


# The largest |difference| allowed, as a share of the reference's largest |logit|: float32 in another summation
# order stays near 1e-6 (measured: ViT-B/16 in TensorFlow and JAX 1.4e-6); reduced precisions round every layer.
OUTPUTS_TOLERANCE = {"fp32": 1e-4, "tf32": 1e-2, "bf16": 5e-2, "fp16": 5e-2}


def compare_outputs(logits: np.ndarray, reference: np.ndarray, precision: str) -> dict[str, Any]:
    """A framework's logits against the reference framework's for the same input (bench/measurement/outputs_check.py):
    the largest difference, the reference's largest logit and whether the difference is within the tolerance."""
    logits, reference = np.asarray(logits, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if logits.shape != reference.shape:
        return {"passed": False, "reason": f"outputs of shape {logits.shape}, the reference's {reference.shape}"}
    diff, scale = float(np.abs(logits - reference).max()), float(np.abs(reference).max())
    tolerance = OUTPUTS_TOLERANCE[precision]
    result = {"max_abs_diff": diff, "reference_max_abs": scale, "relative_diff": diff / scale if scale else None,
              "tolerance": tolerance}
    return {**result, "passed": _within(result)}


def outputs_judged(settings_check: dict | None) -> str | None:
    """Why a run's outputs disagree with the reference's (None: they agree, or no check applied)."""
    if not settings_check or settings_check.get("passed") is not False:
        return None
    compiled = settings_check.get("compiled") or {}
    if compiled.get("passed") is not False or not _within(settings_check):  # the definition's own, first
        return _difference(settings_check, settings_check.get("reference"))
    return "its compiled forward's " + _difference(compiled, settings_check.get("reference"))


def _within(check: dict) -> bool:
    """Whether a comparison's largest difference is within its tolerance (the eager half of a check whose `passed`
    also holds its compiled forward's)."""
    return "max_abs_diff" in check and check["max_abs_diff"] <= check["tolerance"] * check["reference_max_abs"]


def _difference(check: dict, reference: str | None) -> str:
    if "max_abs_diff" not in check:
        return check.get("reason", "outputs differ")
    share = check["relative_diff"]
    return (f"largest difference {check['max_abs_diff']:.3g} against {reference}, "
            + (f"{share:.2g} of its largest logit" if share is not None else "its largest logit being 0")
            + f" (allowed: {check['tolerance']:g})")
