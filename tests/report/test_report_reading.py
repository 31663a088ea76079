"""What a statistician found reading an exported report, each fixed where the report computes it: one count of runs
everywhere, degrees of freedom from the data, what each comparison compared, a table of the numbers drawn, pipeline
efficiency, legends that list only what occurs, and nothing estimated twice."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from bench.config import make_config
from bench.report import answer, context, coverage, overhead, parallelism, scaling, scaling_text
from bench.report import diagnostics as D
from bench.report import figures as F
from bench.report.parallelism_figures import timelines
from bench.report.sections import frameworks, methodology, throughput
from bench.report.sections.base import Table, all_records
from bench.report.sections.details import DETAILS, measured
from bench.report.sections.details import overhead as details_overhead
from bench.report.sections.display import show_section
from bench.report.sections.findings import findings
from bench.results.record import Record
from bench.results.sweep_manifest import write_sweep
from bench.stats.judge import Judge
from tests.synthetic import config_key_of, dist_record, record, write

HOST, SWEEP = "test-host", "20260101T000000-abcdef"


def _placed(rec: dict, i: int) -> dict:
    """`rec` as a run of the sweep, with the start-up timestamps a real run records."""
    rec["sweep"] = {"id": SWEEP, "order_index": i}
    rec["startup"]["process_start_s"] = 1.5
    return rec


def _files(rec: dict) -> dict:
    """`rec` moved onto real files (the input pipeline's data mode), with its own config key."""
    config = {**rec["config"], "data": "files", "data_images": 64}
    return {**rec, "config": config, "config_key": config_key_of(config), "label": rec["label"] + " files",
            "input": {"pipeline": "torch DataLoader", "source": "procedural", "files": 64, "loader_workers": 1,
                      "cores": 2, "data_wait_s": [0.01] * len(rec["samples"]["timed_s"])}}


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory) -> Path:
    """One finished sweep of every kind of run: torch and tensorflow at batches 1 and 8 (torch at batch 8 in three
    processes), onnxruntime at batch 8 only, one run on real files, and three distributed configs in two processes
    each (1 and 2 independent workers, a two-stage pipeline)."""
    results = tmp_path_factory.mktemp("every-kind")
    single = [record(framework=fw, batch_size=b, repeat=i, seed=10 * b + i, ips=ips * b ** 0.2 * (1 + 0.01 * i),
                     sweep_id=SWEEP, host=HOST)
              for fw, ips, batches in (("torch", 10.0, (1, 8)), ("tensorflow", 11.0, (1, 8)),
                                       ("onnxruntime", 14.0, (8,)))
              for b in batches for i in range(3 if (fw, b) == ("torch", 8) else 2)]
    files = [_files(record(framework="torch", mode="training", batch_size=8, ips=3.0, sweep_id=SWEEP, host=HOST))]
    dist = [dist_record(strategy, workers, step, repeat=i) for strategy, workers, step in
            (("independent", 1, 100.0), ("independent", 2, 110.0)) for i in range(2)]
    for i in range(2):
        pipe = dist_record("gpipe", 2, 300.0, repeat=i, worker_batch=32)
        pipe["config"]["micro_batches"] = 4
        pipe["config_key"] = config_key_of(pipe["config"])
        # the stages train on one batch of 32 together (tests/distributed/test_pipeline.py: _pipeline_record)
        pipe["summary"]["images_per_sec_median"] = 32 / (pipe["summary"]["latency_ms_median"] / 1e3)
        pipe["distributed"]["global_batch"] = 32
        dist.append(pipe)
    for r in dist:
        r["host"] = HOST
    runs = [_placed(r, i) for i, r in enumerate(single + files)] + [{**r, "sweep": {"id": SWEEP, "order_index": 99}}
                                                                    for r in dist]
    write(runs, results)
    order = [{"config_key": r["config_key"], "repeat": r["repeat"], "round": r["repeat"], "label": r["label"]}
             for r in runs]
    write_sweep(results, {"sweep_id": SWEEP, "host": HOST, "profile": "quick", "description": "", "order_seed": 1,
                          "repeats": 2, "retries": 1, "budget_minutes": None, "force": False,
                          "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:30:00Z",
                          "status": "finished", "elapsed_s": 1800.0, "estimate_s": 1500.0, "order": order,
                          "already_done": 0, "dropped": [], "peaks": {}, "retried": [], "networks": {},
                          "not_applicable": []})
    return results


@pytest.fixture(scope="module")
def d(every_kind):
    return context.load(every_kind)


@pytest.fixture(scope="module")
def method(d) -> str:
    """The methodology, without its power resampling (bench/stats/power.py: tens of seconds, and its own tests')."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(methodology.calibration, "resampling_check", lambda *a, **k: None)
        return methodology.methodology(d)


def test_every_count_of_runs_reads_the_same_on_every_surface(d, method):
    """The frameworks table counted only single-process runs on synthetic data while page 1 counted every run, and
    the methodology said '60 successful process runs' beside 72 elsewhere: one split of the runs by kind, everywhere."""
    records = all_records(d)
    (c,) = coverage.coverages(d.sweeps, records)
    split = "11 single-process on synthetic data, 1 on real files, 6 distributed"
    assert c.runs_text() == f"18 of 18 planned runs recorded ({split}) in 18 attempts"
    status = answer.status_line(d, records)
    assert c.runs_text() in status and "of the 11 successful single-process runs on synthetic data" in status
    ok = f"18 successful runs ({split})"
    assert ok in frameworks.render(d).blocks[0].markdown
    # the table's per-framework counts are of the same runs: they add up to page 1's
    statuses = " ".join(frameworks.frameworks_table(records)["status"])
    assert sum(int(n) for n in re.findall(r": (\d+) runs", statuses)) == 18
    assert f"**What ran.** {ok}" in method and "Of the 11 single-process runs on synthetic data" in method
    assert "successful process runs" not in method
    # the overhead table (details) and the methodology's cost paragraph count the same processes: 11 + 1 single
    table = overhead.latest_sweep_overhead(records, d.sweeps)
    assert int(table.set_index("component").loc["all", "processes"]) == 12
    assert "of its 12 single-process runs that recorded their start-up (synthetic data and real files" in method


def test_the_degrees_of_freedom_in_the_methodology_come_from_the_configs(d, method):
    """The text said '2-4 processes ... 1-3 degrees of freedom' whatever the plan ran."""
    assert ("With 2-3 processes a config's own between-process variance has 1-2 degrees of freedom (t up to 12.7)"
            in method)
    assert "2-4 processes" not in method
    assert methodology.own_spread_text(d.configs[d.configs["processes"] == 2], d.judge).startswith(
        "With 2 processes a config's own between-process variance has 1 degree of freedom (t = 12.7)")


def test_findings_say_which_frameworks_each_row_compared(d):
    """Batch 1 compared only TensorFlow and PyTorch, batch 8 three frameworks: the findings say so, row by row."""
    said = findings(d.configs, d.summary, d.best, d.judge)
    first = next(f for f in said if "compared different frameworks at different batches" in f)
    # the best-batch row names which batches each framework ran: its pick is among those only
    best = "tensorflow, torch at batches 1 and 8; onnxruntime at batch 8 only"
    assert "batch 1: tensorflow, torch" in first and "batch 8: onnxruntime, tensorflow, torch" in first
    assert f"each framework at its best batch: {best}" in first
    table, _ = answer.answer_table(d.summary, d.best, Judge())
    assert table["compared"].tolist() == ["tensorflow, torch", "onnxruntime, tensorflow, torch", best]
    assert table["batch"].iloc[-1].startswith("best (")  # the model and mode's row over every framework measured
    stated = [f for f in said if f.startswith("resnet50 inference, batch ")]
    assert stated and all(" compared)" in f for f in stated)


def test_a_table_gives_every_number_drawn_with_its_interval(d):
    """No table in the report or the details gave a framework's images/s: the details do, the report points there."""
    assert "Measured images/s, every framework and batch size" in throughput.render(d).blocks[0].markdown
    assert measured in DETAILS
    t = [b.frame for b in measured.render(d).blocks if isinstance(b, Table)][0]
    assert list(t.columns) == ["model", "mode", "framework", "batch 1", "batch 8"]
    torch = t[t["framework"] == "torch"].iloc[0]
    c = d.configs[(d.configs["series"] == "torch") & (d.configs["batch_size"] == 8)].iloc[0]
    assert torch["batch 8"] == (f"{c['images_per_sec_median']:.1f} [{c['images_per_sec_ci_low']:.1f}-"
                                f"{c['images_per_sec_ci_high']:.1f}] (3)")
    assert t[t["framework"] == "onnxruntime"].iloc[0]["batch 1"] == ""


def test_the_details_show_the_per_process_overhead_table(d, monkeypatch):
    """A notebook cell shows only its last expression: every block of a section is displayed, the table included."""
    shown = []
    monkeypatch.setattr("bench.report.sections.display.display", shown.append)
    show_section(details_overhead.render(d))
    assert any("report-table" in getattr(s, "data", "") and "timed loop" in s.data for s in shown)


def test_pipeline_rows_give_their_efficiency_against_one_worker(d):
    """The distributed table left a pipeline's efficiency blank: against the one-worker run (at its own batch,
    named) with the interval, in the scaling table and the parallelism table alike."""
    t = d.scaling.table.set_index("strategy")
    text = scaling_text.efficiency_text(t.loc["gpipe"])
    assert text.endswith("(vs 1 worker at batch 16)") and "%" in text
    assert "vs 1 worker" not in scaling_text.efficiency_text(t.loc["independent"].query("workers == 2").iloc[0])
    expected = (32 / 0.3) / (2 * 16 / 0.1)
    assert t.loc["gpipe", "efficiency_raw"] == pytest.approx(expected, rel=0.05)
    shown = scaling_text.scaling_for_display(d.scaling.table)
    assert shown.loc[shown["run"].str.contains("gpipe"), "efficiency [CI]"].iloc[0] == text
    p = parallelism.for_display(d.scaling.parallelism)
    assert text in p["efficiency vs 1 worker [95% CI]"].tolist()
    # a row with no one-worker run to divide by says so instead of a blank
    lonely = d.scaling.table[d.scaling.table["strategy"] == "gpipe"].assign(efficiency=None,
                                                                            eff_why=scaling.NO_ONE_WORKER)
    assert scaling_text.efficiency_text(lonely.iloc[0]).startswith("n/a: no 1-worker")


def test_the_drift_legend_lists_flagged_processes_only_when_one_was_flagged(d):
    procs = d.processes
    assert procs["clean"].all()
    fig = D.drift_timeline(procs)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels and not any("flagged" in x for x in labels)
    flagged = procs.copy()
    flagged.loc[flagged.index[0], "clean"] = False
    labels = [t.get_text() for t in D.drift_timeline(flagged).axes[0].get_legend().get_texts()]
    assert sum("(flagged)" in x for x in labels) == 1
    plt.close("all")


def test_the_config_tables_and_the_distributed_spreads_are_built_once(every_kind, monkeypatch):
    calls = {"config_tables": 0, "spreads_of": 0}

    def counting(name, real):
        def wrapped(*a, **kw):
            calls[name] += 1
            return real(*a, **kw)
        return wrapped

    monkeypatch.setattr(context, "config_tables", counting("config_tables", context.config_tables))
    spreads = counting("spreads_of", scaling.spreads_of)
    monkeypatch.setattr(scaling, "spreads_of", spreads)
    monkeypatch.setattr(parallelism, "spreads_of", spreads)
    d = context.load(every_kind)
    assert not d.scaling.parallelism.empty and d.inputs is not None
    assert calls == {"config_tables": 1, "spreads_of": 1}


def test_a_failed_distributed_run_counts_as_distributed():
    config = make_config(framework="torch", model="resnet18", mode="training", batch_size=16, image_size=32,
                         strategy="allreduce", workers=2, warmup=1, iterations=2)
    assert coverage.run_kind(Record.failure(config, "it broke")) == coverage.DISTRIBUTED


def test_bar_labels_are_left_out_where_they_would_run_into_each_other(d):
    """Text on narrow bars overlapped (each framework's best batch; a pipeline timeline's micro-batch numbers)."""
    fig = F.per_framework(d.configs)[0]
    fig.canvas.draw()
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    assert "onnxruntime\nbest bs 8\nno bs 32" in ticks and "torch\nbest bs 8\nno bs 32" in ticks
    assert not [t.get_text() for ax in fig.axes for t in ax.texts if "bs" in t.get_text()]
    # a timeline writes a micro-batch's number only on a bar wide enough to hold it
    line = [("forward", 0, 0.0, 0.001), ("forward", 1, 0.001, 0.002), ("backward", 0, 0.002, 0.1)]
    fig = timelines([{"label": "GPipe, m = 2", "measured": [line], "expected": [line]}])[0]
    assert [t.get_text() for ax in fig.axes for t in ax.texts] == ["0", "0"]
    plt.close("all")
