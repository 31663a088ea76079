"""GPU paths without a GPU: rank placement, backend choice, CUDA-event comm timing, NVML energy (device fakes)."""

from __future__ import annotations

import contextlib
import re
import sys
import types

import pytest

from bench.config import RunConfig, make_config
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


class FakeCuda:
    """torch.cuda at the device boundary: a device count, and events stamped with a fake GPU clock (milliseconds)."""

    def __init__(self, count: int = 0) -> None:
        self.count, self.gpu_ms, self.synchronized = count, 0.0, 0

    def device_count(self) -> int:
        return self.count

    def synchronize(self, device=None) -> None:
        self.synchronized += 1

    def Event(self, enable_timing: bool = False):  # noqa: N802 (torch.cuda's name)
        cuda = self

        class Event:
            def record(self) -> None:
                self.ms = cuda.gpu_ms

            def elapsed_time(self, end) -> float:
                return end.ms - self.ms

        assert enable_timing
        return Event()


def _rank_env(local: int, ranks: int, base: int = 0) -> dict:
    from bench.ranks import rankio

    return {"LOCAL_RANK": str(local), rankio.MACHINE_RANKS_ENV: str(ranks), rankio.GPU_BASE_ENV: str(base)}


def test_a_rank_takes_the_gpu_of_its_local_rank(monkeypatch):
    from bench.adapters.torch.worker import Placement, rank_device

    _gpus(monkeypatch, 4)
    config = make_config(**{**DIST, "workers": 4}, device="cuda", oversubscribe=True)  # this machine: 2 cores
    assert rank_device(config, _rank_env(2, 4), FakeCuda(4)) == Placement("cuda:2", "nccl", True)
    # emulated nodes share this machine's GPUs: node 1's local rank 0 is the machine's third rank
    assert rank_device(config, _rank_env(0, 4, base=2), FakeCuda(4)).device == "cuda:2"
    cpu = make_config(**DIST)
    assert rank_device(cpu, _rank_env(1, 2), FakeCuda(0)) == Placement("cpu", "gloo", False)


def test_ranks_sharing_one_gpu_use_gloo_and_one_measures_its_energy(monkeypatch):
    from bench.adapters.torch.worker import Placement, rank_device

    _gpus(monkeypatch, 1)
    config = make_config(**DIST, device="cuda", backend="gloo")
    assert rank_device(config, _rank_env(0, 2), FakeCuda(1)) == Placement("cuda:0", "gloo", True)
    assert rank_device(config, _rank_env(1, 2), FakeCuda(1)) == Placement("cuda:0", "gloo", False)
    nccl = make_config(**{**DIST, "workers": 1}, device="cuda")
    with pytest.raises(ValueError, match="NCCL cannot run two ranks on one GPU"):  # a process seeing fewer GPUs
        rank_device(nccl, _rank_env(1, 2), FakeCuda(1))


def test_gpu_comm_is_timed_by_cuda_events_on_the_host_axis():
    from bench.adapters.torch.worker import CudaEventClock, HostClock, make_clock
    from bench.ranks.timeline import step_phases

    cuda = FakeCuda(1)
    clock = make_clock("cuda:0", cuda)
    assert isinstance(clock, CudaEventClock) and isinstance(make_clock("cpu", cuda), HostClock)
    t0 = clock.begin()
    spans = []
    for start_ms, end_ms in ((4.0, 9.0), (8.0, 12.0)):  # two buckets' all-reduces on the GPU's clock
        cuda.gpu_ms = start_ms
        a = clock.mark()
        cuda.gpu_ms = end_ms
        spans.append((a, clock.mark()))
    clock.end()  # the events are read once the step's work is done
    comm = clock.seconds(spans)
    assert comm == [pytest.approx((t0 + 0.004, t0 + 0.009)), pytest.approx((t0 + 0.008, t0 + 0.012))]
    phases = step_phases((t0, t0 + 0.002), (t0 + 0.002, t0 + 0.008), (t0 + 0.012, t0 + 0.013), comm, (t0, t0 + 0.013))
    assert phases["comm_s"] == pytest.approx(0.008) and phases["overlap_s"] == pytest.approx(0.004)
    assert cuda.synchronized == 2  # at the step's start (the reference) and before reading the events


class QueueingCuda(FakeCuda):
    """A GPU that runs queued kernels on its own: work queued at host time h starts when the GPU is free (not before
    h); an event records the time the work queued before it is done; synchronize waits on the host until then."""

    def __init__(self) -> None:
        self.host_ms = self.done_ms = 0.0
        super().__init__(1)

    @property
    def gpu_ms(self) -> float:  # what an event recorded now stamps: when the work queued before it is done
        return max(self.done_ms, self.host_ms)

    @gpu_ms.setter
    def gpu_ms(self, ms: float) -> None:
        self.done_ms = ms

    def run(self, ms: float) -> None:
        self.done_ms = self.gpu_ms + ms
        self.host_ms += 0.1  # the host only queues it

    def synchronize(self, device=None) -> None:
        super().synchronize(device)
        self.host_ms = max(self.host_ms, self.gpu_ms)


def test_a_gpu_rank_synchronises_only_where_the_step_time_is_read():
    """DDP's clock once synchronised after forward, backward and update: 7 waits a step, each draining the queue the
    next kernels would have joined. Now the step's start and end only; the phases are the GPU's, from events."""
    from bench.adapters.torch.worker import CudaEventClock, Trainer

    cuda = QueueingCuda()
    workload = types.SimpleNamespace(
        torch=types.SimpleNamespace(cuda=cuda), zero_grad=lambda: cuda.run(0.5),
        forward=lambda: cuda.run(5.0) or types.SimpleNamespace(detach=lambda: 0.25),
        backward=lambda loss: cuda.run(7.0), update=lambda: cuda.run(1.0))
    trainer = object.__new__(Trainer)  # the step alone: no process group, no DDP wrapper (its hooks add comm spans)
    trainer.workload, trainer.dist, trainer.config, trainer.ddp = workload, None, types.SimpleNamespace(
        strategy="allreduce"), None
    trainer.clock = CudaEventClock(cuda, "cuda:0", host=lambda: cuda.host_ms / 1e3)
    for _ in range(3):
        before = cuda.synchronized
        step = trainer.step()
        assert cuda.synchronized - before == 2  # at the step's start (the reference) and its end
    # forward from the step's start (zero_grad's 0.5 ms included, as on the CPU)
    assert step["forward_s"] == pytest.approx(0.0055) and step["backward_s"] == pytest.approx(0.007)
    assert step["update_s"] == pytest.approx(0.001) and step["step_s"] == pytest.approx(0.0135)
    assert step["loss"] == 0.25


def test_cpu_comm_keeps_host_timestamps():
    from bench.adapters.torch.worker import HostClock

    clock = HostClock()
    a = clock.mark()
    assert isinstance(a, float) and clock.seconds([(a, a + 1.0)]) == [(a, a + 1.0)]


def test_torchrun_tasks_tell_each_agent_its_machine_ranks_and_gpu_base():
    from bench.adapters.torch.launch import torchrun_tasks
    from bench.ranks import rankio
    from bench.runs.distributed.cluster import Machines

    config = make_config(**DIST)
    (task,) = torchrun_tasks(config, "m", {}, None)
    assert (task.env[rankio.MACHINE_RANKS_ENV], task.env[rankio.GPU_BASE_ENV]) == ("2", "0")
    cluster = torchrun_tasks(RunConfig(**{**DIST, "nodes": 2}, extra={"real_cluster": True}), "m", {}, None,
                             Machines(("10.0.0.1",), node_rank=1, source="master"))
    assert (cluster[0].env[rankio.MACHINE_RANKS_ENV], cluster[0].env[rankio.GPU_BASE_ENV]) == ("1", "0")


class _Node:
    def __init__(self, k: int) -> None:
        self.address, self.ifname = f"10.213.0.{k + 1}", f"dlbv{k}"

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"dlb{self.ifname}", *argv]


def test_emulated_nodes_keep_nccl_on_the_emulated_link(monkeypatch):
    """NCCL between emulated nodes would use NVLink, shared memory or InfiniBand (the GPUs are one machine's), and the
    record would still say "1 Gbit/s": each node's ranks get NCCL on their own veth with the bypasses off."""
    from bench.adapters.tensorflow.launch import tf_tasks
    from bench.adapters.torch.launch import torchrun_tasks

    _gpus(monkeypatch, 4)
    nodes = [_Node(0), _Node(1)]
    gpu = make_config(**{**DIST, "workers": 4, "nodes": 2}, device="cuda", oversubscribe=True)
    tf_gpu = make_config(**{**TF, "strategy": "allreduce", "workers": 2, "nodes": 2}, device="cuda")
    for tasks in (torchrun_tasks(gpu, "m", {}, nodes), tf_tasks(tf_gpu, "m", {}, nodes)):
        for task, node in zip(tasks, nodes, strict=True):
            assert {k: task.env.get(k) for k in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_P2P_DISABLE",
                                                 "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE")} == {
                "NCCL_SOCKET_IFNAME": node.ifname, "GLOO_SOCKET_IFNAME": node.ifname, "NCCL_P2P_DISABLE": "1",
                "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1"}
    cpu = torchrun_tasks(make_config(**{**DIST, "nodes": 2}), "m", {}, nodes)  # gloo on the CPU: its interface only
    assert [t.env["GLOO_SOCKET_IFNAME"] for t in cpu] == ["dlbv0", "dlbv1"]
    assert not any(k.startswith("NCCL_") for t in cpu for k in t.env)
    (one,) = torchrun_tasks(make_config(**DIST, device="cuda"), "m", {}, None)  # one machine: NCCL as it likes
    assert not any(k.startswith("NCCL_") for k in one.env)


def test_the_record_of_emulated_gpu_nodes_says_what_nccl_was_kept_from(monkeypatch):
    from bench.runs.distributed import run

    _gpus(monkeypatch, 4)

    @contextlib.contextmanager
    def nodes(count, gbit, delay_ms):
        yield [types.SimpleNamespace(netns=f"dlb{k}", address=f"10.213.0.{k + 1}") for k in range(count)]

    monkeypatch.setattr(run, "emulated_nodes", nodes)
    gpu = make_config(**{**DIST, "workers": 4, "nodes": 2}, device="cuda", oversubscribe=True, link_gbit=1.0)
    with run.topology(gpu) as (_, link):
        assert link["gbit"] == 1.0 and "NCCL" in link["nccl"] and "veth" in link["nccl"]
    with run.topology(make_config(**{**DIST, "nodes": 2}, link_gbit=1.0)) as (_, link):
        assert "nccl" not in link


TF = dict(framework="tensorflow", model="tiny_cnn", mode="training")


@pytest.mark.parametrize("strategy, device, nodes, role, local, expected", [
    # one machine's GPUs: MirroredStrategy in one process, one replica per GPU, NCCL all-reduce
    ("allreduce", "cuda:0", 1, "worker", 0, ("MirroredStrategy", "NCCL", ("/gpu:0", "/gpu:1"), (0, 1))),
    # across nodes: a MultiWorkerMirroredStrategy process per GPU, NCCL collectives
    ("allreduce", "cuda:0", 2, "worker", 1, ("MultiWorkerMirroredStrategy", "NCCL", ("/gpu:0",), (1,))),
    # CPUs: MWMS over gRPC rings, and no GPU visible (a CPU config never runs on one)
    ("allreduce", "cpu", 1, "worker", 1, ("MultiWorkerMirroredStrategy", "RING", ("/cpu:0",), ())),
    ("independent", "cuda:0", 1, "worker", 1, ("default", None, ("/gpu:0",), (1,))),
    ("independent", "cpu", 1, "worker", 0, ("default", None, ("/cpu:0",), ())),
    # parameter server: GPU workers, each its own; the server and the coordinating chief on the CPU
    ("ps_async", "cuda:0", 1, "worker", 1, ("ParameterServerStrategy", None, ("/gpu:0",), (1,))),
    ("ps_async", "cuda:0", 1, "ps", 0, ("ParameterServerStrategy", None, ("/cpu:0",), ())),
    ("ps_async", "cuda:0", 1, "chief", 0, ("ParameterServerStrategy", None, (), ())),
])


def test_tensorflow_strategy_plan(strategy, device, nodes, role, local, expected):
    from bench.adapters.tensorflow.strategies import plan

    assert tuple(plan(strategy, device, nodes, role, local, workers_here=2)) == expected


def test_tensorflow_gpu_configs_launch_by_layout_and_refuse_what_cannot_run(monkeypatch):
    from bench.adapters import ADAPTERS

    tf = ADAPTERS.get("tensorflow")
    assert tf.distributed.launch_for("allreduce", "cuda:0", 1) == "local_devices"  # MirroredStrategy: one process
    assert [tf.distributed.launch_for(*a) for a in (("allreduce", "cuda:0", 2), ("allreduce", "cpu", 1),
                                        ("ps_async", "cuda:0", 1))] == ["tf_config"] * 3
    monkeypatch.setattr(tf, "not_applicable", lambda *a: None)  # this machine's TF build is beside the point here
    _gpus(monkeypatch, 2)
    for strategy in ("allreduce", "independent", "ps_async"):
        assert make_config(**TF, strategy=strategy, workers=2, device="cuda").device == "cuda:0"
    _gpus(monkeypatch, 1)
    with pytest.raises(ConfigError, match="MirroredStrategy replicas on a GPU of its own: 2 workers on this machine "
                                          "need 2 GPUs, it has 1; valid here: workers 1 to 1 per machine"):
        make_config(**TF, strategy="allreduce", workers=2, device="cuda")
    with pytest.raises(ConfigError, match="invalid backend 'gloo' for tensorflow"):
        make_config(**TF, strategy="allreduce", workers=1, device="cuda", backend="gloo")


def test_a_cpu_only_tensorflow_refuses_gpu_runs_before_any_work(monkeypatch, tmp_path):
    from bench.adapters import ADAPTERS
    from bench.adapters.tensorflow import adapter as tf_adapter
    from bench.runs.distributed import run

    versions = {"tensorflow-cpu": "2.21.0", "tensorflow": None}
    monkeypatch.setattr(tf_adapter, "dist_version", lambda name: versions.get(name))
    reason = ADAPTERS.get("tensorflow").cannot_run("training", "fp32", "cuda:0")
    assert "tensorflow-cpu, which has no GPU support" in reason
    assert "no GPU support" not in (ADAPTERS.get("tensorflow").cannot_run("training", "fp32", "cpu") or "")
    _gpus(monkeypatch, 1)
    config = make_config(**TF, strategy="allreduce", workers=1, device="cuda")
    monkeypatch.setattr(run, "launch", lambda *a, **k: pytest.fail("a process was started"))
    record = run.execute(config, tmp_path)
    assert (record.status, record.reason) == ("skipped", reason)


MIRRORED_ON_TWO_CPUS = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from bench.adapters.tensorflow import strategies, worker
from bench.config import make_config
config = make_config(framework="tensorflow", model="tiny_cnn", mode="training", batch_size=4, image_size=16,
                     strategy="allreduce", workers=2, warmup=1, iterations=3)
# the GPU plan's shape (one process, a replica per device) on two logical CPUs: no NCCL there, so no communication
worker._plan = lambda *a: strategies.StrategyPlan(strategies.MIRRORED, None, ("/cpu:0", "/cpu:1"), ())
from bench.adapters import ADAPTERS
from bench.runs.distributed.rank_loop import run_group
run_group(ADAPTERS.get("tensorflow").distributed.rank_group(config, {}), config, {"out_dir": sys.argv[1]})
"""


@pytest.mark.full  # 10 s of TensorFlow graph building: the full tier keeps `make test` within 10 minutes
def test_mirrored_strategy_replicas_of_one_process_train_in_lockstep(tmp_path):
    """The MirroredStrategy process (one machine's GPUs) run for real on two logical CPU devices through the rank
    loop: one result per replica, each replica its own shard of data, their weights identical after the all-reduced
    steps."""
    import json
    import subprocess

    from bench.runs.distributed.rank_loop import RankResult
    from tests.conftest import ROOT

    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": "tensorflow",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", MIRRORED_ON_TWO_CPUS, str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["rank0.json", "rank1.json"]
    first, second = (RankResult.from_json(json.loads((tmp_path / f"rank{k}.json").read_text())) for k in (0, 1))
    assert first.settings["strategy"] == "MirroredStrategy" and first.settings["replicas_in_process"] == 2
    assert first.section.checksum_after != first.section.checksum_before
    assert first.section.checksum_after == pytest.approx(second.section.checksum_after, rel=1e-6)
    assert len(first.steps) == 3 and all(s["comm_s"] >= 0 for s in first.steps)
    assert first.section.steps == 3 and first.section.samples == 3 * 4  # weak scaling: 4 images per replica
    assert first.section.energy.available or first.section.energy.reason  # RAPL, or why not
    assert second.section.energy is None  # the machine's CPUs are read once, by the first replica
