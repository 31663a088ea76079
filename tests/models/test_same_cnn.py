"""The catalogue's CNNs are one network in every framework: each framework's definition (torchvision, Keras for
TensorFlow and JAX, Gluon for MXNet) holds the catalogue's one seeded set of weights (bench/models/cnn_weights.py) and
computes torchvision's outputs on the output check's probe batch. Until 2026-11-28 Keras' "same" padding put a strided
convolution's padding below and right only (ResNet-50's logits differed by 122 on 371), the Keras definitions flattened
AlexNet's and VGG's maps in (H, W, C) order and resized instead of pooling adaptively, and the Keras and Gluon
GoogLeNets used BatchNorm's epsilon 1e-5 against torchvision's 1e-3."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.models import get_model
from bench.models.cnn_weights import KINDS, draw
from tests.conftest import ROOT

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"}
SIZE = 64  # strided convolutions, the stem's pool and (AlexNet, VGG) adaptive pooling away from its identity
# the default tier's: projection shortcuts, depthwise convolutions, inception branches and BatchNorm's epsilon; the
# full tier adds a Flatten into a linear layer after adaptive pooling (AlexNet, VGG), the bottleneck blocks and JAX
MODELS = ["resnet18", "mobilenet_v2", "googlenet"]
FULL = ["alexnet", "vgg16", "resnet18", "resnet50", "resnet152", "mobilenet_v2", "googlenet"]
RELATIVE = 1e-5  # of the largest logit: float32 summation orders differ, nothing else may


def _run(python: str, *args: str) -> str:
    out = subprocess.run([python, "-m", "tests.cnn_parity", *args], cwd=ROOT, capture_output=True, text=True,
                         env=ENV, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return (out.stdout.strip().splitlines() or [""])[-1]


def _agree(models: list[str], backends: list[str], tmp_path) -> None:
    reference = str(tmp_path / "torch.npz")
    _run(sys.executable, "torch", str(SIZE), reference, *models)
    found = {b: json.loads(_run(sys.executable, "keras", b, str(SIZE), reference, *models)) for b in backends}
    mxnet = ADAPTERS.get("mxnet").interpreter()
    if mxnet is not None:  # `make test` builds it; without it, MXNet's runs are refused with the reason
        found["mxnet"] = json.loads(_run(str(mxnet), "mxnet", str(SIZE), reference, *models))
    for framework, per_model in found.items():
        assert set(per_model) == set(models)
        for model, d in per_model.items():
            assert d["max_abs_ref"] > 0.1, (framework, model, d)  # logits of a real network, not zeros
            assert d["max_abs_diff"] <= RELATIVE * d["max_abs_ref"], (framework, model, d)


def test_every_framework_computes_torchvisions_outputs_with_the_catalogues_weights(tmp_path):
    _agree(MODELS, ["tensorflow"], tmp_path)


@pytest.mark.full
def test_every_cnn_agrees_in_every_framework(tmp_path):
    _agree(FULL, ["tensorflow", "jax"], tmp_path)


def test_the_weights_are_seeded_per_layer_and_kind_in_torchs_layout():
    a, b = draw("conv", 3, (8, 4, 3, 3)), draw("conv", 3, (8, 4, 3, 3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)) and len(a) == 1  # no bias asked, none drawn
    assert not np.array_equal(a[0], draw("conv", 4, (8, 4, 3, 3))[0])  # another layer, other values
    assert not np.array_equal(a[0], draw("depthwise", 3, (8, 4, 3, 3))[0])  # another kind, other values
    weight, bias = draw("linear", 0, (10, 400), bias=True)
    assert weight.dtype == bias.dtype == np.float32 and weight.shape == (10, 400) and bias.shape == (10,)
    assert weight.std() == pytest.approx(np.sqrt(2 / 400), rel=0.1)  # He's: linear layers keep their scale
    assert draw("conv", 0, (64, 576, 1, 1))[0].std() == pytest.approx(np.sqrt(1 / 576), rel=0.1)  # BatchNorm follows
    scale, shift, mean, var = draw("bn", 0, (256,))
    assert scale.min() >= 0.5 and var.min() >= 0.5 and scale.max() <= 1.5 and var.max() <= 1.5
    assert abs(shift).max() > 0 and abs(mean).max() > 0  # not BatchNorm's defaults, which would hide a swap
    with pytest.raises(ValueError, match="unknown layer kind 'pool'; valid: conv, depthwise, bn, linear"):
        draw("pool", 0, (1,))
    assert list(KINDS) == ["conv", "depthwise", "bn", "linear"]


def test_pytorch_holds_the_catalogues_weights_and_the_smoke_test_models_their_own():
    import torch

    from bench.adapters.torch.models import build_torch_model

    net = build_torch_model("resnet18")
    [first] = draw("conv", 0, tuple(net.conv1.weight.shape))
    assert torch.equal(net.conv1.weight, torch.from_numpy(first))
    downsample = net.layer2[0].downsample  # torchvision registers the projection after the block's main path
    convs_before = 1 + 2 * 2 + 2  # the stem, layer1's two blocks, layer2[0]'s main path
    [projection] = draw("conv", convs_before, tuple(downsample[0].weight.shape))
    assert torch.equal(downsample[0].weight, torch.from_numpy(projection))
    assert torch.equal(net.bn1.running_var, torch.from_numpy(draw("bn", 0, (64,))[3]))
    assert get_model("resnet18").shared_weights and get_model("vit_b16").shared_weights
    assert not get_model("tiny_cnn").shared_weights and not get_model("digits_mlp").shared_weights


def test_a_cached_reference_is_keyed_by_the_code_that_decides_it(monkeypatch):
    """reference_outputs.json is kept per results folder: a reference computed before the weights, a definition or
    the probe changed must not be served after."""
    from bench.measurement import outputs_check

    seen = []
    from bench.adapters import onnx_export

    monkeypatch.setattr(onnx_export, "source_digest", lambda *paths: seen.extend(paths) or str(len(seen)))
    first = outputs_check.reference_key("resnet18", 64, 2)
    assert first.startswith("resnet18|64|2|")
    assert {p.name for p in seen} >= {"cnn_weights.py", "transformers.py", "inputs.py", "models.py",
                                      "outputs_check.py"}
    assert outputs_check.reference_key("resnet18", 64, 2) != first  # another digest, another key


@pytest.mark.full
@pytest.mark.parametrize("framework,engine", [("tensorflow", "tflite"), ("tensorflow", "graph"), ("jax", "jit"),
                                              ("torch", "compile")])


def test_a_cnn_run_records_its_output_check(framework, engine, tmp_path):
    """A real run of a catalogue CNN checks its outputs against PyTorch's before timing (TFLite through its own
    interpreter, which had no logits before 2026-11-28 and so was never checked)."""
    from tests.conftest import bench_cli

    out = bench_cli("run", "--framework", framework, "--engine", engine, "--model", "resnet18", "--image-size",
                    str(SIZE), "--batch-size", "2", "--protocol", "seed", "--warmup", "1", "--iterations", "2",
                    "--phase-iterations", "0", "--threads", "2", "--json", results=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    assert record["status"] == "ok", record["reason"]
    check = record["outputs_check"]
    assert check["passed"] is True and check["relative_diff"] < RELATIVE, check
    compiled = check.get("compiled")  # the loop's compiled forward, after it: TFLite's logits were already its own
    assert (compiled is None) == (engine == "tflite")
    assert compiled is None or (compiled["relative_diff"] < RELATIVE and compiled["compiled_again"] is False)
