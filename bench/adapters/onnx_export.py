"""The catalogue's PyTorch model exported to ONNX: the one graph ONNX Runtime and OpenVINO both run.

Exported from the same seeded weights as a PyTorch run of the same config, so their outputs can be
checked against PyTorch's (tests/test_engines.py) and the measured work is the same model.
"""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

OPSET = 17
INPUT, OUTPUT = "images", "logits"


@dataclass
class Exported:
    path: Path  # the .onnx file (inside `folder`, removed when the object is dropped)
    folder: tempfile.TemporaryDirectory
    params: int  # trainable parameters of the exported PyTorch module
    x: object  # the NCHW float32 input batch (NumPy), the same as the PyTorch adapter's
    method: str


def seeded_torch_model(model: str, seed: int, threads: int):
    """The PyTorch module a run of (model, seed) measures, in eval mode, with its weights."""
    import torch

    from .torch.models import build_torch_model

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    return build_torch_model(model).eval()


def input_batch(batch_size: int, image_size: int, seed: int):
    """The NCHW batch the PyTorch adapter draws for a seed (NumPy's generator, no framework needed)."""
    import numpy as np

    return np.random.default_rng(seed).standard_normal((batch_size, 3, image_size, image_size), dtype=np.float32)


def export_onnx(model: str, batch_size: int, image_size: int, seed: int, threads: int) -> Exported:
    """Export the seeded PyTorch model to a temporary ONNX file (batch dimension dynamic)."""
    import torch

    module = seeded_torch_model(model, seed, threads)
    x = input_batch(batch_size, image_size, seed)
    folder = tempfile.TemporaryDirectory(prefix="bench-onnx-")
    path = Path(folder.name) / f"{model}.onnx"
    with warnings.catch_warnings():  # the TorchScript exporter announces its successor on every call
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.from_numpy(x),), str(path), dynamo=False, opset_version=OPSET,
                          input_names=[INPUT], output_names=[OUTPUT], dynamic_axes={INPUT: {0: "batch"}})
    params = sum(p.numel() for p in module.parameters())
    return Exported(path, folder, params, x, f"torch.onnx.export (TorchScript exporter, opset {OPSET}) of the "
                                             f"PyTorch {model} in eval mode, seed {seed}")
