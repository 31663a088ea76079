"""The GPU paths read against the real packages (issue 43): each defect found there, with fakes that behave like the
real APIs where the old ones were kind (a coarse energy counter, CUDA's order differing from nvidia-smi's, MIG
identifiers, ONNX Runtime's provider that loads only once its CUDA libraries are), and gpucheck and doctor on an
interpreter with only the standard library, psutil, numpy and a framework."""

from __future__ import annotations

import copy
import json
import os
import sys
import types
from pathlib import Path

import pytest

from bench.host import devices, energy

from .conftest import ROOT, bench_cli

BARE = {"PYTHONPATH": f"{ROOT / 'tests' / 'bare'}{os.pathsep}{ROOT}",
        "BENCH_UNIMPORTABLE": "fastjsonschema,keras,pandas,matplotlib,seaborn,scipy,IPython,papermill,nbformat"}
SMI = ("0, NVIDIA A100-SXM4-80GB, 580.1, 81920 MiB, GPU-aaaa\n"
       "1, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-bbbb\n"
       "2, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-cccc\n"
       "3, NVIDIA H100 80GB HBM3, 580.1, 81559 MiB, GPU-dddd\n")


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_gpucheck_and_doctor_run_on_a_bare_interpreter(tmp_path):
    """fastjsonschema, keras and pandas unimportable (an import hook, in every child too): doctor answers, JAX's runs
    (which need keras) are skipped records saying so, a torch run writes a record checked against the schema in plain
    Python, and each record is valid for the full environment that renders it."""
    # Pillow too (a GPU container may lack it; the int8 path imported it at start-up), except for the torch run:
    # torchvision needs it
    no_pil = {**BARE, "BENCH_UNIMPORTABLE": BARE["BENCH_UNIMPORTABLE"] + ",PIL"}
    done = bench_cli("doctor", "--results-dir", str(tmp_path), env=no_pil, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "torch" in done.stdout and "jax" in done.stdout
    done = bench_cli("gpucheck", "--frameworks", "jax", "--device", "cpu", "--tiny", "--minutes", "3",
                     "--results-dir", str(tmp_path), env=no_pil, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(next(tmp_path.glob("*/gpucheck-*.json")).read_text())
    assert summary["validator"].startswith("bench.results.json_check")
    jax_runs = [s for s in summary["steps"] if s["name"].startswith("jax training fp32")]
    assert jax_runs and jax_runs[0]["outcome"].startswith("skipped: jax is installed") and "keras" in \
        jax_runs[0]["outcome"]
    assert (next(tmp_path.glob("*/gpucheck-*.txt")).read_text().count("\n")) >= 3  # the pasteable claims
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--batch-size", "2",
                     "--protocol", "seed", "--warmup", "1", "--iterations", "2", "--phase-iterations", "0",
                     "--results-dir", str(tmp_path), env=BARE, timeout=300)
    assert done.returncode == 0, done.stderr
    from bench.results.record import validate_record

    records = [json.loads(p.read_text()) for p in tmp_path.glob("*/records/*.json")]
    assert {r["status"] for r in records} == {"ok", "skipped"}
    for record in records:
        validate_record(record)  # with fastjsonschema, here
    ok = next(r for r in records if r["status"] == "ok")
    assert ok["manifest"]["record_check"].startswith("bench.results.json_check")  # said in the record


def test_the_plain_python_check_agrees_with_fastjsonschema():
    import fastjsonschema

    from bench.errors import SchemaError
    from bench.results import json_check
    from bench.results.record import RECORD_SCHEMA

    fast, plain = fastjsonschema.compile(RECORD_SCHEMA), json_check.compile_schema(RECORD_SCHEMA)
    fixtures = sorted((ROOT / "tests" / "fixtures").rglob("records/*.json"))[:40]
    assert fixtures
    from bench.results.record import upgrade

    broken = 0
    for path in fixtures:
        good = upgrade(json.loads(path.read_text()))
        for mutate in (lambda r: r, lambda r: r.pop("status"), lambda r: r.update(status=3),
                       lambda r: r.update(reason="") if r["status"] != "ok" else r["samples"].update(timed_s=[]),
                       lambda r: r["samples"].update(timed_s=[-1.0]), lambda r: r.update(schema_version=-1)):
            data = copy.deepcopy(good)
            mutate(data)
            outcomes = []
            for check in (fast, plain):
                try:
                    check(data)
                    outcomes.append(True)
                except (fastjsonschema.JsonSchemaException, json_check.JsonCheckError):
                    outcomes.append(False)
            assert outcomes[0] == outcomes[1], (path.name, outcomes)
            broken += not outcomes[0]
    assert broken >= 4 * len(fixtures)  # the mutations are caught, not waved through
    with pytest.raises(ValueError, match="cannot check the keywords \\['oneOf'\\]"):
        json_check.compile_schema({"oneOf": []})
    assert issubclass(SchemaError, Exception)


def test_onnxruntime_gpu_is_onnx_runtime(monkeypatch):
    from bench.adapters import ADAPTERS, base

    monkeypatch.setattr(base, "dist_version", lambda d: "1.31.1" if d == "onnxruntime-gpu" else None)
    assert ADAPTERS.get("onnxruntime").version() == "1.31.1"
    monkeypatch.setattr(base, "dist_version", lambda d: "2.21.0" if d == "tensorflow" else None)
    assert ADAPTERS.get("tensorflow").version() == "2.21.0"


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


def test_onnxruntime_cuda_provider_is_preloaded_and_checked():
    from bench.adapters.onnxruntime.adapter import open_session

    ort = FakeOrt()
    session = open_session(ort, "m.onnx", None, "CUDAExecutionProvider", {"device_id": 0})
    assert ort.loaded and session.get_providers()[0] == "CUDAExecutionProvider"
    with pytest.raises(RuntimeError, match="runs on CPUExecutionProvider, not CUDAExecutionProvider"):
        open_session(FakeOrt(has_preload=False), "m.onnx", None, "CUDAExecutionProvider", {"device_id": 0})


def _smi(monkeypatch, visible: str | None, order: str = "PCI_BUS_ID", migs: str = "") -> None:
    monkeypatch.setattr(devices, "_planned", [])
    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, visible, order, migs))


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


def test_gpucheck_summary_survives_a_counter_that_did_not_advance():
    from bench.commands.gpucheck import summary

    ok = {"status": "ok", "summary": {"images_per_sec_median": 10.0, "n": 3}, "utilisation": None,
          "energy": energy.measured("NVML total energy, GPU 0", 0.0, 30)}
    assert "energy: the counter did not advance" in summary(ok)
    assert summary({"status": "skipped", "reason": ""}) == "skipped: no reason given"


@pytest.mark.parametrize("minutes", ["nan", "-5", "0", "inf", "soon"])
def test_gpucheck_minutes_are_validated(minutes, capsys):
    from bench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["gpucheck", "--minutes", minutes])
    assert stop.value.code == 2 and f"invalid value {minutes!r}" in capsys.readouterr().err


def test_the_largest_batch_search_keeps_its_deadline_and_the_checked_interpreter(monkeypatch, tmp_path):
    from bench.commands import gpucheck
    from bench.measurement import fresh_process
    from bench.runs import maxbatch

    now = [0.0]
    monkeypatch.setattr(maxbatch.time, "monotonic", lambda: now[0])

    def probe(config, b, cap, facts, deadline=None):
        now[0] += 30.0  # each probe a fresh ResNet-50 process
        return {"batch_size": b, "fits": True, "reason": "", "images_per_sec": float(b)}

    found = maxbatch.search(None, None, 512, probe_fn=probe, deadline=100.0, start=64)
    assert [p["batch_size"] for p in found["probes"]] == [64, 128, 256, 512] and found["limited_by"] == "max_batch"
    found = maxbatch.search(None, None, 512, probe_fn=probe, deadline=now[0] + 50.0, start=64)
    assert len(found["probes"]) == 2 and found["limited_by"] == "time" and found["largest_batch"] == 128
    monkeypatch.delenv("BENCH_MAIN_PYTHON", raising=False)
    assert "BENCH_MAIN_PYTHON" not in os.environ
    source = Path(gpucheck.__file__).read_text()
    assert 'os.environ["BENCH_MAIN_PYTHON"] = sys.executable' in source
    monkeypatch.setenv("BENCH_MAIN_PYTHON", sys.executable)
    assert fresh_process.main_python() == sys.executable  # what maxbatch's probes start


@pytest.mark.full
def test_gpucheck_and_doctor_in_a_real_bare_virtual_environment(tmp_path):
    """A virtual environment with only psutil, numpy, py-cpuinfo and one framework (JAX, without keras), as pins in
    requirements.txt: doctor answers, and gpucheck writes JAX's runs as skipped records naming keras (exit 0)."""
    import subprocess

    pins = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.split("==")[0].strip() in ("psutil", "numpy", "py-cpuinfo", "jax", "jaxlib", "ml_dtypes",
                                               "opt_einsum", "scipy")]
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", *pins], check=True, timeout=900)
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(ROOT),
           "BENCH_HOST": "bare"}
    for argv in (["doctor", "--results-dir", str(tmp_path / "r")],
                 ["gpucheck", "--device", "cpu", "--tiny", "--frameworks", "jax", "--minutes", "3", "--results-dir",
                  str(tmp_path / "r")]):
        done = subprocess.run([str(python), "-m", "bench", *argv], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("*/records/*.json")]
    assert records and all(r["status"] == "skipped" and "keras" in r["reason"] for r in records)
