"""The sweep as a level in the statistics, and the A/A calibration of `bench compare`, from synthetic records."""

import dataclasses
import math

import numpy as np
import pytest

from bench.config import make_config
from bench.report.calibration import aa_check, aa_false_verdicts, chance_of_at_least, methodology_text, same_code_sweeps
from bench.results.record import GitInfo, Record
from bench.stats.judge import Judge
from tests.synthetic import record

BATCHES = range(1, 41)  # 40 configs


def _sweep(sweep_id: str, day: int, rng, shift: float = 1.0, processes: int = 3, spread: float = 0.03,
           commit: str = "a" * 40) -> list[Record]:
    """One sweep: every config in `processes` fresh processes, each process's throughput log-normal around
    100 * shift img/s with a `spread` between processes (the same distribution on every day unless shifted)."""
    out = []
    for bs in BATCHES:
        for rep in range(processes):
            ips = 100 * shift * math.exp(spread * rng.standard_normal())
            r = Record.from_json(record(batch_size=bs, repeat=rep, ips=ips, jitter=0.002, seed=bs * 10 + rep,
                                        sweep_id=sweep_id, created=f"2026-01-{day:02d}T00:{bs:02d}:{rep:02d}Z"))
            r.manifest = dataclasses.replace(r.manifest, git=GitInfo(commit=commit, dirty=False))
            out.append(r)
    return out


def test_two_sweeps_of_the_same_repetitions_in_one_folder_both_count(tmp_path):
    """A second sweep of the same configs (sweep --force, or another sweep's folder copied in) writes the same
    repetition numbers: loading keeps both sweeps (the A/A check judges every config), while within a sweep only
    the newest attempt counts and a repetition that failed counts only as its later run."""
    from bench.report.context import load
    from bench.results.store import load_records, write_record

    rng = np.random.default_rng(7)
    records = _sweep("20260101T000000-aaaaaa", 1, rng) + _sweep("20260102T000000-bbbbbb", 2, rng)
    # an earlier sweep's repetition 0 of the first config, killed: it ran again (ok) in both later sweeps
    config = make_config(framework="torch", model="resnet50", mode="inference", batch_size=1, protocol="seed")
    assert config.key == records[0].config_key
    failed = Record.failure(config, "killed", None, 0, 0,
                            dataclasses.replace(records[0].sweep, id="20251231T000000-cccccc"))
    failed.created, failed.host = "2025-12-31T00:00:00Z", records[0].host
    for r in [failed] + records:
        write_record(r.to_json(), tmp_path)
    loaded = load_records(tmp_path)
    assert len(loaded) == len(records) and all(r.status == "ok" for r in loaded)
    check = aa_check(load(tmp_path).records, [], Judge())
    assert check["judged"] == len(BATCHES) and check["configs_with_sweep_level"] == len(BATCHES)


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_two_sweeps_from_one_distribution_rarely_name_a_winner():
    # twelve A/A pairs of 40 configs each (480 judged pairs): one pair's 40 say little (2 false of 40 is 5%, 5 is still
    # chance at a 5% rate), the pooled rate is what the method promises (over seeds 2032-2061, 68 of 1,200: 5.7%;
    # six pairs, 240, were too few: 20 false, 8.3%, is chance at that size)
    false = judged = 0
    for seed in range(2026, 2038):
        rng = np.random.default_rng(seed)
        records = _sweep("20260101T000000-aaaaaa", 1, rng) + _sweep("20260102T000000-bbbbbb", 2, rng)
        assert same_code_sweeps(records) == [("20260101T000000-aaaaaa", "20260102T000000-bbbbbb")]
        check = aa_check(records, [], Judge())
        assert check["judged"] == len(BATCHES)
        assert check["configs_with_sweep_level"] == len(BATCHES) and check["between_sweep_share"] < 0.5
        false, judged = false + check["false"], judged + check["judged"]
    assert false / judged <= 0.08  # a 95% interval: about 5% expected
    text = methodology_text(check)
    assert "A/A calibration" in text and f"of {len(BATCHES)} single-process configs" in text


def test_a_real_change_between_sweeps_is_called_and_different_code_is_no_a_a_pair():
    rng = np.random.default_rng(7)
    a, b = _sweep("20260101T000000-aaaaaa", 1, rng), _sweep("20260102T000000-bbbbbb", 2, rng, shift=1.2)
    check = aa_check(a + b, [], Judge())
    assert check["rate"] > 0.9 and "NOT met" in methodology_text(check)
    other = _sweep("20260103T000000-cccccc", 3, rng, commit="b" * 40)
    assert same_code_sweeps(b + other) == [] and aa_check(b + other, [], Judge()) is None


def test_false_verdicts_count_only_judged_pairs():
    import pandas as pd

    table = pd.DataFrame({"model": ["m"] * 4, "mode": ["inference"] * 4, "batch_size": [1, 2, 4, 8],
                          "series": ["torch"] * 4, "ci_low": [0.9, 1.05, None, 0.95],
                          "verdict": ["undecided (more processes)", "winner: B faster (1.10x)", "only in A",
                                      "equivalent (within +-5%)"]})
    got = aa_false_verdicts(table)
    assert (got["judged"], got["false"], got["rate"]) == (3, 1, pytest.approx(1 / 3))


def test_a_few_false_verdicts_are_judged_against_what_chance_gives_at_five_percent():
    # 2 of 22 is 9%, but at a true 5% two or more happen about 30% of the time: not "NOT met"
    assert 0.29 < chance_of_at_least(2, 22) < 0.31
    text = methodology_text({"sweep_a": "a", "sweep_b": "b", "false": 2, "judged": 22, "rate": 2 / 22,
                             "between_sweep_share": None, "configs_with_sweep_level": 0})
    assert "NOT met" not in text and "by chance 30% of the time" in text
    text = methodology_text({"sweep_a": "a", "sweep_b": "b", "false": 6, "judged": 22, "rate": 6 / 22,
                             "between_sweep_share": None, "configs_with_sweep_level": 0})
    assert "NOT met" in text
    assert " - met" in methodology_text({"sweep_a": "a", "sweep_b": "b", "false": 1, "judged": 22, "rate": 1 / 22,
                                         "between_sweep_share": None, "configs_with_sweep_level": 0})
