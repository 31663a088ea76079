"""The sweep as objects: an `Executor` test double runs a whole sweep (plan, run with its queue policies, finish)
without a notebook or a benchmark; its tasks write synthetic records of the harness's own null framework."""

from __future__ import annotations

import json

import pytest

from bench.results.record import Record
from bench.results.store import finished_runs, host_records, write_record
from bench.results.sweep_manifest import load_sweeps
from bench.sweep.executors import Executor, LocalExecutor, make_executor
from bench.sweep.profiles import load_profile
from bench.sweep.runner import Plan, Sweep, plan
from tests.conftest import TEST_HOST
from tests.synthetic import record

DISTURBED = [{"name": "disturbed", "reason": "other processes used 40% of the CPUs during the timed loop"}]


class DoubleExecutor:
    """Runs each task by writing its record at once; the first attempt of each listed repetition is disturbed;
    with `spread`, odd repetitions are that much faster (a config whose interval stays wide)."""

    name, local = "double", False  # not local: the sweep measures no peak on this machine

    def __init__(self, disturbed: set[int] = frozenset(), interrupt_after: int | None = None,
                 spread: float = 0.0) -> None:
        self.state = {"name": self.name, "batches": []}
        self.disturbed, self.interrupt_after, self.spread = disturbed, interrupt_after, spread
        self.checked, self.closed, self.ran = None, 0, []

    def check(self, configs) -> None:
        self.checked = list(configs)

    def finished(self, results_dir):
        return finished_runs(results_dir)

    def records(self, results_dir, config_key):
        return host_records(results_dir, config_key=config_key)

    def submit(self, batch, results_dir, notify=lambda: None):
        self.state["batches"].append(len(batch))
        notify()
        try:
            for s in batch:
                if self.interrupt_after is not None and len(self.ran) >= self.interrupt_after:
                    raise KeyboardInterrupt
                task = s.task
                ips = 100.0 * task.config.batch_size * (1 + self.spread * (task.repeat % 2))
                data = record(framework="null", model="tiny_cnn", batch_size=task.config.batch_size,
                              repeat=task.repeat, ips=ips, seed=len(self.ran),
                              flags=DISTURBED if task.attempt == 0 and task.repeat in self.disturbed else None)
                data.update(config_key=task.config.key, attempt=task.attempt, sweep=s.info,
                            config=Record.new(task.config).config.to_json())
                write_record(data, results_dir)
                self.ran.append((task.config.key, task.repeat, task.attempt, s.info["order_index"]))
                yield s
        finally:
            self.closed += 1


def _profile(tmp_path, text: str):
    path = tmp_path / "p.yaml"
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nsettings: {protocol: seed, image_size: 32}\n" + text)
    return load_profile(str(path))


def test_both_executors_and_the_double_have_the_protocol():
    for executor in (LocalExecutor(), make_executor("slurm"), DoubleExecutor()):
        assert isinstance(executor, Executor), executor
    assert not isinstance(object(), Executor)
    LocalExecutor().check([])  # nothing to check on this machine: `bench sweep` calls it whatever the executor


def test_a_sweep_through_an_executor_double_runs_plans_retries_and_finishes(tmp_path):
    profile = _profile(tmp_path, "batch_sizes: [1, 2]\nrepeats: 2\nretries: 1\n")
    results = tmp_path / "results"
    executor = DoubleExecutor(disturbed={1})
    said = []
    result = Sweep(profile, results, progress=False, announce=said.append, executor=executor).execute()
    # two configs x two repeats in one batch; the disturbed repeat 1 of each is retried as the next batch
    assert executor.state["batches"] == [4, 2] and executor.closed == 2
    assert [r[3] for r in executor.ran] == list(range(6))  # order indices follow the queue
    assert sorted((k, r, a) for k, r, a, _ in executor.ran[4:]) == sorted((k, 1, 1) for k in {c.key for c in
                                                                                          profile.configs})
    assert len(result.ran) == 6 and len(result.retried) == 2 and not result.still_disturbed and not result.failures
    [m] = load_sweeps(results)
    assert m == result.manifest and m.status == "finished" and m.runs_done == 6 and m.host == TEST_HOST
    assert [(e.repeat, e.attempt) for e in m.retried] == [(1, 0), (1, 0)] and m.retry_estimate_s > 0
    assert m.executor == {"name": "double", "batches": [4, 2]} and m.peaks == {} and not m.process_walls
    assert len(m.order) == 4 and m.estimate_error is not None and m.elapsed_s >= m.runs_s
    assert said and said[0].startswith(f"sweep {profile.name}: 4 runs to do")
    # resumed: nothing left to do, and the plan says so without running anything
    again = plan(profile, results, executor=DoubleExecutor())
    assert isinstance(again, Plan) and again.tasks == [] and len(again.done) == 4


def test_an_adaptive_sweep_gets_its_extra_processes_one_batch_at_a_time(tmp_path):
    profile = _profile(tmp_path, "batch_sizes: [1]\nrepeats: adaptive\nmax_repeats: 4\nretries: 0\n")
    executor = DoubleExecutor(spread=0.5)
    result = Sweep(profile, tmp_path / "results", progress=False, announce=lambda _: None,
                   executor=executor).execute()
    m = result.manifest
    extra = len(m.extra_processes)
    assert 1 <= extra <= 2 and executor.state["batches"] == [2] + [1] * extra and len(result.extra) == extra
    assert [o.repeat for o in m.order] == list(range(2 + extra)) and m.adaptive.max_repeats == 4
    assert all(e.reason for e in m.extra_processes)


def test_an_interrupted_sweep_closes_the_executor_and_says_how_far_it_got(tmp_path):
    profile = _profile(tmp_path, "batch_sizes: [1, 2]\nrepeats: 2\n")
    results = tmp_path / "results"
    executor = DoubleExecutor(interrupt_after=3)
    with pytest.raises(KeyboardInterrupt):
        Sweep(profile, results, progress=False, announce=lambda _: None, executor=executor).execute()
    [path] = (results / TEST_HOST / "sweeps").glob("*.json")
    m = json.loads(path.read_text())
    assert (m["status"], m["runs_done"], m["finished"] is not None) == ("interrupted", 3, True)
    assert executor.closed == 1 and len(executor.ran) == 3
    resumed = plan(profile, results, executor=DoubleExecutor())
    [left] = resumed.tasks
    assert (left.config.key, left.repeat, 0) not in {r[:3] for r in executor.ran}


def test_a_retry_waits_for_a_quiet_machine_and_its_record_says_how_long(monkeypatch, tmp_path):
    from bench.config import make_config
    from bench.sweep import executors
    from bench.sweep.executors import LocalExecutor, Submission
    from bench.sweep.plan import Task

    ran, looks = [], []
    monkeypatch.setattr(executors, "run_task", lambda task, results_dir, info: ran.append((task.attempt, info)))
    ex = LocalExecutor(wait_until_quiet=lambda: looks.append(1) or {"quiet": True, "waited_s": 12.34,
                                                                     "busy_share": 0.04})
    config = make_config(framework="null", model="tiny_cnn")
    batch = [Submission(Task(config, 0, 0, 0), {"id": "s"}), Submission(Task(config, 0, 0, 1), {"id": "s"})]
    assert len(list(ex.submit(batch, tmp_path))) == 2
    assert len(looks) == 1  # only the retry waited
    assert ran[0][1] == {"id": "s"} and ran[1][1] == {"id": "s", "quiet_wait_s": 12.3, "busy_share_before": 0.04}


def test_a_device_peak_that_cannot_be_measured_leaves_the_other_runs_running(monkeypatch):
    import copy
    from dataclasses import replace

    from bench.config import make_config
    from bench.sweep import measurements
    from bench.sweep.profiles import load_profile

    def fake_peak(device, precision, threads):
        if device.startswith("cuda"):
            raise RuntimeError("'python -m bench peak' failed: torch cannot reach a GPU (no CUDA driver)")
        return {"flops_per_sec": 1e11, "spread": 0.01}

    monkeypatch.setattr(measurements, "measure_peak", fake_peak)
    profile = load_profile("tiny")
    gpu = copy.copy(make_config(framework="torch", model="tiny_cnn"))
    object.__setattr__(gpu, "device", "cuda:0")  # a GPU config this machine would refuse to build
    said: list[str] = []
    peaks = measurements.measure_peaks(replace(profile, configs=(*profile.configs, gpu)), said.append)
    assert [v for k, v in peaks.items() if k.startswith("cuda")] == [None]
    assert all(v for k, v in peaks.items() if not k.startswith("cuda"))  # the CPU's peak is measured as ever
    assert len(said) == 1 and "not measured" in said[0] and "cannot reach a GPU" in said[0]


def test_a_foreign_manifest_of_any_shape_is_skipped_not_a_traceback(tmp_path):
    from bench.results.sweep_manifest import load_sweeps

    folder = tmp_path / "other-host" / "sweeps"
    folder.mkdir(parents=True)
    for name, text in {"list": "[1, 2]", "string": '"x"', "numeric_started": '{"sweep_id": "s", "host": "h", '
                       '"profile": "p", "started": 5}', "peaks_list": '{"sweep_id": "t", "host": "h", "profile": '
                       '"p", "started": "2026", "peaks": [1]}'}.items():
        (folder / f"{name}.json").write_text(text)
    assert load_sweeps(tmp_path) == []
