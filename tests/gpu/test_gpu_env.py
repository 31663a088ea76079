"""The GPU build (`make setup GPU=1`) built for real on this machine, GPU or not, and each framework checked in it:
a CUDA build, the CUDA, cuDNN and NCCL it loads, and, where there is no GPU, a clean one-line "no GPU". Marked
gpu_env: several GB of downloads, run by `make test-gpu-env`, never by `make test`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.host import devices
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu_env
NO_GPU = not devices.gpus()


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> dict[str, Path]:
    """`make setup GPU=1` in a copy of the Makefile (the checkout's own build choice stays), in the shared
    VENV_CACHE: the environments are built once and reused. {"main": interpreter, "tensorflow": interpreter}."""
    checkout = tmp_path_factory.mktemp("gpu-checkout")
    for path in [ROOT / "Makefile", *ROOT.glob("requirements*.txt")]:
        shutil.copy(path, checkout)
    python = getattr(sys, "_base_executable", None) or "python3"  # not this venv's: a venv is made from a base
    env = {k: v for k, v in os.environ.items() if k not in ("GPU", "PYTHON_ENV", "MAKEFLAGS")}
    done = subprocess.run(["make", "-s", "setup", "GPU=1", f"PYTHON={python}"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr
    tf = checkout / ".venv-tensorflow-gpu" / "bin" / "python"
    assert tf.exists(), f"TensorFlow's CUDA environment was not built: {done.stderr}"
    # the venv folders resolved, not their python (a link to the base interpreter)
    return {"main": (checkout / ".venv").resolve() / "bin" / "python",
            "tensorflow": (checkout / ".venv-tensorflow-gpu").resolve() / "bin" / "python"}


def _doctor(python: Path, framework: str) -> dict:
    done = subprocess.run([str(python), "-m", "bench", "doctor", "--framework", framework], capture_output=True,
                          text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _site(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3*/site-packages"))


def _no_gpu_said_cleanly(facts: dict) -> None:
    if NO_GPU:
        assert facts["gpus"] == [] and facts["gpu"] and "\n" not in facts["gpu"], facts


def test_torch_is_a_cuda_13_build_loading_its_own_cudnn_and_nccl(build):
    facts = _doctor(build["main"], "torch")
    assert facts["built_for"].startswith("CUDA 13") and facts["cudnn"].startswith("9.") and facts["nccl"]
    site = str(_site(build["main"]))
    assert facts["loaded"]["libcudnn.so.9"].startswith(site) and facts["loaded"]["libcudart.so.13"].startswith(site)
    _no_gpu_said_cleanly(facts)


def test_jax_has_its_cuda_plugin_at_jaxlibs_exact_version(build):
    facts = _doctor(build["main"], "jax")
    assert facts["built_for"] == f"CUDA 13 (jax-cuda13-plugin {facts['jaxlib']})", facts
    assert facts["cudnn"].startswith("nvidia-cudnn-cu13") and facts["nccl"].startswith("nvidia-nccl-cu13")
    _no_gpu_said_cleanly(facts)


def test_onnxruntime_has_the_cuda_provider_built_for_the_same_cuda(build):
    facts = _doctor(build["main"], "onnxruntime")
    assert "CUDAExecutionProvider" in facts["providers"] and facts["built_for"].startswith("CUDA 13")
    provider = next(_site(build["main"]).glob("onnxruntime/capi/libonnxruntime_providers_cuda.so"))
    if shutil.which("readelf"):  # what the provider links against: CUDA 13's cuBLAS and runtime, torch's
        needed = re.findall(r"\[(lib\w+\.so\.\d+)\]", subprocess.run(["readelf", "-d", str(provider)],
                                                                        capture_output=True, text=True).stdout)
        assert {"libcublasLt.so.13", "libcudart.so.13"} <= set(needed), needed
    _no_gpu_said_cleanly(facts)


def test_the_main_environment_holds_one_cuda_and_nvml(build):
    listed = subprocess.run([str(build["main"]), "-m", "pip", "list", "--format=json"], capture_output=True,
                            text=True, check=True).stdout
    names = {p["name"].lower(): p["version"] for p in json.loads(listed)}
    assert not [n for n in names if n.startswith("nvidia-") and n.endswith("-cu12")], names  # CUDA 13 alone
    assert "onnxruntime" not in names and "nvidia-ml-py" in names  # one wheel provides the onnxruntime module
    subprocess.run([str(build["main"]), "-c", "import pynvml"], check=True)
    check = subprocess.run([str(build["main"]), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_tensorflow_is_a_cuda_12_build_in_an_environment_of_its_own(build):
    facts = _doctor(build["tensorflow"], "tensorflow")
    assert facts["built_for"].startswith("CUDA 12") and str(facts["cudnn"]).startswith("9")
    assert facts["nccl"].startswith("nvidia-nccl-cu12"), facts
    site = _site(build["tensorflow"])
    assert not list(site.glob("nvidia/cu13")) and list(site.glob("nvidia/cudnn/lib/libcudnn.so.9"))
    if NO_GPU:
        assert facts["gpus"] == [] and facts["gpu"] == "no GPU visible to TensorFlow"
