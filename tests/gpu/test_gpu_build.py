"""The build choice in the Makefile, run with a fake Python and pip: `make setup GPU=1` hands pip requirement files
(never the words of one), the choice sticks to the checkout until switched back, PYTHON_ENV=system builds nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

# A stand-in for python3: `-m venv DIR` makes DIR/bin/{python,pip}; that pip logs its arguments (one JSON list a call)
# and the requirement lines of each -r file; everything else succeeds.
FAKE_PYTHON = r"""#!/bin/bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; cp "$0" "$3/bin/pip"; exit 0
fi
if [ "$(basename "$0")" = "pip" ]; then
  python3 - "$@" <<'PY' >> "$PIP_LOG"
import json, sys
args = sys.argv[1:]
files = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-r"]
lines = [ln.split("#")[0].strip() for f in files for ln in open(f)]
print(json.dumps({"args": args, "requirements": [ln for ln in lines if ln]}))
PY
fi
exit 0
"""


@pytest.fixture()
def checkout(tmp_path) -> Path:
    """The Makefile and requirement files in a folder of their own, with the fake Python beside them."""
    for path in [ROOT / "Makefile", *ROOT.glob("requirements*.txt")]:
        shutil.copy(path, tmp_path)
    fake = tmp_path / "fakepython"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return tmp_path


def _make(checkout: Path, *args: str) -> list[dict]:
    """Run make in `checkout` with the fake Python; return the pip calls it made."""
    log = checkout / "pip.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("GPU", "PYTHON_ENV", "MAKEFLAGS")}
    done = subprocess.run(["make", "-s", *args, f"PYTHON={checkout / 'fakepython'}",
                           f"VENV_CACHE={checkout / 'cache'}"], cwd=checkout, capture_output=True, text=True,
                          env={**env, "PIP_LOG": str(log)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _installs(calls: list[dict]) -> list[dict]:
    return [c for c in calls if "-r" in c["args"]]


def test_gpu_setup_gives_pip_requirement_files_not_the_words_of_one(checkout):
    main, tensorflow = _installs(_make(checkout, "setup", "GPU=1"))
    assert all(a.startswith("-") or Path(a).is_file() for a in main["args"] if a != "install"), main["args"]
    names = [r.split("==")[0] for r in main["requirements"]]
    assert {"jax[cuda13]", "onnxruntime-gpu", "nvidia-ml-py", "torch", "tensorflow-cpu"} <= set(names)
    assert not {"jax", "onnxruntime"} & set(names) and names.count("jaxlib") == 1, names
    # TensorFlow's CUDA 12 build sits in an environment of its own (its cuDNN and NCCL files clash with torch's)
    assert "tensorflow[and-cuda]==2.21.0" in tensorflow["requirements"]
    assert os.readlink(checkout / ".venv").endswith("-gpu")
    assert os.readlink(checkout / ".venv-tensorflow-gpu").startswith(str(checkout / "cache" / "tensorflow-gpu-"))


def test_the_build_choice_sticks_until_switched_back(checkout):
    _make(checkout, "setup", "GPU=1")
    gpu = os.readlink(checkout / ".venv")
    assert _make(checkout, "setup") == [] and os.readlink(checkout / ".venv") == gpu  # no silent switch
    assert "build: GPU" in subprocess.run(["make", "-s", "help"], cwd=checkout, capture_output=True, text=True).stdout
    cpu = _installs(_make(checkout, "setup", "GPU=0"))
    assert cpu[0]["args"][-2:] == ["-r", "requirements.txt"] and not os.readlink(checkout / ".venv").endswith("-gpu")
    assert _make(checkout, "setup") == []


def test_python_env_system_builds_nothing_and_runs_that_python(checkout):
    plan = subprocess.run(["make", "-n", "-s", "report", "PYTHON_ENV=system", "PYTHON=/opt/their/python3"],
                          cwd=checkout, capture_output=True, text=True, timeout=60).stdout
    assert "-m venv" not in plan and "pip install" not in plan
    assert "/opt/their/python3 -m bench sweep --profile" in plan and "/opt/their/python3 -m bench report" in plan


def test_report_on_a_gpu_host_asks_the_doctor_then_runs_the_gpu_profile(checkout):
    smi = checkout / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)'\n")
    smi.chmod(0o755)

    def plan(path: str) -> str:
        return subprocess.run(["make", "-n", "-s", "report", "PYTHON_ENV=system", "PYTHON=python3"], cwd=checkout,
                              capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path}).stdout
    gpu = plan(f"{smi.parent}:{os.environ['PATH']}")
    assert "python3 -m bench doctor" in gpu and "bench sweep --profile gpu" in gpu
    cpu = plan("/usr/bin:/bin")  # no nvidia-smi
    assert "bench doctor" not in cpu and "bench sweep --profile quick" in cpu


def test_a_sweep_runs_tensorflow_gpu_configs_in_its_cuda_environment(monkeypatch, tmp_path):
    """On a GPU host built with GPU=1, TensorFlow's GPU configs run in .venv-tensorflow-gpu's kernel (its CUDA build)
    and its CPU configs in the main one; before, every TensorFlow config ran in the main kernel's tensorflow-cpu."""
    from bench.adapters import ADAPTERS, base
    from bench.adapters.base import MAIN_KERNEL
    from bench.config import make_config
    from bench.host import devices
    from bench.sweep import jupyter_kernels, task
    from bench.sweep.plan import Task

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(
        "0, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-aaaa0000\n", None))
    tf = ADAPTERS.get("tensorflow")
    monkeypatch.setattr(base, "PROJECT_ROOT", tmp_path)
    assert tf.kernel_for("cuda:0") == MAIN_KERNEL  # not built: nothing else to pick
    python = tmp_path / ".venv-tensorflow-gpu" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    assert tf.kernel_for("cuda:0") == "bench-tensorflow-gpu" and tf.kernel_for("cpu") == MAIN_KERNEL
    assert tf.not_applicable("inference", "fp32", "cuda:0") is None  # the main env's tensorflow-cpu does not refuse
    with jupyter_kernels.kernel_environment() as runtime:
        spec = json.loads((Path(runtime) / "kernels" / "bench-tensorflow-gpu" / "kernel.json").read_text())
    assert spec["argv"][0] == str(python)
    kernels = []
    monkeypatch.setattr(task, "execute_masked", lambda *a, kernel_name, **k: kernels.append(kernel_name))
    for device in ("cuda:0", "cpu"):
        config = make_config(framework="tensorflow", model="tiny_cnn", mode="inference", device=device)
        task.run_notebook(config, tmp_path / "results", Task(config, 0, 0), {})
    assert kernels == ["bench-tensorflow-gpu", MAIN_KERNEL]


def test_a_tensorflow_gpu_run_from_the_main_environment_reruns_in_the_cuda_one(monkeypatch, tmp_path):
    import argparse
    import sys

    from bench import cli
    from bench.adapters import base

    monkeypatch.setattr(base, "PROJECT_ROOT", tmp_path)
    python = tmp_path / ".venv-tensorflow-gpu" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    run = argparse.Namespace(command="run", framework="tensorflow", device="cuda:0")
    assert cli._framework_interpreter(run) == python
    assert cli._framework_interpreter(argparse.Namespace(**{**vars(run), "device": "cpu"})) is None
    monkeypatch.setattr(sys, "prefix", str(python.parent.parent))  # already in it: no second hop
    assert cli._framework_interpreter(run) is None
