"""Where a process's seconds go (the per-process overhead table) and the estimate that uses them, from synthetic
records with known timestamps."""

import pytest

from bench.config import make_config
from bench.report.overhead import estimate_text, overhead_table, process_seconds, sweep_cost_text, to_text
from bench.results.record import Record, Startup, SweepPlacement
from bench.results.sweep_manifest import estimate_error, wall_key
from bench.sweep.plan import PROCESS_OVERHEAD_S, estimate_run_s, fixed_cost_s, startup_history
from tests.synthetic import record

PARTS = dict(process_start_s=4.0, prepare_s=3.0, warmup_s=2.0, timed_s=6.0, phases_s=1.0, checks_s=0.5,
             manifest_s=0.5)


def _timed(repeat: int, wall_outside: float = 2.0, **parts) -> tuple[Record, float]:
    """A record whose run spent `parts` (plus 0.25 s of rest), and the wall time its manifest would hold."""
    r = Record.from_json(record(repeat=repeat, seed=repeat))
    parts = {**PARTS, **parts}
    r.startup = Startup(first_iteration_s=0.1, **parts)
    r.duration_s = sum(v for k, v in parts.items() if k != "process_start_s") + 0.25
    return r, parts["process_start_s"] + r.duration_s + wall_outside


def test_the_components_add_up_to_each_process_wall_time():
    timed = [_timed(0), _timed(1, phases_s=0.0)]
    records = [r for r, _ in timed]
    walls = {wall_key(r.config_key, r.repeat, r.attempt): w for r, w in timed}
    table = overhead_table(records, walls).set_index("component")
    total = table.loc["all", "total_s"]
    assert total == pytest.approx(sum(walls.values()))
    assert table.drop(index="all")["total_s"].sum() == pytest.approx(total)  # nothing unexplained
    assert table.loc["phases", "processes"] == 1  # the phase pass ran in the first repetition only
    assert table.loc["outside", "median_s"] == pytest.approx(2.0) and table.loc["other", "median_s"] == 0.25
    assert table.loc["all", "share"] == pytest.approx(12.0 / total)  # the timed loops' share is measurement
    assert "timed" in to_text(overhead_table(records, walls))


def test_the_report_states_the_timed_share_and_leaves_the_table_to_the_details():
    timed = [_timed(0), _timed(1)]
    records = [r for r, _ in timed]
    sweep_id = "s1"
    for r in records:
        r.sweep = SweepPlacement(id=sweep_id)
    walls = {wall_key(r.config_key, r.repeat, r.attempt): w for r, w in timed}
    manifest = {"sweep_id": sweep_id, "process_walls": walls, "estimate_s": 60.0, "runs_s": 50.0,
                "estimate_error": 0.2, "adaptive": {"min_repeats": 2, "max_repeats": 4},
                "extra_processes": [{"label": "x", "repeat": 2, "reason": "interval straddled 1x"}]}
    text = sweep_cost_text(records, [manifest])
    share = overhead_table(records, walls).set_index("component").loc["all", "share"]
    assert f"{share:.0%} of the wall time of its 2 single-process runs that recorded their start-up" in text
    assert "details" in text
    assert "| timed |" not in text and "1 of its processes beyond the minimum" in text


def test_records_without_timestamps_are_left_out_and_no_wall_time_means_no_outside_row():
    old = Record.from_json(record(repeat=0))  # written before the timestamps: prepare_s only
    timed, _ = _timed(1)
    assert list(process_seconds([old, timed])["repeat"]) == [1]
    table = overhead_table([old, timed]).set_index("component")
    assert "outside" not in table.index and table.loc["all", "total_s"] == pytest.approx(4.0 + timed.duration_s)


def test_the_fixed_cost_comes_from_the_manifests_wall_times():
    timed = [_timed(r, wall_outside=o) for r, o in ((0, 10.0), (1, 12.0), (2, 14.0))]
    records = [r for r, _ in timed]
    walls = {wall_key(r.config_key, r.repeat, r.attempt): w for r, w in timed}
    # wall - duration = process start (4 s) + outside
    assert fixed_cost_s(walls, records) == pytest.approx(4.0 + 12.0)
    assert fixed_cost_s({}, records) is None


def test_startup_history_by_model_then_by_engine():
    a = Record.from_json(record(framework="torch", model="resnet50", repeat=0))
    b = Record.from_json(record(framework="torch", model="vgg16", repeat=0, seed=1))
    a.startup, b.startup = Startup(prepare_s=2.0), Startup(prepare_s=6.0)
    got = startup_history([a, b])
    assert got[("torch", a.config.engine, "resnet50", "fp32")] == 2.0 and got[("torch", a.config.engine, "fp32")] == 4.0


def test_the_estimate_charges_every_process_its_fixed_cost():
    c = make_config(framework="torch", model="resnet50", batch_size=8, protocol="seed", warmup=2, iterations=4,
                    phase_iterations=0)
    flops, peak = 4e9, 100e9
    loop = flops * 8 / (peak * 0.55) * 6
    assert estimate_run_s(c, 1, [], flops, peak) == pytest.approx(PROCESS_OVERHEAD_S + 5.0 + loop)
    assert estimate_run_s(c, 1, [], flops, peak, overhead_s=20.0, startup_s=1.0) == pytest.approx(21.0 + loop)
    assert estimate_run_s(c, 1, [30.0, 50.0], flops, peak, overhead_s=20.0) == pytest.approx(60.0)  # history


def test_estimate_error_and_its_sentence():
    assert estimate_error(60.0, 50.0) == pytest.approx(0.2) and estimate_error(None, 50.0) is None
    text = estimate_text({"estimate_s": 600.0, "runs_s": 750.0, "estimate_error": estimate_error(600.0, 750.0)})
    assert text == "estimated 10.0 min, took 12.5 min for its runs (estimate error -20%)"


def test_an_adaptive_sweeps_estimate_is_judged_on_its_rounds_not_on_the_budget_it_fills():
    # last session's report: "estimated 20.0 min, took 18.1 (estimate error +11%)": the estimate was the budget by
    # construction (the extra processes are sized to fill it), so the error said nothing
    order = [{"config_key": k, "repeat": r, "round": r} for k in ("a", "b") for r in (0, 1)]
    order.append({"config_key": "a", "repeat": 2, "round": None})  # an extra process of the plan
    walls = {"a/0/0": 60.0, "b/0/0": 90.0, "a/1/0": 60.0, "b/1/0": 90.0, "a/1/1": 60.0, "a/2/0": 300.0}
    m = {"estimate_s": 1200.0, "rounds_estimate_s": 270.0, "runs_s": 1086.0, "estimate_error": 0.105,
         "adaptive": {"min_repeats": 2, "max_repeats": 6}, "order": order, "process_walls": walls,
         "extra_processes": [{"config_key": "a", "label": "a", "repeat": 2, "reason": "undecided"}]}
    text = estimate_text(m)
    # the rounds: 4 first attempts (the retry a/1/1 and the extra a/2/0 are not the rounds' own) took 300 s
    assert text.startswith("its rounds (4 processes) estimated 4.5 min, took 5.0 min (estimate error -10%)")
    assert "1 extra process of the adaptive plan, 18.1 min of runs in all" in text and "+11%" not in text


def test_the_report_lists_each_named_profile_not_run_here_with_its_command():
    from bench.report.not_run import NAMED, not_run, not_run_text

    rows = not_run([{"profile": "quick"}, {"profile": "engines"}])
    assert [r["profile"] for r in rows] == [n for n in NAMED if n != "engines"]
    assert all(r["command"] == f"make sweep PROFILE={r['profile']} && make render" and r["description"]
               and "does not load" not in r["description"] for r in rows)
    assert "`memory`" in not_run_text([{"profile": "engines"}]) and "`engines`" not in not_run_text(
        [{"profile": "engines"}]) and "make sweep PROFILE=<name> && make render" in not_run_text([])
    assert not_run_text([{"profile": n} for n in NAMED]) == ""


def test_a_profile_of_largest_batch_searches_alone_loads_with_no_timed_runs(tmp_path):
    from bench.sweep.profiles import load_profile

    path = tmp_path / "m.yaml"
    path.write_text("memory:\n  - frameworks: [torch]\n    models: [tiny_cnn]\n    modes: [training]\n")
    p = load_profile(str(path))
    assert p.configs == () and [c.framework for c, _, _ in p.memory_searches] == ["torch"]


def test_kernels_get_the_cpu_description_read_once_by_the_sweep(monkeypatch):
    """py-cpuinfo costs every fresh process about 1.5 s; the sweep reads it once and passes it down."""
    import os

    from bench.host import devices
    from bench.sweep.jupyter_kernels import kernel_environment

    devices.cpu_info.cache_clear()
    mine = devices.cpu_info()
    with kernel_environment():
        passed = os.environ[devices.CPU_INFO_ENV]
    assert devices.CPU_INFO_ENV not in os.environ  # restored afterwards
    monkeypatch.setenv(devices.CPU_INFO_ENV, passed)
    devices.cpu_info.cache_clear()
    monkeypatch.setattr("cpuinfo.get_cpu_info", lambda: pytest.fail("the CPU was read again in the kernel"))
    assert devices.cpu_info() == mine and devices.cpu_brand() == mine["brand_raw"]
    monkeypatch.setenv(devices.CPU_INFO_ENV, "not json")  # a malformed value: the CPU is read itself
    monkeypatch.setattr("cpuinfo.get_cpu_info", lambda: {"brand_raw": "read again"})
    devices.cpu_info.cache_clear()
    assert devices.cpu_brand() == "read again"
    monkeypatch.undo()
    devices.cpu_info.cache_clear()


def test_the_cost_paragraph_counts_each_caches_hits_and_misses():
    timed = [_timed(0, prepare_s=12.0), _timed(1, prepare_s=2.0), _timed(2, prepare_s=3.0)]
    records = [r for r, _ in timed]
    for r, outcome in zip(records, ("miss", "hit", "hit")):
        r.sweep = SweepPlacement(id="s1")
        r.startup.build_cache = {"onnx_export": outcome}
    manifest = {"sweep_id": "s1", "process_walls": {wall_key(r.config_key, r.repeat, r.attempt): w for r, w in timed}}
    text = sweep_cost_text(records, [manifest])
    assert "onnx_export: 2 hits (build median 2.5 s), 1 miss (build median 12.0 s)" in text
    records[0].startup.build_cache = None  # records written before the caches existed say nothing
    assert "onnx_export: 2 hits (build median 2.5 s)." in sweep_cost_text(records, [manifest])


def test_the_adaptive_estimate_counts_the_first_iteration_and_the_minimum_of_steady_ones():
    # the first iteration, then at least MIN_STEADY_ITERATIONS timed (the steady window among them), whatever
    # `iterations` asks below it; the timed loop's cap bounds it
    from bench.measurement.loop import MIN_STEADY_ITERATIONS, TIMED_CAP_S

    c = make_config(framework="torch", model="resnet50", batch_size=8, warmup=3, iterations=3, time_budget_s=0.1,
                    phase_iterations=0)
    flops, peak = 4e9, 100e9
    iteration = flops * 8 / (peak * 0.55)
    assert estimate_run_s(c, 1, [], flops, peak, overhead_s=0.0, startup_s=0.0) == pytest.approx(
        (1 + MIN_STEADY_ITERATIONS) * iteration)
    assert estimate_run_s(c, 1, [], flops, peak / 100, overhead_s=0.0, startup_s=0.0) == pytest.approx(
        100 * iteration + TIMED_CAP_S)


def _run_notebook_calls(monkeypatch, tmp_path, config) -> dict:
    from bench.sweep import task
    from bench.sweep.plan import Task

    calls = {}
    monkeypatch.setattr(task, "execute_masked", lambda notebook, out, **kw: calls.update(notebook=notebook, **kw))
    task.run_notebook(config, tmp_path, Task(config, 0, 0), {"id": "s"})
    return calls


def test_a_sweep_process_draws_no_plot_and_its_kernel_is_stopped_once_its_cells_ran(monkeypatch, tmp_path):
    single = _run_notebook_calls(monkeypatch, tmp_path, make_config(framework="torch", model="tiny_cnn"))
    assert single["parameters"]["plots"] is False  # the record keeps every iteration: the trace can be drawn later
    assert single["shutdown_kernel"] == "immediate"  # no graceful exit to wait for: the record is written by then
    ranks = _run_notebook_calls(monkeypatch, tmp_path, make_config(
        framework="torch", model="tiny_cnn", mode="training", strategy="allreduce", workers=2))
    assert "plots" not in ranks["parameters"] and ranks["notebook"].name == "distributed.ipynb"


def test_the_run_notebook_imports_no_plotting_before_its_run():
    # a sweep process's start-up is counted against its measurement: matplotlib and the report's views come after
    import json
    import os
    import subprocess
    import sys

    from bench.paths import PROJECT_ROOT

    notebook = json.loads((PROJECT_ROOT / "notebooks" / "benchmark.ipynb").read_text())
    before = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            before += [line for line in source.splitlines() if line.lstrip().startswith(("from ", "import ", "%"))]
            if "run(config" in source:
                break
    assert before and not any(line.startswith("%") for line in before), before
    check = "\n".join(before) + "\nimport sys\nassert 'matplotlib' not in sys.modules, 'matplotlib before the run'\n"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=PROJECT_ROOT,
                          env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("timed, label", [(3, "75% CI"), (6, "95% CI")])
def test_the_run_summary_names_the_coverage_its_interval_reached(timed, label):
    from bench.report.views import run_summary
    from bench.stats.intervals import summarize_latencies

    r = Record.from_json(record(repeat=0, seed=0))
    r.samples.timed_s = [0.1, 0.11, 0.105, 0.1, 0.102, 0.104][:timed]
    summary = summarize_latencies(r.samples.timed_s, r.config.batch_size)
    for key, value in summary.items():
        setattr(r.summary, key, value)
    assert f">{label}<" in run_summary(r).data
