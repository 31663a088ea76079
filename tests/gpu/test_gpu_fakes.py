"""GPU paths checked with fakes that behave as the real APIs do (issue 54), on a machine without a GPU: ONNX Runtime's
TF32 setting read back from its session, a failing search step in gpucheck, a machine without py-cpuinfo, and the
output check in the summary a user pastes."""

from __future__ import annotations

import builtins
import os
import sys
import time
import types

import pytest

from bench.adapters.onnxruntime import adapter as ORT
from bench.commands import gpucheck as G
from bench.host import devices, energy
from tests.conftest import ROOT


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
              "outputs_check": {"passed": False, "relative_diff": 0.09, "tolerance": 0.05}}
    line = G.summary(record)
    assert "output check FAILED (outputs_disagree)" in line and "9.0e-02" in line
    record["outputs_check"] = {"passed": True, "relative_diff": 3e-7, "tolerance": 1e-4}
    assert "output check passed" in G.summary(record)
    del record["outputs_check"]
    assert "output check" not in G.summary(record)


SMI = ("0, NVIDIA A100-SXM4-80GB, 580.1, 81920 MiB, GPU-aaaa\n"
       "1, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-bbbb\n"
       "2, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-cccc\n"
       "3, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-dddd\n")


class FakeOrt:
    """onnxruntime-gpu in a process without torch: its CUDA provider library has no RUNPATH, so it loads only after
    preload_dlls() (or torch) loaded CUDA and cuDNN; otherwise the session quietly runs on the CPU."""

    def __init__(self, has_preload: bool = True) -> None:
        self.loaded = False
        if has_preload:
            self.preload_dlls = self._preload

    def _preload(self) -> None:
        self.loaded = True

    def InferenceSession(self, path, so, providers):  # noqa: N802 (onnxruntime's name)
        wanted = providers[0][0]
        runs_on = wanted if wanted == "CPUExecutionProvider" or self.loaded else "CPUExecutionProvider"
        return types.SimpleNamespace(get_providers=lambda: [runs_on, "CPUExecutionProvider"][:1 + (runs_on != wanted)])


def _smi(monkeypatch, visible: str | None, order: str = "PCI_BUS_ID", migs: str = "") -> None:
    monkeypatch.setattr(devices, "_planned", [])
    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, visible, order, migs))


class CoarseNvml:
    """pynvml whose energy counter follows a clock at `watts`, updated only every `tick_s` (NVML's counter is
    coarse): a reading between updates repeats the last."""

    class NVMLError(Exception):
        pass

    def __init__(self, clock, watts: float, tick_s: float = 0.1) -> None:
        self.clock, self.watts, self.tick_s = clock, watts, tick_s

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        ticks = int(self.clock[0] / self.tick_s)
        return int(ticks * self.tick_s * self.watts * 1000)  # millijoules


def test_onnxruntime_gpu_is_onnx_runtime(monkeypatch):
    from bench.adapters import ADAPTERS, base

    monkeypatch.setattr(base, "dist_version", lambda d: "1.31.1" if d == "onnxruntime-gpu" else None)
    assert ADAPTERS.get("onnxruntime").version() == "1.31.1"
    monkeypatch.setattr(base, "dist_version", lambda d: "2.21.0" if d == "tensorflow" else None)
    assert ADAPTERS.get("tensorflow").version() == "2.21.0"


def test_onnxruntime_cuda_provider_is_preloaded_and_checked():
    from bench.adapters.onnxruntime.adapter import open_session

    ort = FakeOrt()
    session = open_session(ort, "m.onnx", None, "CUDAExecutionProvider", {"device_id": 0})
    assert ort.loaded and session.get_providers()[0] == "CUDAExecutionProvider"
    with pytest.raises(RuntimeError, match="runs on CPUExecutionProvider, not CUDAExecutionProvider"):
        open_session(FakeOrt(has_preload=False), "m.onnx", None, "CUDAExecutionProvider", {"device_id": 0})


def test_tensorflow_and_jax_ranks_read_the_energy_of_their_own_gpus(monkeypatch):
    """Under CUDA_VISIBLE_DEVICES=2,3 a replica on cuda:0 is NVML's GPU 2 (was 0)."""
    from bench.adapters.jax.worker import MeshReadings

    _smi(monkeypatch, "2,3")
    monkeypatch.setitem(sys.modules, "pynvml", None)
    mesh = MeshReadings([types.SimpleNamespace(id=0), types.SimpleNamespace(id=1)], gpu=True, images=8)
    assert [m.indices for m in mesh.meters] == [[2], [3]]
    tf_worker = (ROOT / "bench" / "adapters" / "tensorflow" / "worker.py").read_text()
    assert "energy_meter(f\"cuda:{i}\")" in tf_worker and "NvmlEnergyMeter([i])" not in tf_worker


def test_cuda_order_mig_and_unknown_nvml_numbers(monkeypatch):
    assert os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"  # set by `import bench`, for every child too
    _smi(monkeypatch, None, order="FASTEST_FIRST")  # mixed models numbered fastest first: NVML's number unknown
    assert devices.nvml_index("cuda:0") is None
    assert "fastest first" in energy.energy_meter("cuda:0").result(10)["reason"]
    _smi(monkeypatch, "3,1", order="FASTEST_FIRST")  # identical models: any order is the listed one
    assert devices.nvml_index("cuda:0") == 3
    migs = ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-aaaa)\n"
            "  MIG 1g.10gb     Device  0: (UUID: MIG-1111)\n  MIG 3g.40gb     Device  1: (UUID: MIG-2222)\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)\n")
    _smi(monkeypatch, "MIG-2222", migs=migs)
    found = devices.gpus()
    assert [(g["index"], g["name"], g["nvml_index"]) for g in found] == [
        ("0", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "0")]
    assert "MIG instance" in energy.energy_meter("cuda:0").result(10)["reason"]


def test_emulated_nodes_get_a_host_id_each_and_no_nvls():
    from bench.adapters.launch import emulated_link_env

    a, b = emulated_link_env("veth-n0", gpus=True), emulated_link_env("veth-n1", gpus=True)
    assert a["NCCL_HOSTID"] != b["NCCL_HOSTID"] and a["NCCL_NVLS_ENABLE"] == b["NCCL_NVLS_ENABLE"] == "0"
    assert "NCCL_HOSTID" not in emulated_link_env("veth-n0", gpus=False)


def test_jax_does_not_preallocate_gpu_memory(monkeypatch):
    from bench.adapters.jax import training

    # import_jax sets KERAS_BACKEND and the XLA variable in os.environ: a copy, so nothing leaks into later tests'
    # children (a TensorFlow run in a process whose KERAS_BACKEND is 'jax' is skipped)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_PYTHON_CLIENT_PREALLOCATE", "KERAS_BACKEND")}
    monkeypatch.setattr(os, "environ", env)
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace())
    monkeypatch.setitem(sys.modules, "keras", types.SimpleNamespace(backend=types.SimpleNamespace(
        backend=lambda: "jax")))
    training.import_jax(threads=os.cpu_count() or 1)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


def test_a_runs_energy_covers_its_timed_iterations_only(monkeypatch):
    """On the H100 (2026-11-27) a single run's 0.26 img/J came from the warm-up's 13 s of energy over the timed
    iterations' images (3.2 kW); the meter now reads from the end of the warm-up, decided after it, to the end."""
    from bench.measurement.loop import measure

    clock = [0.0]
    monkeypatch.setitem(sys.modules, "pynvml", CoarseNvml(clock, watts=500.0))
    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, None))
    steps = iter([10.0] + [0.05] * 30)  # a 10 s first iteration (compilation), then 30 of 50 ms

    def iteration() -> float:
        seconds = next(steps)
        clock[0] += seconds
        return seconds

    config = types.SimpleNamespace(protocol="seed", warmup=1, iterations=30)
    with energy.energy_meter("cuda:0") as meter:
        samples = measure(iteration, config, mark=meter.mark)
    result = meter.result(images=8 * len(samples.timed_s), from_mark=len(samples.warmup_s))
    assert len(meter.marks) == 1 + 1 + 30
    assert result["joules"] == pytest.approx(500.0 * 1.5, abs=500.0 * 0.1)  # the timed 1.5 s, within one tick
    assert meter.result(images=240)["joules"] > 5000  # the whole block: what the old reading divided


def test_a_run_without_the_reference_framework_keeps_its_numbers_and_says_why_it_has_no_utilisation(monkeypatch,
                                                                                                   tmp_path):
    """In a bare venv MXNet's runs (its own environment) became errors: the peak is torch's GEMM, absent there."""
    from bench.config import RunConfig
    from bench.measurement import utilisation
    from bench.results.record import Record

    def no_peak(*_):
        raise RuntimeError("'python -m bench peak --device cpu' failed: torch is not installed")

    monkeypatch.setattr(utilisation, "run_peak", no_peak)
    monkeypatch.setattr(utilisation, "flops_per_sample", lambda *_: (1e6, "counted"))
    record = Record.new(RunConfig(framework="null", model="tiny_cnn"))
    utilisation.apply_utilisation(record, tmp_path, RunConfig(framework="null", model="tiny_cnn"), 10)
    assert record.utilisation is None and record.peak.when.startswith("not measured: ") and "torch" in \
        record.peak.when
