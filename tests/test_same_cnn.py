"""The Keras CNNs (TensorFlow's and JAX's) are torchvision's networks: given torchvision's weights they compute its
outputs. Until 2026-11-28 Keras' "same" padding put a strided convolution's and ResNet's stem pool's padding below and
right only (2/3 pixels against torchvision's 3/3), so ResNet-50's logits differed by 122 on 371."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import ROOT

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"}


def _run(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tests.cnn_parity", *args], cwd=ROOT, capture_output=True, text=True,
                         env=ENV, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v2"])
def test_keras_computes_torchvisions_network_given_its_weights(model, tmp_path):
    weights = str(tmp_path / f"{model}.npz")
    _run("torch", model, "64", weights)  # strided convolutions and (ResNet) the stem's pool, at 64x64
    found = json.loads(_run("keras", model, "64", weights, "tensorflow").strip().splitlines()[-1])
    assert found["max_abs_diff"] < 1e-5 * max(1.0, found["max_abs_ref"])
