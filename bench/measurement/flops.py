"""Model FLOPs per sample (an image, or a token model's sequence): counted by the reference framework on its definition
(meta tensors), or published figures."""

from __future__ import annotations

from pathlib import Path

from ..adapters import reference_adapter
from ..models import get_model
from .fresh_process import cached

TRAINING_FLOPS_FACTOR = 3  # forward + backward (about 2x forward): the usual convention


FLOPS_FILE = "model_flops.json"


def count_forward_flops(model: str, input_size: int) -> dict:
    """FLOPs per sample for one forward pass and how they were obtained. 1 MAC = 2 FLOPs."""
    counter, spec = reference_adapter(), get_model(model)
    family = spec.model_family
    if counter.runs_here():
        return {"flops": counter.count_forward_flops(model, input_size),
                "method": f"counted ({counter.name} FlopCounterMode on the {family.flops_definition} definition)"}
    if spec.published_gmacs_224 is None or family.tokens:  # a published figure is for 224x224 images
        return {"flops": None, "method": f"unknown ({counter.name} not installed, no published figure)"}
    scale = (input_size / 224) ** 2
    return {"flops": 2e9 * spec.published_gmacs_224 * scale,
            "method": f"published ({spec.source}), scaled by image area"}


def flops_per_sample(results_dir: Path | str, model: str, input_size: int, mode: str) -> tuple[float | None, str]:
    """(FLOPs per sample for `mode`, method), counted once per host in a fresh process."""
    c = cached(results_dir, FLOPS_FILE, f"{model}|{input_size}",
               ["flops", "--model", model, "--input-size", str(input_size)])
    fwd, how = c["flops"], c["method"]
    if fwd is None:
        return None, how
    if mode == "training":
        return fwd * TRAINING_FLOPS_FACTOR, how + f"; training = {TRAINING_FLOPS_FACTOR}x forward"
    return fwd, how
