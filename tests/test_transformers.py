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


def _checked_record(check: dict | None, framework: str = "tensorflow"):
    from bench.config import make_config
    from bench.results.record import Record

    record = Record.new(make_config(framework=framework, model="tiny_vit"), 0, 0, None)
    record.settings = {"outputs_check": check} if check is not None else {}
    return record


def test_outputs_beyond_the_tolerance_are_flagged_and_never_a_winner():
    from bench.measurement.agreement import compare_outputs
    from bench.measurement.flags import RULE, run_flags
    from bench.report.estimates.processes import throughput_flags

    reference = np.array([[1.0, -2.0], [0.5, 0.25]])
    same = compare_outputs(reference + 1e-6, reference, "fp32")
    assert same["passed"] and same["relative_diff"] == pytest.approx(5e-7)
    other = compare_outputs(reference * 1.01, reference, "fp32")  # 1% off: another network, or another weight
    assert not other["passed"] and compare_outputs(reference * 1.01, reference, "bf16")["passed"]
    assert not compare_outputs(reference[:1], reference, "fp32")["passed"]  # another shape
    names = lambda check: [f.name for f in run_flags(_checked_record(check))]  # noqa: E731
    flagged = [f for f in run_flags(_checked_record({**other, "reference": "torch eager fp32"}))
               if f.name == "outputs_disagree"]
    assert flagged and "0.01 of its largest logit" in flagged[0].reason and "torch eager fp32" in flagged[0].reason
    assert "outputs_disagree" not in names({**same, "reference": "torch"}) + names(None)
    assert "outputs_disagree" not in names({"passed": None, "reason": "no reference"})  # said, not failed
    assert RULE["outputs_disagree"].scope == "throughput" and RULE["outputs_disagree"].why_no_winner
    assert not throughput_flags(flagged)  # the config's, not a disturbance: no retry clears it


def test_a_run_records_its_outputs_against_pytorchs_and_the_report_shows_them(tmp_path):
    from bench.config import make_config
    from bench.report.sections.same_network import same_network_table
    from bench.runs.single import measure_run

    config = make_config(framework="onnxruntime", model="tiny_vit", batch_size=2, protocol="seed", warmup=1,
                         iterations=2, phase_iterations=0, threads=2)
    record = measure_run(config, tmp_path)
    assert record.status == "ok", record.reason
    check = record.settings["outputs_check"]
    assert check["passed"] is True and check["reference"].startswith("torch ") and check["max_abs_diff"] < 1e-5
    assert not [f for f in record.flags if f.name == "outputs_disagree"]
    import pandas as pd

    row = {**record.to_row(), "batch_size": 2}
    [shown] = same_network_table(pd.DataFrame([row])).to_dict("records")
    assert shown["same network"] == "yes" and shown["framework/engine"] == "onnxruntime/all"


@pytest.mark.parametrize("framework", ["torch", "onnxruntime", "openvino"])
def test_each_engine_records_how_it_ran_the_attention(framework):
    from bench.config import make_config

    config = make_config(framework=framework, model="tiny_vit", batch_size=2, threads=2)
    attention = ADAPTERS.get(framework).prepare(config).settings["attention"]
    assert attention["implementation"] and attention["evidence"] and attention["fused"] in (True, False)
    if framework == "onnxruntime":  # read from the graph ONNX Runtime's optimiser wrote
        assert "Softmax" in attention["evidence"] and attention["fused"] == ("Softmax 0" in attention["evidence"])
    if framework == "openvino":  # read from the CPU plugin's runtime model
        assert attention["fused"] == ("Softmax 0" in attention["evidence"])
    if framework == "torch":  # the backend torch picks for the run's shapes
        assert "scaled_dot_product_attention backend" in attention["evidence"]
    assert "attention" not in ADAPTERS.get(framework).prepare(
        make_config(framework=framework, model="tiny_cnn", batch_size=2, threads=2)).settings  # a CNN has none


def test_a_p99_latency_is_stated_only_over_at_least_100_timed_iterations(tmp_path):
    from bench.measurement.loop import P99_MIN_TIMED
    from bench.report.context import load
    from tests.synthetic import record, write

    few = [record(model="resnet50", batch_size=1, repeat=r, n=12) for r in range(2)]  # 24 timed iterations
    many = [record(model="resnet18", batch_size=1, repeat=r, n=60) for r in range(2)]  # 120
    configs = load(write(few + many, tmp_path)).configs.set_index("model")
    assert configs.loc["resnet50", "latency_ms_p99"] != configs.loc["resnet50", "latency_ms_p99"]  # not given
    assert configs.loc["resnet18", "latency_ms_p99"] >= configs.loc["resnet18", "latency_ms_p50"] > 0
    assert P99_MIN_TIMED == 100
