"""Impossible numbers (efficiency above 100%, a ratio from a disturbed baseline, forward over backward) print as n/a."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from bench.measurement import flags
from bench.measurement.flags import (
    EFFICIENCY_TOLERANCE,
    FLAG_SCOPE,
    GUARDS,
    IMPOSSIBLE,
    RULE,
    Rule,
    forward_backward_flag,
)
from bench.report import figures as F
from bench.report import scaling as S
from bench.report import scaling_figures as SF
from bench.report import scaling_text as ST
from bench.report.context import load
from bench.report.sections.methodology import methodology
from bench.report.style import ALL_FLAGGED, FLAGGED_HATCH
from tests.synthetic import dist_record, record, write

BUSY = [{"name": "disturbed", "reason": "other processes used 67% of the CPUs"}]


def _percentages(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"(\d+)%", text)]


def _scaling(tmp_path, one_worker_ms: float, two_worker_ms: float, one_worker_flags=None):
    recs = []
    for rep in range(3):
        recs += [dist_record("independent", 1, one_worker_ms, rep, flags=one_worker_flags),
                 dist_record("independent", 2, two_worker_ms, rep),
                 dist_record("allreduce", 2, two_worker_ms * 1.2, rep, comm_ms=5.0, overlap=0.2)]
    write(recs, tmp_path)
    return load(tmp_path).scaling


def _row(table, strategy: str, workers: int):
    return table[(table["strategy"] == strategy) & (table["workers"] == workers)].iloc[0]


def test_a_disturbed_one_worker_baseline_gives_efficiency_na_with_the_reason(tmp_path):
    # the baseline: one slow, disturbed worker, so the ratio would read 150% and more
    data = _scaling(tmp_path, 300.0, 100.0, one_worker_flags=BUSY)
    ar = _row(data.table, "allreduce", 2)
    assert pd.isna(ar["efficiency"])
    assert "disturbed_baseline" in [f.name for f in ar["efficiency_flags"]]
    shown = ST.scaling_for_display(data.table)
    cells = [c for c in shown["efficiency [CI]"] if c]
    assert cells and all(c.startswith("n/a (disturbed_baseline: the 1-worker baseline is not sound") for c in cells)
    assert all(p <= 100 for c in cells for p in _percentages(c.split("(", 1)[0]))
    text = " ".join(ST.findings(data))
    assert "allreduce x2 (loopback; 25 MB buckets): scaling efficiency n/a (disturbed_baseline" in text
    assert "67% of the CPUs" in text
    fig = SF.efficiency(data.table)  # every row guarded: the title says so
    assert fig.axes[0].get_title().endswith(f"({ALL_FLAGGED})") and not fig.axes[0].patches
    plt.close(fig)
    assert not [p for p in _percentages(text) if p > 100 + 100 * EFFICIENCY_TOLERANCE], text


def test_an_efficiency_above_100_percent_from_clean_data_is_na_with_its_flag(tmp_path):
    data = _scaling(tmp_path, 100.0, 80.0)  # 2 workers in 80 ms against 1 in 100 ms: 125%
    ind = _row(data.table, "independent", 2)
    assert [f.name for f in ind["efficiency_flags"]] == ["efficiency_over_100"]
    assert ind["efficiency_raw"] == pytest.approx(1.25, rel=0.03) and pd.isna(ind["efficiency"])
    shown = ST.scaling_for_display(data.table)
    assert any(c.startswith("n/a (efficiency_over_100: weak-scaling efficiency above 105%")
               for c in shown["efficiency [CI]"])
    fig = SF.efficiency(data.table)
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert "n/a (efficiency_over_100)" in texts and ALL_FLAGGED not in fig.axes[0].get_title()
    assert not any(int(t[:-1]) > 100 + 100 * EFFICIENCY_TOLERANCE for t in texts if t[:-1].isdigit())
    plt.close(fig)


def test_a_sane_scaling_run_still_prints_its_numbers(tmp_path):
    data = _scaling(tmp_path, 100.0, 150.0)
    ar = _row(data.table, "allreduce", 2)
    assert not ar["efficiency_flags"] and not ar["comm_flags"] and not ar["phase_flags"]
    assert ar["efficiency"] == pytest.approx(100 / 180, rel=0.03)
    text = " ".join(ST.findings(data))
    assert "allreduce x2 (loopback; 25 MB buckets): scaling efficiency 56%" in text
    assert "n/a" not in text


def _training(forward_ms: float, backward_ms: float, rep: int) -> dict:
    r = record(mode="training", ips=10.0, repeat=rep, seed=rep)  # batch 8 at 10 img/s: an 800 ms step
    phases = {"forward": forward_ms, "backward": backward_ms, "update": 800 - forward_ms - backward_ms}
    r["phases"] = {"iterations": 12, "method": "synthetic", "median_ms": phases}
    return r


def test_a_forward_longer_than_its_backward_is_flagged_and_drawn_flagged(tmp_path):
    write([_training(500.0, 250.0, rep) for rep in range(3)], tmp_path)
    d = load(tmp_path)
    row = d.configs.iloc[0]
    assert "forward_over_backward" in row["flags"] and row["sound"]  # the throughput itself stays usable
    fig = F.phase_breakdown(d.configs)
    ax = fig.axes[0]
    assert all(p.get_hatch() == FLAGGED_HATCH for p in ax.patches if p.get_width() > 0)
    assert any("forward_over_backward (flagged)" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_a_sane_training_breakdown_is_drawn_plain(tmp_path):
    write([_training(250.0, 500.0, rep) for rep in range(3)], tmp_path)
    d = load(tmp_path)
    assert "forward_over_backward" not in d.configs.iloc[0]["flags"]
    fig = F.phase_breakdown(d.configs)
    assert not any(p.get_hatch() for p in fig.axes[0].patches)
    plt.close(fig)


def test_a_distributed_forward_over_backward_is_na_in_the_table_and_flagged_in_the_chart(tmp_path):
    recs = []
    for rep in range(3):
        r = dist_record("allreduce", 2, 200.0, rep)
        r["phases"]["median_ms"].update(forward=120.0, backward=60.0)
        recs += [r, dist_record("independent", 1, 100.0, rep)]
    write(recs, tmp_path)
    data = load(tmp_path).scaling
    shown = ST.scaling_for_display(data.table)
    assert any("step breakdown n/a (forward_over_backward: training forward 120 ms exceeds its backward 60 ms"
               in c for c in shown["flags"])
    fig = SF.phases(data.table)
    ax = fig.axes[0]
    assert any(p.get_hatch() == FLAGGED_HATCH for p in ax.patches)
    assert any("forward_over_backward (flagged)" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_the_guards_live_in_one_place_and_the_methodology_lists_them(tmp_path):
    assert forward_backward_flag(110.0, 100.0) is None  # within the tolerance
    assert forward_backward_flag(120.0, 100.0).name == "forward_over_backward"
    write([_training(250.0, 500.0, rep) for rep in range(2)], tmp_path)
    text = methodology(load(tmp_path))
    for name, rule in IMPOSSIBLE.items():
        assert f"*{name}*: {rule}." in text
    for rule in GUARDS:  # every other rule with a sentence is listed among the guards, as its rule object states it
        assert rule.methodology_line() in text


def test_a_new_rule_s_sentence_reaches_the_methodology_from_its_rule_alone(tmp_path, monkeypatch):
    write([_training(250.0, 500.0, rep) for rep in range(2)], tmp_path)
    new = Rule("made_up_guard", "throughput", "a sentence only this rule states")
    monkeypatch.setattr(flags, "GUARDS", [*GUARDS, new])
    assert "- *made_up_guard*: a sentence only this rule states." in methodology(load(tmp_path))
    assert set(FLAG_SCOPE) == set(RULE) and all(FLAG_SCOPE[n] == RULE[n].scope for n in RULE)


FIT = {"alpha_s": 5e-5, "bandwidth_Bps": 1e9, "r2": 0.99}
NETWORKS = {"test-host": {"loopback x2": {"key": "loopback x2", "fit_allreduce": FIT, "fit_p2p": FIT}}}


@pytest.mark.parametrize("disturbed", [True, False])
def test_a_prediction_from_a_disturbed_independent_baseline_is_na(tmp_path, disturbed):
    recs = []
    for rep in range(3):
        recs += [dist_record("independent", 1, 100.0, rep),
                 dist_record("independent", 2, 150.0, rep, flags=BUSY if disturbed else None),
                 dist_record("allreduce", 2, 200.0, rep, comm_ms=40.0, overlap=0.2)]
    write(recs, tmp_path)
    table = load(tmp_path).scaling.table
    ar = _row(table, "allreduce", 2)
    pred = S.predictions(table, NETWORKS)
    shown = ST.predictions_for_display(pred).iloc[0]
    comm = ST.scaling_for_display(table)["comm. cost ms/step [CI]"]
    if disturbed:
        assert [f.name for f in ar["comm_flags"]] == ["disturbed_baseline"] and pd.isna(ar["comm_cost_ms"])
        assert any(c.startswith("n/a (disturbed_baseline: the independent baseline at the same N") for c in comm)
        assert shown["predicted ms"].startswith("n/a (disturbed_baseline") and shown["error"].startswith("n/a (")
        fig = SF.predicted_vs_measured(pred)  # its only point is guarded: no point drawn, and the title says so
        assert not fig.axes[0].collections and ALL_FLAGGED in fig.axes[0].get_title()
        plt.close(fig)
    else:
        assert ar["comm_cost_ms"] == pytest.approx(50.0, rel=0.03)
        assert float(shown["predicted ms"]) > 150 and shown["error"].endswith("%")
        plt.close(SF.predicted_vs_measured(pred))


def test_a_guarded_ceiling_is_na_in_a_sound_finding(tmp_path):
    recs = []
    for rep in range(3):  # the independent x2 run beats 2 x one worker (impossible); all-reduce is sane
        recs += [dist_record("independent", 1, 100.0, rep), dist_record("independent", 2, 80.0, rep),
                 dist_record("allreduce", 2, 200.0, rep, comm_ms=40.0, overlap=0.2)]
    write(recs, tmp_path)
    text = " ".join(ST.findings(load(tmp_path).scaling))
    assert "scaling efficiency 50% [" in text
    assert "(ceiling without communication: n/a (efficiency_over_100: weak-scaling efficiency above 105%" in text


def test_sandblasters_per_step_batch_count_is_never_printed_as_its_throughput(tmp_path):
    # one L-BFGS iteration works through the whole training set: batch x workers per step is not its rate
    recs = []
    for rep in range(2):
        recs += [dist_record("allreduce", 2, 100.0, rep, comm_ms=5.0),
                 dist_record("sandblaster", 2, 400.0, rep, model="digits_mlp", image_size=8)]
    write(recs, tmp_path)
    shown = ST.scaling_for_display(load(tmp_path).scaling.table)
    cells = dict(zip(shown["run"], shown["images/s [95% CI]"]))
    assert [c for r, c in cells.items() if "sandblaster" in r] == ["n/a: a batch method, see accuracy over time"]
    assert all(c[0].isdigit() for r, c in cells.items() if "sandblaster" not in r)
