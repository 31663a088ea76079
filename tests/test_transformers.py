"""The transformers of the catalogue: one seeded set of weights, the same network in every framework that runs it
(its outputs, not only its parameter count), and a `skipped` record where a framework has none."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.models import get_model
from bench.models.transformers import parameter_count, vit_weights

from .conftest import ROOT, bench_cli

# The agreement every framework's fp32 outputs must reach against PyTorch's on the same input (absolute, on logits
# of order one: float32 summation orders differ, nothing else may).
TOLERANCE = 1e-4

_KERAS_OUTPUTS = """
import os, sys, json, numpy as np
os.environ["KERAS_BACKEND"] = sys.argv[1]
from bench.adapters.keras_models import build_keras_model
x = np.random.default_rng(1).standard_normal((2, 3, 32, 32), dtype=np.float32)
model = build_keras_model("tiny_vit", 32)
print(json.dumps({"params": model.count_params(),
                  "logits": np.asarray(model(x.transpose(0, 2, 3, 1), training=False)).tolist()}))
"""


def _torch_logits():
    import torch

    from bench.adapters.torch.models import build_torch_model

    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32), dtype=np.float32)
    model = build_torch_model("tiny_vit").eval()
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy(), sum(p.numel() for p in model.parameters())


def test_the_catalogue_holds_vit_b16_with_its_published_size_and_a_tiny_vit_for_tests():
    vit, tiny = get_model("vit_b16"), get_model("tiny_vit")
    assert vit.transformer and tiny.transformer and tiny.tiny and not get_model("resnet50").transformer
    assert (vit.default_image_size, vit.min_image_size, vit.max_image_size) == (224, 224, 224)
    # the seeded weights have exactly torchvision's ViT-B/16 size (86,567,656), its published figure
    assert parameter_count("vit_b16", 1000) == 86_567_656
    assert vit.published_params_millions == pytest.approx(86.57) and "torchvision" in vit.source


def test_the_weights_are_one_seeded_set_with_nothing_degenerate():
    a, b = vit_weights("tiny_vit", 10), vit_weights.__wrapped__("tiny_vit", 10)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert np.abs(a["heads.head.weight"]).max() > 0  # a zero head would make every output equal
    assert all(v.dtype == np.float32 for v in a.values())


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_keras_runs_the_same_vit_as_pytorch_its_outputs_agree(backend):
    # in a process of its own: TensorFlow and torch in one process is not a supported combination
    out = subprocess.run([sys.executable, "-c", _KERAS_OUTPUTS, backend], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"},
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    keras = json.loads(out.stdout.strip().splitlines()[-1])
    reference, params = _torch_logits()
    assert keras["params"] == params
    assert np.abs(np.array(keras["logits"]) - reference).max() < TOLERANCE


def test_mxnet_has_no_transformer_and_says_so(tmp_path):
    adapter = ADAPTERS.get("mxnet")
    assert "no maintained transformer" in adapter.model_refusal("tiny_vit")
    assert adapter.model_refusal("resnet50") is None and ADAPTERS.get("torch").model_refusal("vit_b16") is None
    proc = bench_cli("run", "--framework", "mxnet", "--model", "tiny_vit", "--batch-size", "2", "--protocol", "seed",
                     "--warmup", "1", "--iterations", "1", results=tmp_path)
    [path] = (tmp_path).rglob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "skipped" and "no maintained transformer" in record["reason"], proc.stderr[-1000:]
