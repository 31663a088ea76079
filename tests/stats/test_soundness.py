"""Process-level statistics, guards and verdicts on synthetic records with known answers."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from bench.config import RunConfig, make_config
from bench.measurement.peak import peak_key
from bench.report import tables as T
from bench.report.data import config_tables
from bench.report.estimates import ratio_table, summary_table
from bench.report.sections.findings import best_engine_findings, findings
from bench.results.store import load_records
from bench.stats.intervals import process_interval, process_ratio, variance_components
from bench.stats.judge import Judge
from bench.sweep.plan import comparison_group, fit_budget, interleaved_order
from tests.synthetic import record

DISTURBED = {"name": "disturbed", "reason": "other processes used 45% of the CPUs during the timed loop"}


def _tables(records, sweeps=()):
    runs, processes, configs = config_tables(records, list(sweeps))
    return configs, summary_table(configs, Judge())


def _procs(framework, values, **kw):
    return [record(framework=framework, repeat=i, ips=v, seed=i, **kw) for i, v in enumerate(values)]


def test_process_interval_widens_with_between_process_variance():
    steady = process_interval([10.0, 10.1, 9.9])
    drifting = process_interval([8.0, 10.0, 12.5])
    assert steady["ci_low"] < 10 < steady["ci_high"]
    assert (drifting["ci_high"] - drifting["ci_low"]) > 5 * (steady["ci_high"] - steady["ci_low"])
    # the same holds end to end: identical within-process noise, different between-process spread
    a, _ = _tables(_procs("torch", [10.0, 10.1, 9.9]))
    b, _ = _tables(_procs("torch", [8.0, 10.0, 12.5]))
    width = lambda c: float(c["images_per_sec_ci_high"].iloc[0] - c["images_per_sec_ci_low"].iloc[0])  # noqa: E731
    assert width(b) > 5 * width(a)
    assert b["between_share"].iloc[0] > a["between_share"].iloc[0]


def test_variance_components_recover_a_known_split():
    rng = np.random.default_rng(0)
    groups = [m + rng.normal(0, 1.0, 400) for m in rng.normal(10, 2.0, 40)]
    vc = variance_components(groups)
    assert vc["within_var"] == pytest.approx(1.0, rel=0.15)
    assert vc["between_var"] == pytest.approx(4.0, rel=0.5)
    assert 0.6 < vc["between_share"] < 0.95


def test_ratio_interval_never_narrower_than_its_processes_allow():
    r = process_ratio([10.0, 10.1, 9.9], [8.0, 10.0, 12.5])
    assert r["within_noise"] and r["ci_low"] < 0.9 and r["ci_high"] > 1.1
    assert process_ratio([10.0], [5.0])["ci_low"] is None  # one process: no interval, no verdict


def test_a_clear_winner_is_stated_with_factor_above_one_and_ci():
    configs, summary = _tables(_procs("torch", [10.0, 10.2, 9.9]) + _procs("tensorflow", [13.0, 13.1, 12.9]))
    row = summary.iloc[0]
    assert row["fastest"] == "tensorflow" and row["verdict"] == "winner" and row["reason"] == "tensorflow faster"
    assert row["speedup"] == pytest.approx(1.3, abs=0.02) and 1 < row["ci_low"] < 1.3 < row["ci_high"]
    text = " ".join(findings(configs, summary, None, Judge()))
    assert "tensorflow is 1.30x faster** than torch" in text
    assert "0.7" not in text  # never a ratio below 1 for the reader to invert


def test_overlapping_processes_are_undecided_not_a_tie():
    configs, summary = _tables(_procs("torch", [10.0, 10.4, 9.7]) + _procs("tensorflow", [10.1, 9.8, 10.3]))
    row = summary.iloc[0]
    assert row["verdict"] == "undecided" and "more process" in row["reason"]  # what would decide it
    text = " ".join(findings(configs, summary, None, Judge()))
    assert "Undecided in 1 of 1 compared rows" in text and "tie" not in text and "equal" not in text.split("(")[0]


def test_disturbed_side_never_becomes_a_finding():
    tf = _procs("tensorflow", [20.0, 20.5, 19.8])
    for r in tf[:2]:
        r["flags"] = [DISTURBED]
    configs, summary = _tables(_procs("torch", [10.0, 10.2, 9.9]) + tf)
    tf_row = configs[configs["series"] == "tensorflow"].iloc[0]
    assert not tf_row["sound"] and "disturbed" in tf_row["flags"] and tf_row["clean_processes"] == 1
    assert summary.iloc[0]["verdict"] == "undecided"
    assert summary.iloc[0]["reason"].startswith("not measured reliably (tensorflow: disturbed")
    text = " ".join(findings(configs, summary, None, Judge()))
    assert "faster" not in text
    # said once, with page 1's answer table giving the reason (its footnote names the flag)
    assert "Undecided in 1 of 1 compared rows" in text


def test_a_single_disturbed_process_is_left_out_while_two_clean_remain():
    tf = _procs("tensorflow", [13.0, 13.1, 4.0])
    tf[2]["flags"] = [DISTURBED]
    configs, summary = _tables(_procs("torch", [10.0, 10.2, 9.9]) + tf)
    tf_row = configs[configs["series"] == "tensorflow"].iloc[0]
    assert tf_row["sound"] and tf_row["clean_processes"] == 2
    assert tf_row["images_per_sec_median"] == pytest.approx(13.05, rel=0.02)  # the disturbed 4.0 is not in it
    assert summary.iloc[0]["verdict"] == "winner" and summary.iloc[0]["fastest"] == "tensorflow"


def test_above_the_gemm_peak_is_plausible_and_said_so_not_called_wrong():
    # 1 GFLOP per image at ~10 img/s against a "peak" of 5 GFLOP/s: 200% utilisation. One rule (flags.py,
    # UTILISATION_LIMIT): above the best measured GEMM is plausible, marked as such, and the throughput stands.
    procs = _procs("torch", [10.0, 10.1, 9.9], flops=1e9, peak=5e9)
    configs, summary = _tables(procs + _procs("tensorflow", [13.0, 13.1, 12.9], flops=1e9, peak=5e9))
    assert all("utilisation_over_peak" in f for f in configs["flags"])
    assert all("faster than this machine's best measured GEMM" in r and "wrong" not in r
               for r in configs["flag_reasons"])
    text = " ".join(findings(configs, summary, None, Judge()))
    assert "faster than this machine's best GEMM" in text and "wrong" not in text
    # the flag concerns the utilisation only: the throughput is a finding, on page 1 too
    assert summary.iloc[0]["verdict"] == "winner" and configs["sound"].all()


def test_a_sweep_peak_higher_than_the_cached_one_is_used():
    procs = _procs("torch", [10.0, 10.1, 9.9], flops=1e9, peak=5e9, sweep_id="s1")
    key = peak_key("cpu", "fp32", procs[0]["config"]["threads"])  # the runs' own peak key: this host's threads
    sweep = {"sweep_id": "s1", "peaks": {key: {"start": {"flops_per_sec": 20e9},
                                               "end": {"flops_per_sec": 25e9}}}}
    configs, _ = _tables(procs, [sweep])
    assert configs["utilisation"].iloc[0] == pytest.approx(10 * 1e9 / 25e9, rel=0.02)
    assert "utilisation_over_peak" not in configs["flags"].iloc[0]


def test_a_peak_measured_while_other_work_ran_gives_no_utilisation():
    """A GEMM peak whose trials spread 30% (a busy machine: 119 GFLOP/s against 202 quiet) would make an engine look
    179% utilised: no utilisation is given, a flag says why, and the throughput stays a finding."""
    procs = _procs("torch", [10.0, 10.1, 9.9], flops=1e9, peak=5e9, sweep_id="s1")
    key = peak_key("cpu", "fp32", procs[0]["config"]["threads"])  # the runs' own peak key: this host's threads
    busy = {"sweep_id": "s1", "peaks": {key: {"start": {"flops_per_sec": 5e9, "spread": 0.30},
                                              "end": None}}}
    configs, _ = _tables(procs, [busy])
    assert configs["utilisation"].isna().all() and "peak_unsteady" in configs["flags"].iloc[0]
    assert "trials spread 30%" in configs["flag_reasons"].iloc[0] and configs["sound"].all()
    quiet = {"sweep_id": "s1", "peaks": {key: {"start": {"flops_per_sec": 20e9, "spread": 0.05},
                                               "end": None}}}
    configs, _ = _tables(procs, [quiet])
    assert configs["utilisation"].iloc[0] == pytest.approx(0.5, rel=0.02)
    assert "peak_unsteady" not in configs["flags"].iloc[0]


def test_a_jump_across_batch_sizes_is_flagged():
    # batch 1 at 1 img/s (1 s per iteration), batch 2 at 7 img/s (0.29 s): a larger batch cannot be that fast
    procs = [record(batch_size=1, repeat=i, ips=v, seed=i) for i, v in enumerate([1.0, 1.05, 0.98])]
    procs += [record(batch_size=2, repeat=i, ips=v, seed=10 + i) for i, v in enumerate([7.0, 7.1, 6.9])]
    configs, summary = _tables(procs)
    assert all("batch_jump" in f for f in configs["flags"]) and not configs["sound"].any()


def test_distributed_layouts_at_one_batch_are_not_read_as_a_batch_curve():
    """One worker's and two workers' batch 16 (or an independent and an all-reduce run) are different configs at
    the same batch, not neighbouring batch sizes: no batch_jump between them (a real A/A compare flagged "batch 16
    took less time per iteration than batch 16")."""
    from tests.synthetic import dist_record

    procs = [dist_record(s, w, ms, rep) for rep in range(3) for s, w, ms in
             (("independent", 1, 60.0), ("independent", 2, 90.0), ("allreduce", 2, 120.0))]
    configs, _ = _tables(procs)
    assert len(configs) == 3 and not any("batch_jump" in f for f in configs["flags"])


def test_training_cheaper_than_inference_is_flagged():
    procs = _procs("torch", [10.0, 10.1, 9.9]) + _procs("torch", [30.0, 30.1, 29.9], mode="training")
    configs, _ = _tables(procs)
    assert all("training_cheaper_than_inference" in f for f in configs["flags"])


def test_a_jittery_repetition_is_flagged_as_cv_outlier():
    procs = [record(repeat=i, ips=10.0, seed=i, jitter=j) for i, j in enumerate([0.01, 0.012, 0.011, 0.4])]
    configs, _ = _tables(procs)
    assert configs["clean_processes"].iloc[0] == 3


def test_ratio_table_pairs_every_series():
    configs, _ = _tables(_procs("torch", [10.0, 10.2, 9.9]) + _procs("tensorflow", [13.0, 13.1, 12.9]))
    ratios = ratio_table(configs, Judge())
    assert len(ratios) == 1 and ratios.iloc[0]["faster"] == "tensorflow" and ratios.iloc[0]["speedup"] > 1


def test_version_1_records_still_load(tmp_path):
    r = record()
    for k in ("repeat", "attempt", "sweep", "interference", "flags"):
        r.pop(k)
    r["schema_version"] = 1
    path = tmp_path / "old-host" / "records" / "old.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(r))
    [loaded] = load_records(tmp_path)
    assert loaded["repeat"] == 0 and loaded["flags"] == [] and loaded["interference"] is None


def test_config_key_survives_an_added_field():
    c = make_config(framework="torch", model="resnet50", batch_size=8)

    @dataclasses.dataclass(frozen=True)
    class Upgraded(RunConfig):
        new_setting: str = "default"  # a field added in a later version, at its default

    assert Upgraded(**{k: v for k, v in c.to_dict().items() if k != "extra"}).key == c.key
    assert make_config(framework="torch", model="resnet50", batch_size=8, seed=1).key != c.key


def _configs():
    return [make_config(framework=fw, model="tiny_cnn", batch_size=b, image_size=32)
            for b in (1, 2, 4, 8) for fw in ("torch", "tensorflow")]


def test_interleaved_order_is_deterministic_per_seed_and_mixes_frameworks():
    a, b = interleaved_order(_configs(), 3, seed=7), interleaved_order(_configs(), 3, seed=7)
    assert [(t.config.key, t.repeat) for t in a] == [(t.config.key, t.repeat) for t in b]
    assert [t.config.key for t in a] != [t.config.key for t in interleaved_order(_configs(), 3, seed=8)]
    for r in range(3):  # every round holds every config once
        assert sorted(t.config.key for t in a if t.round == r) == sorted(c.key for c in _configs())
    switches = sum(x.config.framework != y.config.framework for x, y in zip(a, a[1:]))
    assert switches > len(a) // 4  # frameworks interleave rather than run in blocks
    done = {(a[0].config.key, 0)}
    assert len(interleaved_order(_configs(), 3, seed=7, done=done)) == len(a) - 1  # resume per repetition


def test_budget_drops_lowest_priority_groups_whole():
    configs = _configs()
    tasks = interleaved_order(configs, 2, seed=0)
    kept, dropped, total = fit_budget(configs, tasks, lambda t: 10.0, budget_s=100)
    assert total <= 100 and len(kept) == 8  # 4 tasks per group (2 frameworks x 2 repeats): two groups fit
    assert {c.batch_size for c in dropped} == {4, 8}  # the last-listed batch sizes go first
    assert len({comparison_group(c) for c in dropped}) == 2 and len(dropped) == 4  # whole groups


def test_the_report_shows_each_series_against_the_fastest_and_the_details_every_pair():
    ratios = pd.DataFrame([
        {"platform": "p", "model": "m", "mode": "inference", "precision": "fp32", "batch_size": 32,
         "a": a, "b": b, "faster": f, "slower": s, "speedup": x, "speedup_ci_low": x * 0.9,
         "speedup_ci_high": x * 1.1, "welch_ci_low": x * 0.8, "welch_ci_high": x * 1.2, "verdict": "winner",
         "reason": f"{f} faster"}
        for a, b, f, s, x in [("fast", "mid", "fast", "mid", 1.2), ("fast", "slow", "fast", "slow", 1.5),
                              ("mid", "slow", "mid", "slow", 1.25)]])
    shown = T.ratios_for_display(ratios, only_against_fastest=True)
    assert list(shown["faster / slower"]) == ["fast / mid", "fast / slow"]
    assert len(T.ratios_for_display(ratios)) == 3


def test_each_frameworks_best_engine_is_a_finding_only_when_its_interval_says_so():

    one = {"sweep_id": "s1"}
    records = (_procs("torch", [7.0, 7.1, 6.9], engine="eager", **one)
               + _procs("torch", [8.0, 8.1, 7.9], engine="compile", **one)
               + _procs("tensorflow", [7.0, 7.2, 6.8], engine="graph", **one)
               + _procs("tensorflow", [7.1, 6.9, 7.2], engine="xla", sweep_id="s2")
               + _procs("onnxruntime", [9.0, 9.1, 8.9], **one))
    configs, _ = _tables(records)
    text = best_engine_findings(configs, Judge())
    assert len(text) == 2  # one engine only: no finding for onnxruntime
    torch = next(t for t in text if ", torch:" in t)  # one sweep: no caveat
    assert "best engine is **compile**" in torch and "runner-up eager" in torch
    tf = next(t for t in text if ", tensorflow (the two engines were not measured in one interleaved sweep):" in t)
    # tight processes on both engines: the sweep-moderated interval lies within +-5%, so they are equal, shown
    assert "are **equivalent**" in tf and "equal within +-5%" in tf


def test_engine_findings_judge_at_the_reports_margin():
    """Before, the engine findings were judged at +-5% whatever the profile said: the same two engines, equivalent
    at +-5%, are not shown equivalent at +-1%."""
    one = {"sweep_id": "s1"}
    records = (_procs("torch", [7.0, 7.03, 6.97], engine="eager", **one)
               + _procs("torch", [7.02, 6.99, 7.05], engine="compile", **one))
    configs, _ = _tables(records)
    (wide,) = best_engine_findings(configs, Judge(0.05))
    (narrow,) = best_engine_findings(configs, Judge(0.01))
    assert "are **equivalent**" in wide and "are **equivalent**" not in narrow


def test_a_finding_prints_a_winners_interval_with_enough_decimals():
    """Findings print through the one printer (bench/stats/printed.py), as page 1 does."""
    from bench.stats.printed import ratio_and_range as _printed

    assert _printed(1.008, 1.004, 1.012) == ("1.008x", "1.004-1.012")  # not 1.01x [1.00-1.01]
    assert _printed(1.20, 1.10, 1.31) == ("1.20x", "1.10-1.31")


def test_an_engine_note_declared_by_its_adapter_travels_with_the_finding():

    records = (_procs("openvino", [8.7, 8.8, 8.6], engine="latency", sweep_id="s1")
               + _procs("openvino", [4.8, 4.9, 4.7], engine="throughput", sweep_id="s1"))
    configs, _ = _tables(records)
    (text,) = best_engine_findings(configs, Judge())
    assert "best engine is **latency**" in text and "Note on throughput: the harness sends one" in text


def test_a_config_s_utilisation_is_against_its_sweeps_best_peak_and_withheld_when_unsteady():
    from bench.measurement.utilisation import utilisation
    from bench.report.estimates.configs import config_utilisation

    steady = [{"flops_per_sec": 2e11, "spread": 0.05}, {"flops_per_sec": 4e11, "spread": 0.03}]
    share, flags = config_utilisation(1e9, 50.0, steady, run_peaks=[1e11])
    assert share == utilisation(1e9, 50.0, 4e11) and not flags  # the best sweep peak, not the run's own
    assert config_utilisation(1e9, 50.0, [], run_peaks=[float("nan"), 1e11])[0] == utilisation(1e9, 50.0, 1e11)
    share, flags = config_utilisation(1e9, 50.0, [{"flops_per_sec": 4e11, "spread": 0.4}], run_peaks=[])
    assert share is None and [f.name for f in flags] == ["peak_unsteady"]
    assert config_utilisation(float("nan"), 50.0, steady, run_peaks=[])[0] is None  # FLOPs unknown
