"""Impossible numbers (efficiency above 100%, a ratio from a disturbed baseline, forward over backward) print as n/a."""

from __future__ import annotations

import matplotlib.pyplot as plt

from bench.measurement.flags import IMPOSSIBLE, forward_backward_flag
from bench.report import figures as F
from bench.report.context import load
from bench.report.style import FLAGGED_HATCH
from bench.report.tables import methodology
from tests.synthetic import record, write

BUSY = [{"name": "disturbed", "reason": "other processes used 67% of the CPUs"}]


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


def test_the_guards_live_in_one_place_and_the_methodology_lists_them(tmp_path):
    assert forward_backward_flag(110.0, 100.0) is None  # within the tolerance
    assert forward_backward_flag(120.0, 100.0).name == "forward_over_backward"
    write([_training(250.0, 500.0, rep) for rep in range(2)], tmp_path)
    text = methodology(load(tmp_path))
    for name, rule in IMPOSSIBLE.items():
        assert f"*{name}*: {rule}." in text
