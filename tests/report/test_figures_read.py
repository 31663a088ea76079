"""Figures read as a reader sees them in the PDF (issue 55): the throughput curves on their own precision's axis, a
scaling verdict said from the strategy's side, one unit per axis."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from bench.report import figures as F  # noqa: E402
from bench.report import scaling_figures as SF  # noqa: E402
from bench.stats.verdicts import judge  # noqa: E402
from tests.report.test_figures import configs  # noqa: E402


def test_an_int8_point_does_not_stretch_the_fp32_curves():
    fp32 = configs()
    int8 = fp32[(fp32["framework"] == "torch") & (fp32["batch_size"] == 8)].assign(
        precision="int8", series="torch int8", images_per_sec_median=250.0, images_per_sec_ci_low=240.0,
        images_per_sec_ci_high=260.0)
    figs = F.per_hardware(pd.concat([fp32, int8], ignore_index=True))
    assert len(figs) == 1  # int8 measured at one batch: no curve of its own here (its section shows it)
    top = max(ax.get_ylim()[1] for ax in figs[0].axes if ax.get_visible())
    assert top < 200  # every fp32 curve keeps its scale (the largest fp32 value is about 57)
    for fig in figs:
        plt.close(fig)


def test_a_scaling_efficiency_verdict_is_said_from_the_strategys_side():
    below = judge(0.34, 0.30, 0.38, 0.05)
    assert SF._against_linear(below) == "winner: below linear"
    assert SF._against_linear(judge(0.98, 0.7, 1.3, 0.05)) == "undecided"
    assert SF._against_linear(None) == ""
