"""GPU paths checked with fakes that behave as the real APIs do (issue 54), on a machine without a GPU: ONNX Runtime's
TF32 setting read back from its session, a failing search step in gpucheck, a machine without py-cpuinfo, and the
output check in the summary a user pastes."""

from __future__ import annotations

import builtins
import time

import pytest

from bench.adapters.onnxruntime import adapter as ORT
from bench.commands import gpucheck as G
from bench.host import devices


class FakeSession:
    """ONNX Runtime's InferenceSession as far as the adapter asks it: the CUDA provider enables TF32 unless told
    otherwise, and reports its options as strings."""

    DEFAULTS = {"device_id": "0", "use_tf32": "1", "cudnn_conv_algo_search": "EXHAUSTIVE"}

    def __init__(self, providers, honour: bool = True):
        (self.name, self.options), = providers
        self.honour = honour

    def get_providers(self):
        return [self.name, "CPUExecutionProvider"]

    def get_provider_options(self):
        given = {k: str(v) for k, v in self.options.items()} if self.honour else {}
        return {self.name: {**self.DEFAULTS, **given}}


def test_onnx_runtime_fp32_on_a_gpu_asks_for_tf32_off_and_reads_it_back():
    options = ORT.provider_options("cuda:1", "fp32")
    assert options == {"device_id": "1", "use_tf32": "0"}
    session = FakeSession([("CUDAExecutionProvider", options)])
    assert ORT.checked_tf32(session, "CUDAExecutionProvider", options) == "0"
    # a provider that ignores the option (an older build) computes fp32 in TF32: refused, not timed as fp32
    with pytest.raises(RuntimeError, match="use_tf32=1"):
        ORT.checked_tf32(FakeSession([("CUDAExecutionProvider", options)], honour=False), "CUDAExecutionProvider",
                         options)
    assert ORT.provider_options("cpu", "fp32") == {}
    assert ORT.checked_tf32(FakeSession([("CPUExecutionProvider", {})]), "CPUExecutionProvider", {}) is None


def test_a_failing_search_step_is_an_outcome_and_the_check_goes_on(monkeypatch, tmp_path):
    def failing_peak(*args, **kwargs):
        raise RuntimeError("'python -m bench peak' failed: ModuleNotFoundError: No module named 'torchvision'")

    monkeypatch.setattr(G.maxbatch, "host_facts", failing_peak)
    step = G.Step("largest batch", ["maxbatch", "--framework", "torch", "--model", "tiny_cnn", "--mode", "inference",
                                    "--device", "cpu", "--image-size", "32", "--max-batch", "8"])
    G.execute(step, time.monotonic() + 600, tmp_path, tiny=True)
    assert step.outcome.startswith("failed: RuntimeError") and "torchvision" in step.outcome


def test_the_manifest_reads_the_cpu_without_py_cpuinfo(monkeypatch):
    real_import = builtins.__import__

    def no_cpuinfo(name, *args, **kwargs):
        if name == "cpuinfo":
            raise ImportError("No module named 'cpuinfo'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delenv(devices.CPU_INFO_ENV, raising=False)
    monkeypatch.setattr(builtins, "__import__", no_cpuinfo)
    devices.cpu_info.cache_clear()  # read once per process: another test may have read it already
    try:
        info = devices.cpu_info()
    finally:
        devices.cpu_info.cache_clear()
    assert info["source"].startswith("/proc/cpuinfo") and info["brand_raw"] and isinstance(info["flags"], list)
    assert devices.cpu_brand() == info["brand_raw"]


def test_the_pasted_summary_says_the_output_check():
    record = {"status": "ok", "summary": {"images_per_sec_median": 812.0, "n": 20}, "utilisation": 0.41,
              "energy": {"available": False, "reason": "no NVML"},
              "settings": {"outputs_check": {"passed": False, "relative_diff": 0.09, "tolerance": 0.05}}}
    line = G.summary(record)
    assert "output check FAILED (outputs_disagree)" in line and "9.0e-02" in line
    record["settings"]["outputs_check"] = {"passed": True, "relative_diff": 3e-7, "tolerance": 1e-4}
    assert "output check passed" in G.summary(record)
    record["settings"] = {}
    assert "output check" not in G.summary(record)
