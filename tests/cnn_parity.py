"""A test helper run in processes of its own (TensorFlow, JAX, MXNet and torch do not share a process): each
framework's catalogue CNNs, built as a run builds them (with the catalogue's seeded weights,
bench/models/cnn_weights.py), on the output check's probe batch. `torch SIZE FILE MODEL...` writes torchvision's logits
to FILE; `keras BACKEND SIZE FILE MODEL...` and `mxnet SIZE FILE MODEL...` print, per model, their largest difference
from them and the largest logit (one JSON line)."""

import json
import os
import sys

import numpy as np


def _batch(model: str, size: int) -> np.ndarray:
    from bench.measurement.outputs_check import probe

    return probe(model, 2, size)


def torch_logits(size: int, path: str, models: list[str]) -> None:
    import torch

    from bench.adapters.torch.models import build_torch_model

    out = {}
    for model in models:
        with torch.no_grad():
            out[model] = build_torch_model(model).eval()(torch.from_numpy(_batch(model, size))).numpy()
    np.savez(path, **out)


def keras_logits(backend: str, size: int, models: list[str]) -> dict[str, np.ndarray]:
    os.environ["KERAS_BACKEND"] = backend
    from bench.adapters.keras_models import build_keras_model, keras_batch

    return {m: np.asarray(build_keras_model(m, size)(keras_batch(_batch(m, size)), training=False)) for m in models}


def mxnet_logits(size: int, models: list[str]) -> dict[str, np.ndarray]:
    from bench.adapters.mxnet.adapter import MXNetAdapter
    from bench.config import make_config

    adapter = MXNetAdapter()
    return {m: adapter.prepare(make_config(framework="mxnet", model=m, batch_size=2, image_size=size, threads=2))
            .logits(_batch(m, size)) for m in models}


def differences(found: dict[str, np.ndarray], path: str) -> dict[str, dict[str, float]]:
    ref = np.load(path)
    return {m: {"max_abs_diff": float(np.abs(y - ref[m]).max()), "max_abs_ref": float(np.abs(ref[m]).max())}
            for m, y in found.items()}


if __name__ == "__main__":
    which, rest = sys.argv[1], sys.argv[2:]
    if which == "torch":
        torch_logits(int(rest[0]), rest[1], rest[2:])
    elif which == "keras":
        print(json.dumps(differences(keras_logits(rest[0], int(rest[1]), rest[3:]), rest[2])))
    else:
        print(json.dumps(differences(mxnet_logits(int(rest[0]), rest[2:]), rest[1])))
