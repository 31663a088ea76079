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
