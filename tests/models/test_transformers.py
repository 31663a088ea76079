"""The transformers of the catalogue: one seeded set of weights, the same network in every framework that runs it
(its outputs, not only its parameter count), and a `skipped` record where a framework has none."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.errors import ConfigError
from bench.models import get_model
from bench.models.inputs import synthetic_batch
from bench.models.transformers import bert_weights, parameter_count, vit_weights
from tests.conftest import ROOT, bench_cli

# The agreement every framework's fp32 outputs must reach against PyTorch's on the same input (absolute, on logits
# of order one: float32 summation orders differ, nothing else may).
TOLERANCE = 1e-4

SIZES = {"tiny_vit": 32, "tiny_bert": 16}  # an image's side, a sequence's length

_KERAS_OUTPUTS = """
import os, sys, json, numpy as np
os.environ["KERAS_BACKEND"] = sys.argv[1]
from bench.adapters.keras_models import build_keras_model, keras_batch
from bench.models.inputs import synthetic_batch
model, size = sys.argv[2], int(sys.argv[3])
x = synthetic_batch(model, 2, size, np.random.default_rng(1))
net = build_keras_model(model, size)
print(json.dumps({"params": net.count_params(),
                  "logits": np.asarray(net(keras_batch(x), training=False)).tolist()}))
"""


def _torch_logits(model: str):
    import torch

    from bench.adapters.torch.models import build_torch_model

    x = synthetic_batch(model, 2, SIZES[model], np.random.default_rng(1))
    net = build_torch_model(model).eval()
    with torch.no_grad():
        return net(torch.from_numpy(x)).numpy(), sum(p.numel() for p in net.parameters())


def test_the_catalogue_holds_vit_b16_with_its_published_size_and_a_tiny_vit_for_tests():
    vit, tiny = get_model("vit_b16"), get_model("tiny_vit")
    assert vit.model_family.attention and tiny.model_family.attention and tiny.tiny
    assert not get_model("resnet50").model_family.attention
    assert (vit.default_image_size, vit.min_image_size, vit.max_image_size) == (224, 224, 224)
    # the seeded weights have exactly torchvision's ViT-B/16 size (86,567,656), its published figure
    assert parameter_count("vit_b16", 1000) == 86_567_656
    assert vit.published_params_millions == pytest.approx(86.57) and "torchvision" in vit.source


def test_the_catalogue_holds_bert_base_on_token_ids_and_a_tiny_bert_for_tests():
    from bench.config import make_config

    bert, tiny = get_model("bert_base"), get_model("tiny_bert")
    family = bert.model_family
    assert family.attention and family.tokens and tiny.tiny and not get_model("vit_b16").model_family.tokens
    assert (family.sample_unit, family.rate_unit, bert.default_sequence_length) == ("sequences", "seq/s", 128)
    # Hugging Face's BertModel has 109,482,240 parameters; the 2-class classifier adds 768 x 2 + 2
    assert parameter_count("bert_base", 2) == 109_482_240 + 1538
    assert bert.published_params_millions == 110 and "Devlin" in bert.source
    config = make_config(framework="torch", model="bert_base")
    assert (config.sequence_length, config.image_size, config.input_size) == (128, None, 128)
    assert make_config(framework="torch", model="resnet50").sequence_length is None
    ids = synthetic_batch("tiny_bert", 3, 16, np.random.default_rng(0))
    assert ids.shape == (3, 16) and ids.dtype == np.int64 and 0 <= ids.min() and ids.max() < 1000


@pytest.mark.parametrize("given, needle", [
    (dict(model="bert_base", image_size=224), "image_size 224 does not suit bert_base: it reads token ids"),
    (dict(model="resnet50", sequence_length=128), "sequence_length 128 does not suit resnet50: it reads images"),
    (dict(model="bert_base", sequence_length=513), "sequence_length 513 does not suit bert_base; it accepts 1 to 512"),
    (dict(model="tiny_bert", data="files"), "data 'files' reads image files; tiny_bert reads token ids"),
    (dict(model="tiny_bert", strategy="allreduce", workers=2), "distributed runs take image models"),
    (dict(model="tiny_bert", precision="int8", framework="tensorflow"), "a token model's embedding lookup"),
])


def test_a_token_models_inputs_are_checked_before_any_work(given, needle):
    from bench.config import make_config

    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        make_config(**{"framework": "torch", **given})


@pytest.mark.parametrize("model, weights, head", [("tiny_vit", vit_weights, "heads.head.weight"),
                                                  ("tiny_bert", bert_weights, "classifier.weight")])


def test_the_weights_are_one_seeded_set_with_nothing_degenerate(model, weights, head):
    a, b = weights(model, 10), weights.__wrapped__(model, 10)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert np.abs(a[head]).max() > 0  # a zero head would make every output equal
    assert all(v.dtype == np.float32 for v in a.values())


def test_pytorch_holds_exactly_the_catalogues_weights():
    from bench.adapters.torch.models import build_torch_model

    for model in SIZES:
        state = build_torch_model(model).state_dict()
        weights = (vit_weights if model == "tiny_vit" else bert_weights)(model, get_model(model).num_classes)
        assert state.keys() == weights.keys()
        assert all(np.array_equal(state[k].numpy(), weights[k]) for k in weights)


@pytest.mark.parametrize("model", list(SIZES))
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_keras_runs_the_same_transformer_as_pytorch_its_outputs_agree(backend, model):
    # in a process of its own: TensorFlow and torch in one process is not a supported combination
    out = subprocess.run([sys.executable, "-c", _KERAS_OUTPUTS, backend, model, str(SIZES[model])], cwd=ROOT,
                         capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"},
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    keras = json.loads(out.stdout.strip().splitlines()[-1])
    reference, params = _torch_logits(model)
    assert keras["params"] == params
    assert np.abs(np.array(keras["logits"]) - reference).max() < TOLERANCE * np.abs(reference).max()


def test_mxnet_has_no_transformer_and_says_so(tmp_path):
    adapter = ADAPTERS.get("mxnet")
    assert "no maintained transformer" in adapter.model_refusal("tiny_vit")
    assert adapter.model_refusal("resnet50") is None and ADAPTERS.get("torch").model_refusal("vit_b16") is None
    proc = bench_cli("run", "--framework", "mxnet", "--model", "tiny_vit", "--batch-size", "2", "--protocol", "seed",
                     "--warmup", "1", "--iterations", "1", results=tmp_path)
    [path] = (tmp_path).rglob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "skipped" and "no maintained transformer" in record["reason"], proc.stderr[-1000:]


def _checked_record(check: dict | None, framework: str = "tensorflow", engine: str | None = None):
    from bench.config import make_config
    from bench.results.record import Record

    record = Record.new(make_config(framework=framework, model="tiny_vit", engine=engine), 0, 0, None)
    record.keep_settings({"outputs_check": check} if check is not None else {})
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


class _Compiled:
    """A workload whose compiled forward gives `out` (None: it has none) or raises."""

    def __init__(self, out):
        self.out = out

    def compiled_logits(self, x):
        if isinstance(self.out, Exception):
            raise self.out
        return None if self.out is None else (self.out, False)


def test_a_compiled_forward_that_strays_fails_the_check_and_is_flagged(monkeypatch, tmp_path):
    from bench.config import make_config
    from bench.measurement import outputs_check
    from bench.measurement.agreement import compare_outputs
    from bench.measurement.flags import run_flags

    reference = np.linspace(-3, 3, 20).reshape(2, 10)
    monkeypatch.setattr(outputs_check, "_reference", lambda *a: {"logits": reference.tolist()})
    config = make_config(framework="tensorflow", engine="xla", model="tiny_vit", batch_size=2)

    def checked(out, eager=reference):
        check = {**compare_outputs(eager, reference, "fp32"), "reference": "torch eager fp32"}
        outputs_check.check_compiled(_Compiled(out), config, tmp_path, check)
        return check

    agreeing = checked(reference + 1e-7)
    assert agreeing["passed"] is True and agreeing["compiled"]["passed"] is True
    assert "after" in agreeing["compiled"]["computed"]
    straying = checked(reference * 1.01)  # the eager model agreed, the compiler did not
    assert straying["passed"] is False and straying["compiled"]["relative_diff"] == pytest.approx(0.01)
    [flag] = [f for f in run_flags(_checked_record(straying)) if f.name == "outputs_disagree"]
    assert "compiled forward" in flag.reason and "0.01 of its largest logit" in flag.reason
    both = checked(reference * 1.01, eager=reference * 1.02)  # the definition strays: that is said first
    [flag] = [f for f in run_flags(_checked_record(both)) if f.name == "outputs_disagree"]
    assert "compiled" not in flag.reason and "0.02 of its largest logit" in flag.reason
    assert "compiled" not in checked(None)  # an engine whose logits are the engine's own: nothing more
    failed = checked(RuntimeError("no kernel"))
    assert failed["passed"] is True and failed["compiled"]["passed"] is None  # said, not failed, not passed
    assert "no kernel" in failed["compiled"]["reason"]
    unchecked = {"passed": None, "reason": "no reference"}
    outputs_check.check_compiled(_Compiled(reference), config, tmp_path, unchecked)
    assert "compiled" not in unchecked  # no reference, nothing to compare with


def test_the_report_shows_the_compiled_forwards_check_or_why_there_is_none():
    import pandas as pd

    from bench.measurement.agreement import compare_outputs
    from bench.report.sections import same_network
    from bench.report.sections.same_network import COMPILED_COLUMN, same_network_table

    reference = np.linspace(-3, 3, 20).reshape(2, 10)
    eager = {**compare_outputs(reference, reference, "fp32"), "reference": "torch eager fp32"}
    compiled = {"compiled": {**compare_outputs(reference * (1 + 3e-6), reference, "fp32"), "compiled_again": False}}
    checks = {"graph": {**eager, **compiled}, "xla": {**eager, "compiled": {"passed": None, "reason": "no kernel"}},
              "eager": eager}  # the last as an eager engine's, or a record from before the compiled check
    rows = []
    for engine, check in checks.items():
        record = _checked_record(check, engine=engine)
        rows.append({**record.to_row(), "batch_size": 2})
    shown = {r["framework/engine"]: r[COMPILED_COLUMN] for r in same_network_table(pd.DataFrame(rows)).to_dict(
        "records")}
    assert shown == {"tensorflow/graph": "3.0e-06", "tensorflow/xla": "not checked: no kernel", "tensorflow/eager": ""}
    only_eager = same_network_table(pd.DataFrame(rows[2:]))
    assert not only_eager[COMPILED_COLUMN].astype(bool).any()  # the section then drops the column and its text
    assert same_network.COMPILED_TEXT.strip()


@pytest.mark.parametrize("framework,engine", [("tensorflow", "graph"),
                                              pytest.param("jax", "jit", marks=pytest.mark.full)])


def test_a_compiled_engine_is_checked_after_its_timing_through_the_loops_own_function(tmp_path, framework, engine):
    """The eager check before the timing covers the definition and the weights; the compiled forward the loop ran
    is checked after it (a compiler's numerics), on the probe of the loop's shape, in the record and the report
    (torch.compile, and these two on a CNN: tests/models/test_same_cnn.py, full tier)."""
    import pandas as pd

    from bench.report.sections.same_network import COMPILED_COLUMN, same_network_table
    from bench.results.record import Record

    out = bench_cli("run", "--framework", framework, "--engine", engine, "--model", "tiny_bert",
                    "--sequence-length", str(SIZES["tiny_bert"]), "--batch-size", "2", "--protocol", "seed",
                    "--warmup", "1", "--iterations", "2", "--phase-iterations", "0", "--threads", "2", "--json",
                    results=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    check = record["outputs_check"]
    assert check["passed"] is True and check["compiled"]["passed"] is True, check
    assert check["compiled"]["relative_diff"] < TOLERANCE and check["compiled"]["tolerance"] == check["tolerance"]
    assert check["compiled"]["compiled_again"] is False  # the loop's own program, not a new trace
    row = {**Record.from_json(record).to_row(), "batch_size": 2}
    [shown] = same_network_table(pd.DataFrame([row])).to_dict("records")
    assert float(shown[COMPILED_COLUMN]) == pytest.approx(check["compiled"]["relative_diff"], rel=0.1)
    assert shown["same network"] == "yes"


@pytest.mark.parametrize("model", list(SIZES))
def test_a_run_records_its_outputs_against_pytorchs_and_the_report_shows_them(tmp_path, model):
    from bench.config import make_config
    from bench.report.sections.same_network import same_network_table
    from bench.runs.single import measure_run

    config = make_config(framework="onnxruntime", model=model, batch_size=2, protocol="seed", warmup=1,
                         iterations=2, phase_iterations=0, threads=2)
    record = measure_run(config, tmp_path)
    assert record.status == "ok", record.reason
    check = record.outputs_check
    assert check["passed"] is True and check["reference"].startswith("torch ") and check["relative_diff"] < 1e-5
    assert not [f for f in record.flags if f.name == "outputs_disagree"]
    unit = get_model(model).model_family.sample_unit
    assert record.summary.sample_unit == unit and ("token ids" in check["inputs"]) == (unit == "sequences")
    tokens = record.summary.tokens_per_sec_median
    per_sequence = record.summary.images_per_sec_median * 16
    assert (tokens == pytest.approx(per_sequence)) if unit == "sequences" else tokens is None
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


def test_a_training_runs_output_check_sees_its_model_without_dropout():
    from bench.config import make_config
    from bench.measurement.outputs_check import probe

    workload = ADAPTERS.get("torch").prepare(make_config(framework="torch", model="tiny_bert", mode="training",
                                                         batch_size=2, threads=2))
    x = probe("tiny_bert", 2, 16)
    first, second = workload.logits(x), workload.logits(x)
    assert np.array_equal(first, second)  # BERT's dropout (0.1) would make two calls differ
    assert workload.module.training  # and the run still trains with it


# ONNX Runtime's dynamic path in the default tier; NNCF's and PT2E's (35 s more) in the full tier
@pytest.mark.parametrize("framework", ["onnxruntime", pytest.param("openvino", marks=pytest.mark.full),
                                       pytest.param("torch", marks=pytest.mark.full)])


def test_a_token_model_quantises_through_each_frameworks_own_tool_and_agrees_with_fp32(framework, tmp_path):
    from bench.adapters.int8 import TokenSets

    # a fresh process, as a user runs it: Inductor's int8 compile in a suite that imported TensorFlow can segfault
    proc = bench_cli("run", "--framework", framework, "--model", "tiny_bert", "--precision", "int8", "--batch-size",
                     "4", "--protocol", "seed", "--warmup", "1", "--iterations", "2", "--phase-iterations", "0",
                     "--threads", "2", results=tmp_path, env={"BENCH_INT8_CACHE": str(tmp_path / "int8")})
    [path] = tmp_path.rglob("records/*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "ok", (record.get("reason"), proc.stderr[-2000:])
    q = record["int8"]
    assert "token ids" in q["sets"]["source"] and q["sets"]["held_out"]["sequences"] == 32
    # ORT's dynamic quantisation calibrates nothing, and says so; the others calibrate on 32 sequences
    assert q["sets"]["calibration"] == ({"used": False, "why": "dynamic quantisation calibrates nothing"}
                                       if framework == "onnxruntime" else {"seed": 3301, "sequences": 32,
                                                                           "length": 16})
    assert q["agreement"]["images"] == 32 and q["agreement"]["agrees"], q["agreement"]
    assert not [f for f in record["flags"] if f["name"].startswith("int8")]
    if framework == "onnxruntime":  # ORT's advice for transformers: dynamic quantisation, no calibration
        assert "quantize_dynamic" in q["tool"] and "dynamic" in q["method"]
    sets = TokenSets.for_model("tiny_bert", 16)
    assert not np.array_equal(sets.calibration, sets.held_out) and sets.calibration.dtype == np.int64


def test_a_profile_leaves_a_token_models_refused_int8_out_with_the_reason(tmp_path):
    from bench.sweep.profiles import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("description: t\nframeworks: [tensorflow, onnxruntime]\nmodels: [tiny_bert]\n"
                    "modes: [inference]\nbatch_sizes: [2]\nprecisions: [int8]\ndevices: [cpu]\n")
    profile = load_profile(str(path))
    assert [(c.framework, c.precision) for c in profile.configs] == [("onnxruntime", "int8")]
    assert any("tensorflow" in n and "token model" in n for n in profile.not_applicable), profile.not_applicable


def test_an_int8_config_of_a_token_model_finds_its_fp32_baseline():
    import pandas as pd

    from bench.report.estimates.int8 import _fastest_fp32

    row = dict(platform="p", framework="onnxruntime", model="tiny_bert", mode="inference", batch_size=2,
               image_size=None, sequence_length=16, device="cpu", data="device")
    configs = pd.DataFrame([{**row, "precision": "fp32", "images_per_sec_median": 10.0},
                            {**row, "precision": "fp32", "sequence_length": 32, "images_per_sec_median": 20.0},
                            {**row, "precision": "int8", "images_per_sec_median": 15.0}])
    base = _fastest_fp32(configs, configs.iloc[2])
    assert base is not None and base["sequence_length"] == 16 and base["images_per_sec_median"] == 10.0


@pytest.mark.parametrize("training", [False, True])
def test_keras_bert_takes_the_dot_product_attention_path_in_inference_and_says_how_it_trains(training):
    from bench.adapters.keras_models import keras_attention
    from bench.models.transformers import attention_dropout

    dropout = attention_dropout("bert_base", training)
    said = keras_attention("jax", False, dropout)
    assert (dropout == 0.1) == training and attention_dropout("vit_b16", True) == 0.0
    assert ("dot_product_attention only without attention dropout" in said["evidence"]) == training


def test_the_engines_and_int8_tables_say_a_token_models_unit():
    """Their columns are headed in img/s: a BERT row's numbers say seq/s, and the section's text says why."""
    from bench.report.sections import engines, int8
    from bench.report.units import cell_in_unit, rows_note

    assert cell_in_unit("8.9", "bert_base") == "8.9 seq/s" and cell_in_unit("21.0", "resnet50") == "21.0"
    assert cell_in_unit("", "bert_base") == ""  # nothing measured: nothing to label
    assert "sequences/s" in rows_note(["resnet50", "bert_base"]) and rows_note(["resnet50", "vit_b16"]) == ""
    row = {"platform": "cpu", "model": "bert_base", "mode": "inference", "precision": "fp32", "batch_size": 8,
           "framework": "openvino", "best engine": "latency", "img/s": 8.87, "runner-up": "", "utilisation": 0.1,
           "engines": "latency 8.87, throughput 8.5"}
    assert engines._display(row)["img/s"] == "8.9 seq/s"
    row = {"platform": "cpu", "framework": "onnxruntime", "model": "bert_base", "batch": 8, "int8 img/s": 25.2,
           "int8 engine": "all", "fp32 img/s": 7.61, "fp32 engine (fastest)": "all", "speed-up": 3.31, "95% CI": "",
           "verdict": "winner", "SQNR dB": 38.0, "cosine (mean)": 0.9999, "top-1 agreement": 1.0, "fp32 classes": 2,
           "held-out images": 32, "calibration images": 0, "quantise s": 3.0, "flags": ""}
    shown = int8._display(row)
    assert shown["int8 img/s (engine)"] == "25.2 seq/s (all)" and shown["fastest fp32 img/s (engine)"] == \
        "7.6 seq/s (all)"
