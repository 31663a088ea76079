"""Every framework's engines on the CPU, ONNX Runtime / OpenVINO agreement with PyTorch, what a framework
cannot run declared up front, and the fairness certificate catching each violation."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.adapters.onnx_export import input_batch, seeded_torch_model
from bench.config import make_config
from bench.measurement.certificate import placement_matches, run_checks
from bench.measurement.flags import certificate_flags
from bench.runs.single import execute
from bench.sweep.profiles import load_profile
from tests.conftest import TINY_RUN, bench_cli

# The default engine of each framework is run by test_runs.py; here every other engine.
# (an engine for one mode only, such as TensorFlow's inference-only tflite, in that mode)
# JAX's engines differ only in an XLA compile option (checked fast in tests/adapters/test_jax_engines.py): its
# whole runs, ~10 s each, are in the full tier; so are the compilers' (torch.compile 15-46 s, TensorFlow's XLA ~10 s a
# mode)
# and the other 8-15 s ones (TensorFlow eager and TFLite, MXNet imperative, ONNX Runtime's extended graph
# optimisations), to keep `make test` within 10 minutes on 2 cores.
SLOW_ENGINES = {("jax", None), ("torch", "compile"), ("tensorflow", "xla"), ("tensorflow", "eager"),
                ("tensorflow", "tflite"), ("mxnet", "imperative"), ("onnxruntime", "extended")}
OTHER_ENGINES = [pytest.param(fw, e, m, marks=[pytest.mark.full] if {(fw, None), (fw, e)} & SLOW_ENGINES else [])
                 for fw in ADAPTERS.names() if ADAPTERS.get(fw).measures_a_framework
                 for m in ADAPTERS.get(fw).modes for e in ADAPTERS.get(fw).engines_for(m, "fp32")
                 if e != ADAPTERS.get(fw).engines[0]]


@pytest.mark.parametrize("fw,engine,mode", OTHER_ENGINES)
def test_every_engine_gives_a_valid_record_or_a_reason(fw, engine, mode, shared_results):
    proc = bench_cli("run", "--framework", fw, "--engine", engine, "--mode", mode, *TINY_RUN, results=shared_results)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(open(proc.stdout.strip().splitlines()[-1].removeprefix("record: ")).read())
    assert r["config"]["engine"] == engine
    assert r["status"] == "ok" or (r["status"] == "skipped" and r["reason"]), r["reason"]
    if r["status"] == "ok":
        assert r["fairness"]["failed"] == [] and r["summary"]["images_per_sec_median"] > 0


@pytest.mark.parametrize("fw", ["onnxruntime", "openvino"])
def test_exported_engines_agree_with_pytorch(fw):
    """The same seeded weights and batch: logits within a stated tolerance of PyTorch's."""
    config = make_config(framework=fw, model="resnet18", batch_size=2, image_size=64, threads=2)
    workload = ADAPTERS.get(fw).prepare(config)
    import torch

    with torch.inference_mode():
        x = torch.from_numpy(input_batch("resnet18", 2, 64, config.seed))
        ref = seeded_torch_model("resnet18", config.seed, 2)(x).numpy()
    out = workload.logits(input_batch("resnet18", 2, 64, config.seed))
    assert out.shape == ref.shape == (2, 1000)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-4)
    assert workload.params == 11_689_512


def test_inference_only_runtimes_expand_training_away(tmp_path):
    (tmp_path / "p.yaml").write_text("frameworks: [torch, onnxruntime, openvino]\nmodels: [tiny_cnn]\n"
                                     "modes: [inference, training]\nbatch_sizes: [4]\nprecisions: [fp32, fp16]\n")
    profile = load_profile(str(tmp_path / "p.yaml"))
    assert {(c.framework, c.mode) for c in profile.configs} >= {("onnxruntime", "inference"), ("torch", "training")}
    assert not [c for c in profile.configs if c.framework in ("onnxruntime", "openvino") and c.mode == "training"]
    left = "\n".join(profile.not_applicable)
    assert "onnxruntime training fp32 cpu: onnxruntime has no training (it runs inference)" in left
    assert "openvino inference fp16 cpu: openvino does not run fp16" in left


def test_a_direct_run_of_what_a_framework_cannot_do_is_a_skipped_record(tmp_path):
    r = execute(make_config(framework="onnxruntime", model="tiny_cnn", mode="training", batch_size=2), tmp_path)
    assert r["status"] == "skipped" and "onnxruntime has no training" in r["reason"]


def test_a_training_step_that_updates_nothing_is_caught(tmp_path, monkeypatch):
    from bench.adapters.torch.adapter import TorchWorkload

    monkeypatch.setattr(TorchWorkload, "_update", lambda self: None)  # gradients computed, never applied
    config = make_config(framework="torch", model="tiny_cnn", mode="training", batch_size=2, image_size=32,
                         protocol="seed", warmup=1, iterations=3, phase_iterations=0)
    r = execute(config, tmp_path)
    assert r["status"] == "ok" and r["fairness"]["weights_changed"] is False
    assert "weights_unchanged" in [f["name"] for f in r["flags"]]


# Frameworks this test process can import beside each other (JAX needs KERAS_BACKEND=jax, MXNet its own
# environment: both are observed through the CLI in test_runs.py)
IN_PROCESS = ["torch", "tensorflow", "onnxruntime", "openvino"]


# TensorFlow's (16 s: a graph built per placement) is in the full tier, to keep `make test` within 10 minutes
@pytest.mark.parametrize("data", ["device", "host"])
@pytest.mark.parametrize("fw", [pytest.param(f, marks=[pytest.mark.full] if f == "tensorflow" else [])
                                for f in IN_PROCESS])


def test_data_placement_is_observed_on_the_framework_batch(fw, data, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")  # what importing TensorFlow's adapter sets: not for later CLIs
    config = make_config(framework=fw, model="tiny_cnn", batch_size=2, image_size=32, threads=2, data=data)
    observed = ADAPTERS.get(fw).prepare(config).input_placement()
    assert observed == {"location": "cpu", "fresh_per_step": data == "host"}
    assert run_checks(config, {"intra_op_threads": 2}, None, placement=observed)["data_placement_match"] is True


def test_a_device_resident_run_that_copies_the_batch_every_step_is_caught(tmp_path, monkeypatch):
    from bench.adapters.torch.adapter import TorchWorkload

    monkeypatch.setattr(TorchWorkload, "_input", lambda self: self.x.clone())  # says device, copies each step
    config = make_config(framework="torch", model="tiny_cnn", batch_size=2, image_size=32,
                         protocol="seed", warmup=1, iterations=3, phase_iterations=0)
    r = execute(config, tmp_path)
    assert r["status"] == "ok" and r["fairness"]["data_placement_match"] is False
    assert r["fairness"]["failed"] == ["data_placement_match"]
    assert "certificate_failed" in [f["name"] for f in r["flags"]]


def test_a_batch_left_in_host_memory_for_a_gpu_run_is_caught():
    config = make_config(framework="torch", model="tiny_cnn", batch_size=2)
    gpu_run = SimpleNamespace(data="device", device="cuda:0")  # the check alone: no GPU needed
    assert placement_matches(gpu_run, {"location": "cpu", "fresh_per_step": False}) is False
    assert placement_matches(gpu_run, {"location": "gpu", "fresh_per_step": False}) is True
    assert placement_matches(config, None) is None  # not observed (an old record): not applicable


@pytest.mark.parametrize("settings,check", [
    ({"intra_op_threads": 1}, "threads_match"),  # asked for 2 threads, ran on 1
    ({"intra_op_threads": 2, "autograd_in_inference": True}, "no_autograd_in_inference"),
])


def test_each_inference_check_fails_when_violated(settings, check):
    config = make_config(framework="torch", model="resnet18", threads=2)
    fairness = run_checks(config, settings, 11_689_512)
    assert fairness[check] is False and fairness["failed"] == [check]
    assert [f["name"] for f in certificate_flags(fairness)] == ["certificate_failed"]


@pytest.mark.parametrize("settings,params,check", [
    ({"optimizer": "Adam(lr=0.001)", "loss": "CrossEntropyLoss"}, 25_557_032, "recipe_match"),
    ({"optimizer": None, "loss": "MSELoss"}, 25_557_032, "recipe_match"),
    (None, 24_000_000, "params_match_published"),  # a different model than the published ResNet-50 (25.56 M)
])


def test_each_training_check_fails_when_violated(settings, params, check):
    from bench.adapters.base import OPTIMIZER

    config = make_config(framework="torch", model="resnet50", mode="training", threads=2)
    settings = settings or {"optimizer": OPTIMIZER, "loss": "CrossEntropyLoss"}
    fairness = run_checks(config, {"intra_op_threads": 2, **settings}, params, weights=(1.0, 2.0))
    assert fairness["failed"] == [check]


def test_every_framework_has_its_own_hand_loop():
    """The fidelity check compares each framework's harness with a loop written in that framework."""
    for fw in ADAPTERS.names():
        adapter = ADAPTERS.get(fw)
        if adapter.measures_a_framework:
            assert adapter.has_hand_loop and "hand_loop" in type(adapter).__dict__, fw


@pytest.mark.parametrize(("framework", "key"), [("onnxruntime", "intra_op_spinning"), ("openvino", "cpu_pinning")])
def test_the_runtimes_thread_placement_is_read_back_into_the_settings(framework, key):
    settings = ADAPTERS.get(framework).prepare(
        make_config(framework=framework, model="tiny_cnn", batch_size=2, image_size=32, threads=2)).settings
    assert settings[key] in (True, False), settings
