"""Distributed rows follow the four-verdict rule: scaling efficiency and communication cost get the sweep-moderated
interval and bench/stats/verdicts.py's verdict, an interval past what weak scaling can reach is shown clipped and
undecided, a finding states a scaling result only when decided, and the adaptive plan stops giving a decided row
processes."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from bench.config import make_config
from bench.measurement import scaling_pairs as C
from bench.report import scaling_figures as SF
from bench.report import scaling_text as ST
from bench.report.context import load
from bench.stats.judge import Judge
from bench.stats.moderated import SweepSpreads
from bench.stats.verdicts import UNDECIDED, WINNER
from bench.sweep.plan import OTHER, PAGE_ONE, SOLO_TARGET, next_process
from tests.synthetic import dist_record, write

LAYOUT = (("independent", 1, 100.0), ("independent", 2, 150.0), ("allreduce", 2, 200.0))


def _scaling(tmp_path, spread: float, repeats: int = 3):
    """The default profile's scaling section, each process's step `spread` (relative, seeded) around its mean."""
    rng = np.random.default_rng(7)
    recs = [dist_record(s, w, ms * float(np.exp(spread * rng.standard_normal())), rep, comm_ms=40.0)
            for rep in range(repeats) for s, w, ms in LAYOUT]
    write(recs, tmp_path)
    data = load(tmp_path).scaling
    return data, data.table.set_index(["strategy", "workers"])


def test_a_clear_efficiency_is_decided_and_stated(tmp_path):
    data, t = _scaling(tmp_path, 0.0)
    ar = t.loc[("allreduce", 2)]
    assert ar["eff_verdict"].word == WINNER and ar["eff_ci_high"] < 1 and not ar["eff_clipped"]
    assert ar["efficiency"] == pytest.approx(0.5, rel=0.03)
    assert ar["comm_verdict"].word == WINNER and ar["comm_ci_low"] > 0  # 200 against 150 ms: communication costs
    assert ar["comm_cost_ms"] == pytest.approx(50.0, rel=0.05)
    text = " ".join(ST.findings(data))
    assert "allreduce x2 (loopback; 25 MB buckets): scaling efficiency 50% [" in text
    # the one verdict form (bench/stats/verdicts.py: phrase): the word, then its direction; never 'below linear
    # (winner)'
    assert "scaling efficiency 50% [49%-51%]: winner: linear scaling faster (efficiency below linear)" in text
    assert "communication cost 50 ms per step [" in text and "]: winner: the independent run faster" in text
    assert "(winner)" not in text
    assert UNDECIDED not in text
    shown = ST.scaling_for_display(data.table).set_index("run")
    assert shown.loc["torch resnet18 32px, allreduce x2", "efficiency [CI]"] == "50% [49%-51%]"


def test_an_efficiency_the_data_cannot_tell_is_undecided_clipped_and_says_what_would_decide_it(tmp_path):
    data, t = _scaling(tmp_path, 0.5, repeats=2)  # pooled over the 3 configs, 0.35 already decides
    ar = t.loc[("allreduce", 2)]
    assert ar["eff_verdict"].word == UNDECIDED
    # the interval as computed passes what weak scaling can reach; the one shown stops there, marked
    assert ar["eff_ci_high_raw"] > C.EFFICIENCY_BOUND and ar["eff_ci_high"] == C.EFFICIENCY_BOUND
    assert ar["eff_clipped"] and ar["eff_ci_low"] < ar["efficiency"] <= ar["eff_ci_high"]
    cell = ST.scaling_for_display(data.table).set_index("run").loc["torch resnet18 32px, allreduce x2",
                                                                   "efficiency [CI]"]
    assert cell.endswith(f"-{C.EFFICIENCY_BOUND:.0%}, clipped]")
    [finding] = [f for f in ST.findings(data) if f.startswith("torch resnet18 allreduce x2")]
    assert ": undecided (clipped at 105%, the most N workers sharing one machine reach; " in finding
    assert "more process" in finding and "winner" not in finding and "equivalent" not in finding
    assert "clipped" in ST.methodology(data)
    fig = SF.efficiency(data.table)  # drawn to the bound with an arrow, said under the figure, the verdict beside it
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert any("undecided (CI clipped)" in t for t in texts) and any(SF.CLIPPED_NOTE in t for t in texts)
    assert fig.axes[0].get_xlim()[1] <= C.EFFICIENCY_BOUND + 0.2
    plt.close(fig)


def test_distributed_intervals_borrow_from_the_distributed_pool_only(tmp_path):
    _, t = _scaling(tmp_path, 0.05, repeats=2)
    assert t["pooled"].all() and (t["spread_df"] > 1).all()  # one process-pair's 1 df, moderated upwards
    assert t["own_ci_low"].notna().all()  # the config's own (Welch) interval stays beside it


DIST = {(s, w): make_config(framework="torch", model="resnet18", mode="training", batch_size=16, image_size=32,
                            strategy=s, workers=w) for s, w, _ in LAYOUT}
SINGLE = {fw: make_config(framework=fw, model="resnet50", batch_size=8, protocol="seed")
          for fw in ("torch", "tensorflow")}


def _values(spread: float, n: int = 3, seed: int = 0) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {DIST[(s, w)].key: list(16 * w / (ms / 1e3) * np.exp(spread * rng.standard_normal(n)))
            for s, w, ms in LAYOUT}


def test_the_pairing_finds_efficiency_and_communication_for_the_default_layout():
    found = {(c.kind, c.a, c.b, c.divisor) for c in C.comparisons(map(C.side_of, DIST.values()))}
    one, ind2, ar2 = DIST[("independent", 1)].key, DIST[("independent", 2)].key, DIST[("allreduce", 2)].key
    assert found == {(C.EFFICIENCY, ind2, one, 2), (C.EFFICIENCY, ar2, one, 2), (C.COMMUNICATION, ar2, ind2, 1)}


def test_the_plan_spends_nothing_on_a_decided_scaling_row_and_aims_at_an_undecided_one():
    configs = list(DIST.values())
    # each config's own interval wider than a solo config's target, every comparison clear
    decided = _values(0.06, seed=4)
    spreads = SweepSpreads(decided, {k: "distributed" for k in decided})
    assert all(spreads.interval(k)["ci_high"] / spreads.interval(k)["estimate"] > 1 + SOLO_TARGET for k in decided)
    assert next_process(configs, decided, {k: 3 for k in decided}, lambda c: 1.0, 1e9, 6, Judge()) is None
    undecided = _values(0.3, n=2, seed=3)
    extra = next_process(configs, undecided, {k: 2 for k in undecided}, lambda c: 1.0, 1e9, 6, Judge())
    assert extra is not None and extra.config.distributed
    assert extra.reason.startswith(("undecided: efficiency", "undecided: communication", "winner at 95%"))
    assert OTHER <= extra.score < PAGE_ONE  # after page 1's rows


def test_page_one_rows_get_their_processes_before_the_scaling_rows():
    rng = np.random.default_rng(5)
    values = _values(0.3, n=2, seed=3)
    values.update({SINGLE[fw].key: list(m * np.exp(0.05 * rng.standard_normal(2)))
                   for fw, m in (("torch", 10.2), ("tensorflow", 10.0))})
    configs = [*DIST.values(), *SINGLE.values()]
    extra = next_process(configs, values, {k: 2 for k in values}, lambda c: 1.0, 1e9, 6, Judge())
    assert extra is not None and not extra.config.distributed and extra.score >= PAGE_ONE
