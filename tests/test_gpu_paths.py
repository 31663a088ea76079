"""GPU paths without a GPU: rank placement, backend choice, CUDA-event comm timing, NVML energy (device fakes)."""

from __future__ import annotations

import re
import sys

import pytest

from bench.config import make_config
from bench.errors import ConfigError
from bench.host import devices
from bench.host.devices import rank_placement

DIST = dict(framework="torch", model="tiny_cnn", mode="training", strategy="allreduce", workers=2)


def _gpus(monkeypatch, count: int) -> None:
    monkeypatch.setattr(devices, "gpus", lambda: tuple({"index": str(i), "name": "a GPU"} for i in range(count)))


@pytest.mark.parametrize("local_rank", [0, 1, 3])
def test_each_rank_takes_its_own_gpu_over_nccl(local_rank):
    assert rank_placement("cuda:0", local_rank, 4, 4) == (f"cuda:{local_rank}", "nccl")
    assert rank_placement("cuda", local_rank, 4, 8, "gloo") == (f"cuda:{local_rank}", "gloo")


def test_cpu_ranks_stay_on_the_cpu_over_gloo():
    assert rank_placement("cpu", 1, 2, 0) == ("cpu", "gloo")
    assert rank_placement("cpu", 1, 2, 8, "gloo") == ("cpu", "gloo")
    with pytest.raises(ValueError, match="'nccl' needs GPU ranks"):
        rank_placement("cpu", 0, 2, 8, "nccl")


def test_ranks_share_one_gpu_only_over_gloo_asked_for():
    assert rank_placement("cuda:0", 1, 2, 1, "gloo") == ("cuda:0", "gloo")
    for backend in ("auto", "nccl"):
        with pytest.raises(ValueError, match="NCCL cannot run two ranks on one GPU"):
            rank_placement("cuda:0", 1, 2, 1, backend)


def test_gpu_ranks_without_a_gpu_are_refused():
    with pytest.raises(ValueError, match="this machine has no GPU"):
        rank_placement("cuda:0", 0, 1, 0)


def test_gpu_distributed_config_on_this_gpu_less_machine_is_refused(monkeypatch):
    _gpus(monkeypatch, 0)
    with pytest.raises(ConfigError, match="this machine has no GPU; valid choices: cpu"):
        make_config(**DIST, device="cuda")


def test_gpu_distributed_config_is_accepted_with_the_gpus_it_needs(monkeypatch):
    _gpus(monkeypatch, 2)
    assert make_config(**DIST, device="cuda").device == "cuda:0"
    _gpus(monkeypatch, 1)
    shared = make_config(**DIST, device="cuda", backend="gloo")
    assert (shared.backend, shared.for_rank(1).backend) == ("gloo", "auto")
    with pytest.raises(ConfigError, match="NCCL cannot run two ranks on one GPU"):
        make_config(**DIST, device="cuda", backend="nccl")


def test_backend_is_refused_where_it_means_nothing(monkeypatch):
    with pytest.raises(ConfigError, match="'nccl' needs GPU ranks"):
        make_config(**DIST, backend="nccl")
    with pytest.raises(ConfigError, match="need a distributed strategy"):
        make_config(framework="torch", model="tiny_cnn", backend="gloo")
    with pytest.raises(ConfigError, match="invalid backend 'mpi'"):
        make_config(**DIST, backend="mpi")


class FakeNvml:
    """pynvml at the device boundary: GPUs whose energy counters (millijoules) advance by `step_mj` per reading."""

    class NVMLError(Exception):
        pass

    def __init__(self, step_mj: int = 0, supported: bool = True) -> None:
        self.step_mj, self.supported, self.readings, self.shut = step_mj, supported, {}, 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut += 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if not self.supported:
            raise self.NVMLError("Not Supported")
        self.readings[handle] = self.readings.get(handle, 1_000_000) + self.step_mj
        return self.readings[handle]


def test_nvml_energy_over_the_loop_gives_images_per_joule(monkeypatch):
    from bench.host.energy import energy_meter

    fake = FakeNvml(step_mj=50_000)  # 50 J between two readings
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with energy_meter("cuda:1") as meter:
        pass
    result = meter.result(images=100)
    assert result["available"] and result["meter"] == "NVML total energy, GPU 1"
    assert result["joules"] == pytest.approx(50.0) and result["images_per_joule"] == pytest.approx(2.0)
    assert result["joules_per_image"] == pytest.approx(0.5) and fake.shut == 1


@pytest.mark.parametrize("module, reason", [
    (None, "pynvml is not installed"),
    (FakeNvml(supported=False), "NVML total energy not readable on GPU \\[0\\]: Not Supported \\(needs Volta"),
])
def test_nvml_energy_says_why_it_is_not_measured(monkeypatch, module, reason):
    from bench.host.energy import NvmlEnergyMeter

    monkeypatch.setitem(sys.modules, "pynvml", module)  # None: `import pynvml` raises ImportError
    with NvmlEnergyMeter([0]) as meter:
        pass
    result = meter.result(images=10)
    assert not result["available"] and re.search(reason, result["reason"])
    assert NvmlEnergyMeter([]).result(10) == {"available": False, "reason": "no GPU to measure"}


def test_cpu_runs_keep_the_rapl_meter():
    from bench.host.energy import EnergyMeter, energy_meter

    assert type(energy_meter("cpu")) is EnergyMeter
