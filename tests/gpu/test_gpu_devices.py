"""GPU device handling against fakes that behave like the real APIs: each GPU its own stream and clock (a CUDA event
records on the current device's stream unless given one), CUDA_VISIBLE_DEVICES renumbering what nvidia-smi and NVML
number physically, identical GPUs in `all-gpus`, and no host-memory cap on a GPU's largest-batch search."""

from __future__ import annotations

import types

import pytest


class FakeTorchCuda:
    """torch.cuda with a clock per GPU (milliseconds): an event stamps its stream's GPU, or the current GPU's."""

    def __init__(self, count: int) -> None:
        self.count, self.current, self.clock = count, 0, dict.fromkeys(range(count), 0.0)

    @staticmethod
    def _index(device) -> int:
        return int(str(device).split(":")[1]) if ":" in str(device) else int(device)

    def set_device(self, device) -> None:
        self.current = self._index(device)

    def current_stream(self, device=None):
        return types.SimpleNamespace(device=self.current if device is None else self._index(device))

    def synchronize(self, device=None) -> None:
        pass

    def get_device_capability(self, device=None) -> tuple[int, int]:
        return (9, 0)

    def Event(self, enable_timing: bool = False):  # noqa: N802 (torch.cuda's name)
        cuda = self

        class Event:
            def record(self, stream=None) -> None:
                self.gpu = cuda.current if stream is None else stream.device
                self.ms = cuda.clock[self.gpu]

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end) -> float:
                assert end.gpu == self.gpu, "events of two GPUs"
                return end.ms - self.ms

        return Event()


def _fake_torch(count: int):
    backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True)),
                                     cudnn=types.SimpleNamespace(allow_tf32=True, benchmark=False))
    return types.SimpleNamespace(cuda=FakeTorchCuda(count), backends=backends)


def test_a_run_on_cuda_1_is_timed_on_cuda_1():
    from bench.adapters.torch.adapter import TorchWorkload

    torch = _fake_torch(2)
    workload = object.__new__(TorchWorkload)  # the timing alone: no model, no GPU
    workload.torch, workload.gpu, workload.device = torch, True, "cuda:1"

    def step():  # the step's kernels run on GPU 1, 7 ms of them; GPU 0 stays idle
        torch.cuda.clock[1] += 7.0
    workload.step = step
    assert workload.timed_iteration() == pytest.approx(0.007)


def test_a_gpu_run_makes_its_gpu_current_and_lets_cudnn_autotune():
    from bench.adapters.torch.adapter import select_gpu

    torch = _fake_torch(4)
    select_gpu(torch, "cuda:3", "fp32")
    assert torch.cuda.current == 3 and torch.backends.cudnn.benchmark
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32  # fp32 means fp32
    select_gpu(torch, "cuda:0", "tf32")
    assert torch.cuda.current == 0 and torch.backends.cudnn.allow_tf32


SMI = """0, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-aaaa0000
1, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-bbbb1111
2, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-cccc2222
3, NVIDIA A100-SXM4-40GB, 580.159.04, 40960 MiB, GPU-dddd3333
"""


def test_cuda_visible_devices_renumbers_the_gpus_as_cuda_does():
    from bench.host.devices import visible_gpus

    assert [g["nvml_index"] for g in visible_gpus(SMI, None)] == ["0", "1", "2", "3"]
    picked = visible_gpus(SMI, "3,GPU-bbbb")
    assert [(g["index"], g["nvml_index"], g["name"]) for g in picked] == [
        ("0", "3", "NVIDIA A100-SXM4-40GB"), ("1", "1", "NVIDIA H100 80GB HBM3")]
    assert "uuid" not in picked[0]
    assert [g["nvml_index"] for g in visible_gpus(SMI, "2,7,0")] == ["2"]  # CUDA stops at the first unknown entry
    assert visible_gpus(SMI, "") == () and visible_gpus(SMI, "-1") == ()


def test_energy_and_topology_read_the_gpu_the_run_used(monkeypatch):
    import sys

    from bench.host import devices
    from bench.host.energy import energy_meter
    from tests.gpu.test_gpu_paths import FakeNvml

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, "2,3"))
    fake = FakeNvml(step_mj=1000)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with energy_meter("cuda:1") as meter:  # the framework's cuda:1 is NVML's GPU 3
        pass
    assert list(fake.readings) == ["gpu3"] and meter.result(1)["meter"] == "NVML total energy, GPU 3"
    matrix = ("\tGPU0\tGPU1\tGPU2\tGPU3\nGPU0\t X \tNV18\tNV18\tSYS\nGPU1\tNV18\t X \tNV18\tSYS\n"
              "GPU2\tNV18\tNV18\t X \tPIX\nGPU3\tSYS\tSYS\tPIX\t X \n")
    monkeypatch.setattr(devices.shutil, "which", lambda _: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(devices.subprocess, "run", lambda *a, **k: types.SimpleNamespace(stdout=matrix))
    assert devices.gpu_interconnect([0, 1]) == "PCIe (one switch)"  # NVML's 2 and 3, not 0 and 1 (NVLink)


def test_all_gpus_runs_each_gpu_model_once(monkeypatch, tmp_path):
    from bench.host import devices
    from bench.sweep.profiles import load_profile

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, None))
    (tmp_path / "p.yaml").write_text("frameworks: [torch]\nmodels: [tiny_cnn]\ndevices: [cpu, all-gpus]\nrepeats: 1\n")
    profile = load_profile(str(tmp_path / "p.yaml"))
    assert sorted({c.device for c in profile.configs}) == ["cpu", "cuda:0", "cuda:3"]
    assert sum("identical GPUs run once" in line for line in profile.not_applicable) == 2


def test_a_gpu_largest_batch_search_has_no_host_memory_cap(monkeypatch, tmp_path):
    from bench.config import make_config
    from bench.host import devices
    from bench.runs import maxbatch
    from bench.sweep.profiles import load_profile

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(SMI, "0"))
    (tmp_path / "p.yaml").write_text("frameworks: [torch]\nmodels: [tiny_cnn]\ndevices: [cpu, cuda:0]\n"
                                     "memory:\n  - modes: [training]\n    memory_cap_gb: 3\n")
    caps = {c.device: cap for c, cap, _ in load_profile(str(tmp_path / "p.yaml")).memory_searches}
    assert caps == {"cpu": 3 * 2**30, "cuda:0": None}
    seen = []
    monkeypatch.setattr(maxbatch, "host_facts", lambda config, results_dir: None)
    monkeypatch.setattr(maxbatch, "search", lambda config, cap, top, facts, **_: seen.append(cap) or {"probes": []})
    maxbatch.execute(make_config(framework="torch", model="tiny_cnn", mode="training", device="cuda:0"), tmp_path,
                     3 * 2**30, 8)
    assert seen == [None]


def _h100s(count: int) -> str:
    return "".join(f"{i}, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-{i:04d}\n" for i in range(count))


@pytest.mark.parametrize("count, workers", [(1, [1]), (8, [1, 2, 4, 8])])
def test_the_gpu_profile_runs_one_gpu_and_data_parallel_up_to_the_gpus_there(monkeypatch, count, workers):
    from bench.host import devices
    from bench.sweep.profiles import load_profile

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(_h100s(count), None))
    monkeypatch.setattr(devices, "usable_cpus", lambda: 16 * count)  # a GPU server's cores, not this VM's
    gpu = load_profile("gpu")
    single = [c for c in gpu.configs if not c.distributed]
    cnns = [c for c in single if c.model in ("resnet50", "vgg16")]
    assert {c.device for c in single} == {"cuda:0"} and {c.model for c in single} == {"resnet50", "vgg16", "vit_b16",
                                                                                       "bert_base"}
    assert sorted({c.batch_size for c in cnns}) == [32, 64, 128, 256]
    assert {c.precision for c in cnns if c.framework == "torch"} == {"fp32", "tf32", "bf16"}
    # the transformers in the half precisions (ONNX Runtime's fp32 beside them needs its GPU build, absent here)
    transformers = [c for c in single if c not in cnns]
    assert {c.precision for c in transformers if c.framework == "torch"} == {"bf16", "fp16"}
    assert sorted({c.batch_size for c in transformers}) == [8, 32, 128]
    torch_dp = [c for c in gpu.configs if c.distributed and c.framework == "torch"]
    assert sorted(c.workers for c in torch_dp) == workers and {c.device for c in torch_dp} == {"cuda:0"}
    assert all(c.warmup >= 10 and c.iterations >= 50 for c in gpu.configs)  # seconds of work, not milliseconds
    assert {c.device for c, cap, _ in gpu.memory_searches} == {"cuda:0"}
    assert {cap for _, cap, _ in gpu.memory_searches} == {None}


def test_the_gpu_profile_on_a_machine_without_one_says_so(monkeypatch):
    from bench.errors import ConfigError
    from bench.host import devices
    from bench.sweep.profiles import load_profile

    monkeypatch.setattr(devices, "gpus", lambda: ())
    with pytest.raises(ConfigError, match="expands to no runs"):
        load_profile("gpu")


def test_a_slurm_sweep_plans_for_the_jobs_gpus_not_the_login_nodes(monkeypatch, tmp_path):
    import argparse

    from bench.commands.sweep import job_gpus
    from bench.host import devices
    from bench.sweep.profiles import load_profile

    monkeypatch.setattr(devices, "smi_gpus", lambda: ())  # a login node without a GPU
    monkeypatch.setattr(devices, "usable_cpus", lambda: 32)
    path = tmp_path / "p.yaml"
    path.write_text("frameworks: [torch]\nmodels: [tiny_cnn]\ndevices: [cpu, all-gpus]\nrepeats: 1\n"
                    "distributed:\n  - frameworks: [torch]\n    workers: [1, 2, 4]\n    devices: [all-gpus]\n"
                    "slurm: {gpus_per_task: 2}\n")
    args = argparse.Namespace(executor="slurm", gpus_per_task=None, profile=str(path))
    assert job_gpus(args) == 2 and job_gpus(argparse.Namespace(**{**vars(args), "gpus_per_task": 4})) == 4
    assert job_gpus(argparse.Namespace(**{**vars(args), "executor": "local"})) is None
    assert {c.device for c in load_profile(str(path)).configs} == {"cpu"}  # the login node's own view: no GPU
    with devices.planned_gpus(job_gpus(args)):
        profile = load_profile(str(path))
    assert {c.device for c in profile.configs if not c.distributed} == {"cpu", "cuda:0"}
    assert sorted(c.workers for c in profile.configs if c.distributed) == [1, 2]
    assert "torch allreduce 4 workers on GPUs: this machine has 2" in profile.not_applicable
    assert devices.gpus() == ()  # the plan's GPUs end with it
