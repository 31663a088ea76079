"""Real tiny-model runs through the CLI for each framework x mode on this machine's CPU."""

import json

import pytest

from bench.adapters import ADAPTERS
from bench.config import make_config
from bench.errors import UnsupportedError
from bench.host.devices import gpus
from bench.measurement.certificate import parity_table
from bench.results.store import load_records, runs_frame
from bench.runs.single import execute
from tests.conftest import TINY_RUN, assert_utilisation_sane, bench_cli

MXNET_BUILT = ADAPTERS.get("mxnet").interpreter() is not None

# MXNet when its own environment is built (tests/adapters/test_mxnet.py says so when it is not)
FRAMEWORK_MODES = [(f, m) for f in ("torch", "tensorflow", "jax") + ("mxnet",) * MXNET_BUILT
                   for m in ("inference", "training")] + [("onnxruntime", "inference"), ("openvino", "inference")]

# One run fed from host memory (a fresh batch every step) where the test process cannot build the workload itself
# (JAX needs KERAS_BACKEND=jax); the other frameworks' host mode: tests/adapters/test_engines.py
HOST_FED = {("jax", "inference"): "host"}


@pytest.fixture(scope="module")
def tiny_records(shared_results):
    out = {}
    for fw, mode in FRAMEWORK_MODES:
        data = ("--data", HOST_FED[fw, mode]) if (fw, mode) in HOST_FED else ()
        proc = bench_cli("run", "--framework", fw, "--mode", mode, *data, *TINY_RUN, results=shared_results)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "img/s" in proc.stdout
        path = proc.stdout.strip().splitlines()[-1].removeprefix("record: ")
        out[fw, mode] = json.loads(open(path).read())
    return out


@pytest.mark.parametrize("fw,mode", FRAMEWORK_MODES)
def test_tiny_run_writes_valid_ok_record(tiny_records, fw, mode):
    r = tiny_records[fw, mode]
    assert r["status"] == "ok" and r["reason"] is None
    assert len(r["samples"]["warmup_s"]) == 2 and len(r["samples"]["timed_s"]) == 5
    s = r["summary"]
    assert s["images_per_sec_ci_low"] <= s["images_per_sec_median"] <= s["images_per_sec_ci_high"]
    assert r["manifest"]["framework"]["version"]
    assert_utilisation_sane(r)
    assert r["schema_version"] == 5 and (r["repeat"], r["attempt"], r["sweep"]) == (0, 0, None)
    i = r["interference"]
    assert {"other_cpu_share", "steal_share", "loadavg_1m_start", "own_cpu_s", "judged", "iteration_cv"} <= set(i)
    assert isinstance(r["flags"], list) and "cv" in r["summary"]
    f = r["fairness"]
    assert f["threads_match"] is True and f["threads_effective"] == r["config"]["threads"]
    expected_phases = {"forward"} if mode == "inference" else {"forward", "backward", "update"}
    assert set(r["phases"]["median_ms"]) == expected_phases
    if mode == "inference":
        assert f["no_autograd_in_inference"] is True
    else:
        assert "SGD" in f["optimizer"] and f["loss"]
        assert f["recipe_match"] is True and f["weights_changed"] is True
        assert f["weights_checksum_before"] != f["weights_checksum_after"]
    assert f["data_placement_match"] is True and f["data_placement"] == r["config"]["data"]
    assert f["data_placement_observed"] == {"location": "cpu", "fresh_per_step": (fw, mode) in HOST_FED}
    assert f["failed"] == [] and not any(fl["name"] == "certificate_failed" for fl in r["flags"])
    assert r["startup"]["prepare_s"] > 0 and r["startup"]["first_iteration_s"] > 0
    # where the process's seconds went: every part timed, none longer than the run (phases: repeat 0)
    parts = ("warmup_s", "timed_s", "phases_s", "checks_s", "manifest_s")
    assert r["startup"]["process_start_s"] > 0 and all(r["startup"][k] > 0 for k in parts)
    assert sum(r["startup"][k] for k in ("prepare_s", *parts)) <= r["duration_s"]


def test_same_optimizer_and_parameter_count_across_frameworks(tiny_records, shared_results):
    training = [tiny_records[fw, m] for fw, m in FRAMEWORK_MODES if m == "training"]
    assert len({t["fairness"]["optimizer"] for t in training}) == 1
    table = parity_table(runs_frame(load_records(shared_results)))
    row = table[table["model"] == "tiny_cnn"].iloc[0]
    assert row["frameworks"] == ", ".join(sorted({fw for fw, _ in FRAMEWORK_MODES})) and bool(row["parity"])
    assert row["min_params"] == row["max_params"]


@pytest.mark.full  # builds every catalogue model at full size in both families (26 s); tiny ones: test_transformers
def test_all_catalogue_models_have_the_same_parameter_count_in_both_frameworks():
    import numpy as np

    from bench.adapters.keras_models import build_keras_model
    from bench.adapters.torch.models import build_torch_model
    from bench.models import get_model, list_models

    for name in list_models():
        torch_params = sum(p.numel() for p in build_torch_model(name).parameters())
        spec = get_model(name)
        keras_model = build_keras_model(name, spec.default_input_size)
        keras_params = int(sum(np.prod(v.shape) for v in keras_model.trainable_weights))
        assert keras_params == torch_params, name


def test_null_adapter_measures_harness_overhead(shared_results):
    proc = bench_cli("run", "--framework", "null", "--model", "tiny_cnn", "--protocol", "seed",
                     results=shared_results)
    assert proc.returncode == 0, proc.stderr
    r = [x for x in load_records(shared_results) if x["config"]["framework"] == "null"][0]
    assert r["status"] == "ok" and r["utilisation"] is None
    assert max(r["samples"]["timed_s"]) < 0.01  # an empty step is not slow (a sanity bound, not a speed test)


def test_fp16_on_this_cpu_becomes_a_skipped_record(tmp_path):
    from bench.host.manifest import cpu_flags

    if {"avx512_fp16", "amx_fp16"} & set(cpu_flags()):
        pytest.skip("this CPU has native fp16")
    proc = bench_cli("run", "--framework", "torch", "--precision", "fp16", *TINY_RUN, results=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "skipped: torch: fp16 on this CPU would be emulated" in proc.stderr
    [r] = load_records(tmp_path)
    assert r["status"] == "skipped" and r["summary"] is None


def test_runtime_failures_become_records_with_one_sentence_reasons(tmp_path, monkeypatch):
    from bench.adapters import ADAPTERS

    adapter = ADAPTERS.get("null")
    config = make_config(framework="null", model="tiny_cnn", batch_size=4096)

    for exc, expected_status, expected in [
        (MemoryError(), "error", "out of memory at batch size 4096 on cpu"),
        (RuntimeError("CUDA out of memory. Tried to allocate 2 GiB\nmore detail"), "error", "out of memory"),
        (ValueError("shapes do not match\nlong details"), "error", "ValueError: shapes do not match"),
        (UnsupportedError("no bf16 here"), "skipped", "no bf16 here"),
        (ImportError("No module named 'tensorflow'"), "error", "ImportError: No module named 'tensorflow'"),
    ]:
        def boom(_config, exc=exc):
            raise exc
        monkeypatch.setattr(adapter, "prepare", boom)
        r = execute(config, tmp_path)
        assert r["status"] == expected_status and expected in r["reason"]
        assert "\n" not in r["reason"]


def test_missing_framework_is_a_skipped_record(tmp_path, monkeypatch):
    from bench.adapters import ADAPTERS

    adapter = ADAPTERS.get("tensorflow")
    monkeypatch.setattr(type(adapter), "module", "tensorflow_that_is_not_installed")
    r = execute(make_config(framework="tensorflow", model="tiny_cnn"), tmp_path)
    assert r["status"] == "skipped" and "not installed" in r["reason"]


@pytest.mark.skipif(not gpus(), reason="no GPU on this machine")
@pytest.mark.parametrize("fw", ["torch", "tensorflow"])
def test_gpu_run(shared_results, fw):
    proc = bench_cli("run", "--framework", fw, "--device", "cuda", "--precision", "bf16", *TINY_RUN,
                     results=shared_results)
    assert proc.returncode == 0, proc.stderr
    r = [x for x in load_records(shared_results)
         if x["config"]["device"] == "cuda:0" and x["config"]["framework"] == fw][-1]
    from bench.adapters import ADAPTERS

    # skipped only where this framework's build says before any work that it cannot reach the GPU (tensorflow-cpu)
    refused = ADAPTERS.get(fw).cannot_run("inference", "bf16", "cuda:0")
    assert (r["status"], r["reason"] if refused else None) == (("skipped", refused) if refused else ("ok", None))
    if r["status"] == "ok":
        assert "allocator" in r["memory"]["kind"]
