"""Precision int8 (issue 33): the agreement metrics, a tiny model quantised by each framework's own tool with its
agreement with fp32 computed and recorded, a broken calibration caught, and int8 refused where there is no path."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest

from bench.adapters import ADAPTERS
from bench.adapters.int8 import ImageSets, cached_build, full_batches, normalise
from bench.cli import main
from bench.config import make_config
from bench.errors import ConfigError
from bench.host.manifest import reduced_precision_features
from bench.measurement.agreement import SQNR_MIN_DB, agreement, attach, judged
from bench.measurement.flags import RULE, run_flags
from bench.measurement.fresh_process import bench_environ
from bench.report.estimates import int8_table
from bench.stats.judge import Judge
from tests.conftest import TINY_RUN, bench_cli

SIZE = 32


@pytest.fixture
def sets(tmp_path, monkeypatch) -> ImageSets:
    """A small calibration and held-out set at 32x32, drawn into this test's own caches."""
    monkeypatch.setenv("BENCH_IMAGE_CACHE", str(tmp_path / "images"))
    monkeypatch.setenv("BENCH_INT8_CACHE", str(tmp_path / "int8"))
    return ImageSets.for_size(SIZE, 8, 8)


def test_agreement_metrics():
    rng = np.random.default_rng(0)
    fp32 = rng.standard_normal((16, 10))
    same = agreement(fp32, fp32)
    assert same.cosine_mean == pytest.approx(1.0) and same.sqnr_db == 999.0 and same.top1_agreement == 1.0
    assert same.fp32_distinct_classes == len(np.unique(fp32.argmax(axis=1)))
    # noise at 1/100 of the signal's power is 20 dB
    noisy = agreement(fp32, fp32 + rng.standard_normal(fp32.shape) * np.sqrt((fp32 ** 2).mean() / 100))
    assert noisy.sqnr_db == pytest.approx(20.0, abs=1.5)
    far = agreement(fp32, rng.standard_normal((16, 10)))
    assert far.failures and not same.failures
    with pytest.raises(ValueError):
        agreement(fp32, fp32[:, :5])


def test_sets_are_disjoint_normalised_and_batched(sets):
    assert sets.calibration.shape == (8, SIZE, SIZE, 3) and sets.calibration.dtype == np.uint8
    assert not np.array_equal(sets.calibration, sets.held_out)  # two seeds: calibration never measured
    x = normalise(sets.calibration)
    assert x.shape == (8, 3, SIZE, SIZE) and x.dtype == np.float32 and abs(float(x.mean())) < 2
    assert [len(b) for b in full_batches(x, 3)] == [3, 3, 3]
    assert sets.describe()["calibration"]["images"] == 8


def test_cached_build_reuses_and_keys_on_inputs(tmp_path):
    built = []

    def build(folder):
        built.append(folder)
        (folder / "model").write_text("m")

    first, hit1 = cached_build({"a": 1}, build, tmp_path)
    again, hit2 = cached_build({"a": 1}, build, tmp_path)
    other, _ = cached_build({"a": 2}, build, tmp_path)
    assert (hit1, hit2) == (False, True) and first == again != other and len(built) == 2


def test_int8_refused_without_a_path_before_any_work(capsys):
    assert main(["run", "--framework", "jax", "--model", "tiny_cnn", "--precision", "int8"]) == 2
    err = capsys.readouterr().err
    assert "jax has no int8 path" in err and "valid precisions for jax: fp32, tf32, bf16" in err
    with pytest.raises(ConfigError, match="valid modes at int8: inference"):
        make_config(framework="onnxruntime", model="tiny_cnn", mode="training", precision="int8")
    with pytest.raises(ConfigError, match="valid choices: compile"):
        make_config(framework="torch", model="tiny_cnn", precision="int8", engine="eager")
    # the default engine at int8 is the framework's int8 engine
    assert make_config(framework="torch", model="tiny_cnn", precision="int8").engine == "compile"
    assert make_config(framework="tensorflow", model="tiny_cnn", precision="int8").engine == "tflite"
    # MXNet's int8 (contrib.quantization) is its quantised symbolic graph: hybrid only
    assert make_config(framework="mxnet", model="tiny_cnn", precision="int8").engine == "hybrid"
    with pytest.raises(ConfigError, match="valid choices: hybrid"):
        make_config(framework="mxnet", model="tiny_cnn", precision="int8", engine="imperative")
    assert "int8" in ADAPTERS.get("jax").not_applicable("inference", "int8", "cpu")


def test_cpu_features_named():
    assert reduced_precision_features(["avx2", "avx512_vnni"]) == {
        "avx512_vnni": True, "avx_vnni": False, "amx_int8": False, "avx512_bf16": False, "amx_bf16": False}


def _ort_quantised(sets, calibration=None, weights_seed=0):
    import onnxruntime as ort

    from bench.adapters.onnx_export import export_onnx
    from bench.adapters.onnxruntime import quantize

    exported = export_onnx("tiny_cnn", 4, SIZE, weights_seed, 2)
    if calibration is not None:
        sets = ImageSets(calibration, sets.held_out, calibration_seed=-1)
    _, q = quantize.quantise(exported.path, {"model": "tiny_cnn", "seed": 0, "input_size": SIZE}, 4,
                             lambda p: ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]), sets)
    return q


def test_a_cached_quantisation_of_other_weights_is_never_served(sets):
    """The cache's key holds the fp32 model file's fingerprint: the same model name, seed and calibration with other
    weights (here tiny_cnn's torch initialisation under another seed, exported under the same name) quantise anew.
    Until 2026-11-28 a quantisation made before a model's weights changed was served for the new weights."""
    first = _ort_quantised(sets)
    assert first.details["cached"] is False and _ort_quantised(sets).details["cached"] is True
    other = _ort_quantised(sets, weights_seed=1)
    assert other.details["cached"] is False
    assert not np.allclose(other.fp32_logits, first.fp32_logits)  # other weights indeed


def test_onnxruntime_int8_agrees_and_a_constant_calibration_is_caught(sets):
    good = _ort_quantised(sets)
    settings = {"int8": good.describe()}
    attach(settings, good.fp32_logits, good.int8_logits)
    found = settings["int8"]["agreement"]
    assert found["agrees"] and found["sqnr_db"] >= SQNR_MIN_DB and found["images"] == 8
    assert settings["int8"]["sets"]["calibration"] == {"seed": 3301, "images": 8}
    assert settings["int8"]["settings"]["format"] == "QDQ" and not judged(settings["int8"])
    # every calibration image the same grey: the activation ranges miss what the held-out images reach
    broken = _ort_quantised(sets, np.full_like(sets.calibration, 128))
    bad = {"int8": broken.describe()}
    attach(bad, broken.fp32_logits, broken.int8_logits)
    assert not bad["int8"]["agreement"]["agrees"] and judged(bad["int8"])


MXNET_QUANTISE = """
import json, os, sys
os.environ["OMP_NUM_THREADS"] = "2"
import mxnet as mx
import numpy as np
from bench.adapters.mxnet.models import build_gluon_model
from bench.adapters.mxnet.quantize import quantise
from bench.adapters.int8 import ImageSets
sets = ImageSets.for_size({size}, 8, 8)
out = {{}}
for name, calibration in (("good", sets.calibration), ("constant", np.full_like(sets.calibration, 128))):
    mx.random.seed(0)
    net = build_gluon_model("tiny_cnn")
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    _, q = quantise(mx, net, 4, {size}, mx.cpu(), ImageSets(calibration, sets.held_out))
    np.savez(sys.argv[1] + name, fp32=q.fp32_logits, int8=q.int8_logits)
    out[name] = q.describe()
print(json.dumps(out))
"""


@pytest.mark.full  # 12 s (a process in MXNet's own environment): the full tier keeps `make test` within 10 minutes
@pytest.mark.skipif(ADAPTERS.get("mxnet").interpreter() is None, reason="MXNet's environment is not built")
def test_mxnet_int8_agrees_and_a_constant_calibration_is_caught(sets, tmp_path):
    """In MXNet's own environment (its numpy pin): quantize_net_v2 of the tiny model, then a grey calibration."""
    proc = subprocess.run([str(ADAPTERS.get("mxnet").interpreter()), "-c", MXNET_QUANTISE.format(size=SIZE),
                           str(tmp_path / "logits-")], capture_output=True, text=True, env=bench_environ())
    assert proc.returncode == 0, proc.stderr[-2000:]
    described = json.loads(proc.stdout.strip().splitlines()[-1])
    verdicts = {}
    for name, found in described.items():
        logits = np.load(tmp_path / f"logits-{name}.npz")
        settings = {"int8": found}
        attach(settings, logits["fp32"], logits["int8"])
        verdicts[name] = settings["int8"]
    good, bad = verdicts["good"], verdicts["constant"]
    assert good["agreement"]["agrees"] and good["agreement"]["images"] == 8 and not judged(good)
    assert good["sets"]["calibration"] == {"seed": 3301, "images": 8} and good["settings"]["calib_mode"] == "naive"
    assert good["graph"]["int8_subgraphs"] == good["graph"]["subgraphs"] == 3  # both convolutions and the dense
    assert not bad["agreement"]["agrees"] and judged(bad)


@pytest.mark.full
@pytest.mark.skipif(ADAPTERS.get("mxnet").interpreter() is None, reason="MXNet's environment is not built")
def test_tiny_mxnet_int8_run_records_its_agreement(shared_results):
    """Through the CLI, which runs MXNet in its own environment: the record carries the agreement."""
    proc = bench_cli("run", "--framework", "mxnet", "--precision", "int8", *TINY_RUN, results=shared_results)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(open(proc.stdout.strip().splitlines()[-1].removeprefix("record: ")).read())
    assert r["status"] == "ok", r["reason"]
    found = r["int8"]
    assert found["agreement"]["images"] > 0 and found["quantise_s"] > 0 and found["sets"]["calibration"]["images"]
    assert r["config"]["engine"] == "hybrid" and r["utilisation"] is None and r["peak"] is None


def _record(precision: str, agreement_json: dict | None):
    from bench.results.record import Record

    record = Record.new(make_config(framework="onnxruntime", model="tiny_cnn", precision=precision), 0, 0, None)
    record.keep_settings({"int8": {"tool": "t", "agreement": agreement_json}} if precision == "int8" else {})
    return record


def test_a_disagreeing_int8_run_is_flagged_and_never_sound():
    fp32 = np.eye(4)
    ok = agreement(fp32, fp32).to_json()
    bad = agreement(fp32, np.ones((4, 4))).to_json()
    assert not [f for f in run_flags(_record("int8", ok)) if f.name == "int8_disagrees"]
    flagged = [f for f in run_flags(_record("int8", bad)) if f.name == "int8_disagrees"]
    assert flagged and "SQNR" in flagged[0].reason
    assert [f.name for f in run_flags(_record("int8", None))].count("int8_disagrees") == 1  # none measured
    assert RULE["int8_disagrees"].scope == "throughput" and RULE["int8_disagrees"].why_no_winner


def test_int8_table_sets_int8_beside_the_fastest_fp32_engine():
    def row(engine, precision, ips, **extra):
        return {"platform": "cpu [h]", "framework": "onnxruntime", "model": "resnet50", "mode": "inference",
                "batch_size": 16, "image_size": 224, "device": "cpu", "data": "device", "engine": engine,
                "precision": precision, "series": f"onnxruntime/{engine} {precision}", "images_per_sec_median": ips,
                "process_ips": [ips * 0.99, ips * 1.01, ips], "process_sweeps": ["s"] * 3, "spread_var": 1e-4,
                "spread_df": 10.0, "spread_pooled": True, "sound": True, "flag_list": [], "flags": "",
                "cpu_precision_features": "avx512_vnni", **extra}

    configs = pd.DataFrame([row("all", "fp32", 20.0), row("basic", "fp32", 15.0),
                            row("all", "int8", 40.0, int8_sqnr_db=30.0, int8_cosine_mean=0.999)])
    table = int8_table(configs, Judge())
    assert len(table) == 1
    r = table.iloc[0]
    assert r["fp32 engine (fastest)"] == "all" and r["speed-up"] == pytest.approx(2.0, rel=0.01)
    assert r["verdict"].startswith("winner") and r["SQNR dB"] == 30.0 and r["CPU int8/bf16 features"] == "avx512_vnni"
    assert int8_table(configs[configs["precision"] == "fp32"], Judge()).empty


@pytest.mark.full
@pytest.mark.parametrize("framework", ["openvino", "torch", "tensorflow", "onnxruntime"])
def test_tiny_model_int8_run_records_its_agreement(framework, sets, tmp_path):
    from bench.runs.single import measure_run

    config = make_config(framework=framework, model="tiny_cnn", precision="int8", batch_size=4, image_size=SIZE,
                         protocol="seed", warmup=1, iterations=2, phase_iterations=0, threads=2)
    record = measure_run(config, tmp_path)
    assert record.status == "ok", record.reason
    found = record.int8
    assert found["agreement"]["images"] > 0 and found["quantise_s"] > 0 and found["sets"]["calibration"]["images"]
    assert record.utilisation is None and record.peak is None  # int8: a speed-up, no GEMM peak
    row = record.to_row()
    assert row["int8_sqnr_db"] == found["agreement"]["sqnr_db"] and row["cpu_precision_features"]


def test_a_disagreeing_process_is_not_disturbed_but_its_config_keeps_the_flag():
    from bench.measurement.flags import flag
    from bench.report.estimates.processes import throughput_flags

    assert not throughput_flags([flag("int8_disagrees", "SQNR 3 dB < 20 dB")])  # no retry or process clears it
    assert throughput_flags([flag("disturbed", "busy")])


def test_bf16_and_int8_results_show_the_cpus_features_and_fp32_alone_does_not():
    from bench.report.sections.base import precision_features

    def row(precision, device="cpu", platform="cpu [h]"):
        return {"platform": platform, "precision": precision, "device": device,
                "cpu_precision_features": "avx512_bf16, avx512_vnni"}

    bf16 = precision_features(pd.DataFrame([row("fp32"), row("bf16")]))
    assert "bf16 results" in bf16.markdown and "cpu [h]: `avx512_bf16, avx512_vnni`" in bf16.markdown
    assert "int8/bf16" in precision_features(pd.DataFrame([row("int8"), row("bf16")])).markdown
    assert precision_features(pd.DataFrame([row("fp32")])) is None
    assert precision_features(pd.DataFrame([row("bf16", "cuda:0", "gpu [h]")])) is None  # a GPU's bf16: not these
