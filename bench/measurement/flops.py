"""Model FLOPs per image: counted by the reference framework on its definition (meta tensors), or published figures."""

from __future__ import annotations

from pathlib import Path

from ..adapters import reference_adapter
from ..models import get_model
from .fresh_process import cached

TRAINING_FLOPS_FACTOR = 3  # forward + backward (about 2x forward): the usual convention


FLOPS_FILE = "model_flops.json"


def count_forward_flops(model: str, image_size: int) -> dict:
    """FLOPs per image for one forward pass and how they were obtained. 1 MAC = 2 FLOPs."""
    counter = reference_adapter()
    if counter.runs_here():
        return {"flops": counter.count_forward_flops(model, image_size),
                "method": f"counted ({counter.name} FlopCounterMode on the torchvision definition)"}
    spec = get_model(model)
    if spec.published_gmacs_224 is None:
        return {"flops": None, "method": f"unknown ({counter.name} not installed, no published figure)"}
    scale = (image_size / 224) ** 2
    return {"flops": 2e9 * spec.published_gmacs_224 * scale,
            "method": f"published ({spec.source}), scaled by image area"}


def flops_per_image(results_dir: Path | str, model: str, image_size: int, mode: str) -> tuple[float | None, str]:
    """(FLOPs per image for `mode`, method), counted once per host in a fresh process."""
    c = cached(results_dir, FLOPS_FILE, f"{model}|{image_size}",
               ["flops", "--model", model, "--image-size", str(image_size)])
    fwd, how = c["flops"], c["method"]
    if fwd is None:
        return None, how
    if mode == "training":
        return fwd * TRAINING_FLOPS_FACTOR, how + f"; training = {TRAINING_FLOPS_FACTOR}x forward"
    return fwd, how
