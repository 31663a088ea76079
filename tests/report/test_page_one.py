"""Page 1 is the answer (issue 42): every framework's images/s [95% CI] at its best engine per row, the fastest starred
(solid only where the row's verdict decides it), each row's verdict and the fastest against PyTorch, the engines said,
and a forest plot of every comparison with the equivalence band."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from bench.report import throughput_grid as G
from bench.report import verdict_figure as V
from bench.report.context import load
from bench.report.estimates import framework_grid, int8_pairs
from tests.synthetic import record, write


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Batch 4: TensorFlow twice PyTorch (a winner); ONNX Runtime in two engines, its best 'all'. Batch 8: TensorFlow
    and PyTorch within 1% of each other, three processes each (not a winner)."""
    runs = []
    for i in range(3):
        runs += [record(framework="torch", batch_size=4, repeat=i, seed=i, ips=10.0 * (1 + 0.01 * i)),
                 record(framework="tensorflow", batch_size=4, repeat=i, seed=10 + i, ips=20.0 * (1 + 0.01 * i)),
                 record(framework="onnxruntime", engine="all", batch_size=4, repeat=i, seed=20 + i,
                        ips=15.0 * (1 + 0.01 * i)),
                 record(framework="onnxruntime", engine="basic", batch_size=4, repeat=i, seed=30 + i,
                        ips=12.0 * (1 + 0.01 * i)),
                 record(framework="torch", batch_size=8, repeat=i, seed=40 + i, ips=19.0 * (1 + 0.02 * i)),
                 record(framework="tensorflow", batch_size=8, repeat=i, seed=50 + i, ips=19.1 * (1 - 0.02 * i))]
    return load(write(runs, tmp_path_factory.mktemp("page1")))


def _row(table, batch):
    return table[table["batch"] == batch].iloc[0]


def test_every_framework_has_its_images_per_second_at_its_best_engine(data):
    grid = framework_grid(data.configs, data.judge)
    table = G.images_table(grid, data.summary, data.best, data.judge)
    assert {"onnxruntime", "tensorflow", "torch", "fastest vs runner-up", "fastest vs torch"} <= set(table)
    four = _row(table, "4")
    # the winner's star is solid; ONNX Runtime at its best engine (named: it ran two), never its slower one
    assert four["tensorflow"].startswith(f"{G.FASTEST} 20") and "[" in four["tensorflow"]
    assert four["onnxruntime"].startswith("15") and "all" in four["onnxruntime"]
    assert four["fastest vs runner-up"].startswith("winner") and "over onnxruntime" in four["fastest vs runner-up"]
    assert four["fastest vs torch"].startswith("2.0") and four["fastest vs torch"].endswith("winner")
    # a row its verdict does not decide gets the open star
    eight = _row(table, "8")
    assert G.FASTEST_OPEN in eight["tensorflow"] + eight["torch"] and G.FASTEST not in eight["tensorflow"]
    assert not eight["fastest vs runner-up"].startswith("winner")
    # the engines said once under the table, the one that varies named in its cells
    line = G.engines_line(grid)
    assert "tensorflow graph" in line and "torch eager" in line and "onnxruntime: named in its cells" in line


def test_the_verdict_picture_draws_each_comparison_once_with_the_band(data):
    grid = framework_grid(data.configs, data.judge)
    points = V.verdict_points(data.summary, data.best, grid, int8_pairs(data.configs, data.judge))
    pairs = [(p["where"][3], p["pair"]) for p in points]
    assert len(pairs) == len(set(pairs))
    # batch 4: TensorFlow over its runner-up ONNX Runtime, and over PyTorch too (PyTorch is not the runner-up)
    assert (4, "tensorflow / onnxruntime") in pairs and (4, "tensorflow / torch") in pairs
    labels = V.labels(points)
    assert all(not label.startswith("resnet50") for label in labels)  # one model: said once, not per label
    fig = V.verdict_forest(points, data.judge)
    band = [p for p in fig.axes[0].patches if p.get_label().startswith("equivalence band")]
    assert band and fig.flag_counts == (0, len(points))
    assert all(t.get_text() for t in fig.axes[0].get_xticklabels())  # readable speed-up ticks, 1x among them
    assert 1.0 in list(fig.axes[0].get_xticks())
    plt.close(fig)


def test_ticks_are_readable_and_include_one():
    assert V.ticks(0.88, 1.75) == [0.9, 1, 1.1, 1.2, 1.3, 1.5]
    many = V.ticks(0.1, 100)
    assert 1 in many and len(many) <= 9
