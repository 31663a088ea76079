"""`bench doctor`: each framework answers in a fresh process what its build is and what it sees; on this machine
(no GPU) a CUDA build says so cleanly, and the table reads a GPU host's facts (fakes at the device boundary)."""

from __future__ import annotations

import json
import sys

import pytest

from bench.adapters import ADAPTERS
from bench.commands import doctor
from bench.host import devices
from tests.conftest import bench_cli
from tests.gpu.test_gpu_paths import FakeNvml


@pytest.mark.skipif(not ADAPTERS.get("torch").runs_here(), reason="torch is not installed here")
def test_torch_says_its_cuda_build_and_no_gpu_cleanly():
    done = bench_cli("doctor", "--framework", "torch", timeout=300)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["version"].startswith(ADAPTERS.get("torch").version())
    if facts["built_for"].startswith("CUDA"):  # this project's torch: a CUDA 13 build that also runs on the CPU
        assert facts["cudnn"].startswith("9.") and facts["nccl"].count(".") == 2
        assert any(name.startswith("libcudnn") for name in facts["loaded"]), facts["loaded"]
    if not devices.gpus():
        assert facts["gpus"] == [] and "\n" not in facts["gpu"] and facts["gpu"].startswith("RuntimeError: ")


def test_the_table_names_every_framework_and_the_gpu_host(monkeypatch):
    monkeypatch.setattr(devices, "gpus", lambda: ({"index": "0", "name": "NVIDIA H100 80GB HBM3",
                                                   "driver": "580.159.04", "memory": "81559 MiB"},))
    monkeypatch.setattr(devices, "driver_cuda_version", lambda: "13.0")
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(step_mj=1))
    answers = {"torch": {"version": "2.11.0+cu130", "built_for": "CUDA 13.0", "cudnn": "9.13.0", "nccl": "2.27.7",
                         "gpus": ["cuda:0 NVIDIA H100 80GB HBM3 (sm_90)"], "gpu": None},
               "onnxruntime": {"version": "1.30.0", "built_for": "CPU only", "gpus": [],
                               "gpu": "no CUDAExecutionProvider"}}
    host = doctor.host_facts(answers)
    assert host["peak"] == {"cpu": "ready (torch)", "cuda": "ready (torch)"}
    assert host["nvml"] == "energy counters readable"
    text = doctor.table(answers, host)
    assert "driver: 580.159.04 (CUDA 13.0)" in text and "sm_90" in text and "no CUDAExecutionProvider" in text


def test_no_gpu_host_is_said_plainly(monkeypatch):
    monkeypatch.setattr(devices, "gpus", lambda: ())
    monkeypatch.setattr(devices, "driver_cuda_version", lambda: None)
    host = doctor.host_facts({"torch": {"version": "2.14.1", "gpus": []}})
    assert host["peak"] == {"cpu": "ready (torch)", "cuda": "no GPU on this machine"}
    assert "driver: none" in doctor.table({}, host) and host["nvml"] == "no GPU to measure"


def test_the_answers_are_kept_for_the_report(monkeypatch, tmp_path, capsys):
    import argparse

    monkeypatch.setattr(doctor, "ask", lambda name: {"version": "1.0", "built_for": "CPU only", "gpus": [],
                                                     "gpu": f"{name} has no GPU runs"})
    monkeypatch.setattr(devices, "gpus", lambda: ())
    args = argparse.Namespace(framework=None, json=False, results_dir=str(tmp_path))
    assert doctor.doctor(args) == 0 and "framework" in capsys.readouterr().out
    kept = json.loads(next(tmp_path.glob(f"*/{doctor.DOCTOR_FILE}")).read_text())
    assert set(kept["frameworks"]) >= {"torch", "jax"} and kept["host"]["gpus"] == [] and kept["python"]
