"""The catalogue's PyTorch model exported to ONNX: the one graph ONNX Runtime and OpenVINO both run.

Exported from the same seeded weights as a PyTorch run of the same config, so their outputs can be
checked against PyTorch's (tests/adapters/test_engines.py) and the measured work is the same model.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..models import family_of
from ..models.inputs import batch_shape, synthetic_batch
from .compile_cache import HIT, MISS, build_key, cache_dir, package_version, source_digest

OPSET = 17
INPUT, TOKENS_INPUT, OUTPUT = "images", "input_ids", "logits"


def input_name(model: str) -> str:
    """The exported graph's input: `images` (NCHW float32) or, for a token model, `input_ids` (int64)."""
    return TOKENS_INPUT if family_of(model).tokens else INPUT


class _Kept:
    """The cache's folder in place of a temporary one: the runtime's `cleanup()` leaves the cached file for the next
    process."""

    def cleanup(self) -> None:
        pass


@dataclass
class Exported:
    path: Path  # the .onnx file (inside `folder`; a temporary one is removed when the object is dropped)
    folder: tempfile.TemporaryDirectory | _Kept
    params: int  # trainable parameters of the exported PyTorch module
    x: object  # the input batch (NumPy: NCHW float32 images or int64 token ids), the same as the PyTorch adapter's
    method: str
    cache: str | None = None  # "hit" (read from the export cache), "miss" (exported and cached), None (no cache)


def seeded_torch_model(model: str, seed: int, threads: int):
    """The PyTorch module a run of (model, seed) measures, in eval mode, with its weights."""
    import torch

    from .torch.models import build_torch_model

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    return build_torch_model(model).eval()


def input_batch(model: str, batch_size: int, input_size: int, seed: int):
    """The batch the PyTorch adapter draws for a seed (NCHW images or token ids; NumPy's generator, no framework
    needed)."""
    import numpy as np

    return synthetic_batch(model, batch_size, input_size, np.random.default_rng(seed))


def model_source_digest(*more: Path) -> str:
    """The digest of the code that builds the seeded PyTorch model (its definitions and the catalogue's weights) and
    its input batch, with `more`: a change to any of them is a new key for what is made from the model."""
    here = Path(__file__).resolve().parent
    return source_digest(here / "torch" / "models.py", here.parent / "models" / "transformers.py",
                         here.parent / "models" / "cnn_weights.py", here.parent / "models" / "inputs.py", *more)


def export_key(model: str, batch_size: int, input_size: int, seed: int) -> str:
    """Everything that decides the exported file's bytes: the model, the batch and input shape, the opset, the seed
    of its weights, the exporter's versions and the code that builds the model and exports it."""
    here = Path(__file__).resolve().parent
    return build_key(model=model, batch_size=batch_size, input_shape=batch_shape(model, 1, input_size)[1:], opset=OPSET,
                     seed=seed, dtype="float32", torch=package_version("torch"), onnx=package_version("onnx"),
                     code=model_source_digest(here / "onnx_export.py"))


def _method(model: str, seed: int) -> str:
    return f"torch.onnx.export (TorchScript exporter, opset {OPSET}) of the PyTorch {model} in eval mode, seed {seed}"


def export_onnx(model: str, batch_size: int, input_size: int, seed: int, threads: int) -> Exported:
    """The seeded PyTorch model exported to ONNX (batch dimension dynamic): from the export cache where an export
    of the same key exists (no torch import, no build), else exported, and kept there for the next process."""
    folder = cache_dir("onnx", "export")
    if folder is None:
        return _export(model, batch_size, input_size, seed, threads)
    key = export_key(model, batch_size, input_size, seed)
    path, facts = folder / f"{model}-{key}.onnx", folder / f"{model}-{key}.json"
    if path.is_file() and facts.is_file():
        params = json.loads(facts.read_text())["params"]
        return Exported(path, _Kept(), params, input_batch(model, batch_size, input_size, seed), _method(model, seed),
                        HIT)
    fresh = _export(model, batch_size, input_size, seed, threads)
    _write_atomically(path, fresh.path.read_bytes())
    _write_atomically(facts, json.dumps({"params": fresh.params}).encode())  # last: a hit needs both files
    fresh.cache = MISS
    return fresh


def _write_atomically(dst: Path, data: bytes) -> None:
    """Written under a name of this process's own, then renamed: a concurrent process never reads half a file.
    Read-only: a step that rewrites its model file (a quantizer, say) must write a copy, never the cached export."""
    tmp = dst.with_name(f"{dst.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o444)
    os.replace(tmp, dst)


def _export(model: str, batch_size: int, input_size: int, seed: int, threads: int) -> Exported:
    """Export the seeded PyTorch model to a temporary ONNX file (input `images`, or `input_ids` int64 for a token
    model; its batch dimension dynamic)."""
    import torch

    module = seeded_torch_model(model, seed, threads)
    x = input_batch(model, batch_size, input_size, seed)
    name = input_name(model)
    folder = tempfile.TemporaryDirectory(prefix="bench-onnx-")
    path = Path(folder.name) / f"{model}.onnx"
    with warnings.catch_warnings():  # the TorchScript exporter announces its successor on every call
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.from_numpy(x),), str(path), dynamo=False, opset_version=OPSET,
                          input_names=[name], output_names=[OUTPUT], dynamic_axes={name: {0: "batch"}})
    params = sum(p.numel() for p in module.parameters())
    return Exported(path, folder, params, x, _method(model, seed))
