"""Every verdict on the report is a claim its data support (issue 28, a statistician's reading of an exported report):
a winner that rests on the sweep's pooled variance says so on page 1 and in the methodology, a 'best' row says which
frameworks it compared at which batches, a bar chart compares one precision, the environment table counts runs as
the report's counts do. Each test builds its few rows by hand (no sweep, no notebook): well under a second each."""

from __future__ import annotations

import math

import pandas as pd

from bench.report import answer as A
from bench.report.estimates import best_batch_table, summary_table
from bench.stats.judge import Judge


def _config(framework: str, batch: int, values: list[float], var: float, df: float, pooled: bool,
            precision: str = "fp32") -> dict:
    """A config row as the estimate layer gives it: its processes' images/s and the spread its intervals use."""
    gm = math.exp(sum(math.log(v) for v in values) / len(values))
    return {"platform": "AMD EPYC [vm]", "model": "resnet50", "mode": "training", "precision": precision,
            "batch_size": batch, "framework": framework, "engine": "eager", "series": framework,
            "images_per_sec_median": gm, "process_ips": values, "process_sweeps": ["s1"] * len(values),
            "spread_var": var, "spread_df": df, "spread_pooled": pooled, "sound": True, "flag_list": [],
            "certificate": "ok", "status": "ok", "params": 25_557_032, "utilisation": float("nan")}


# A batch-16 training row that the sweep's prior decides (beyond the +-5% margin) and its own processes do not.
TORCH = [2.70, 3.90, 3.15, 4.10]
TF = [3.15, 3.05, 3.10, 3.00]


def _pooled_winner() -> pd.DataFrame:
    return pd.DataFrame([_config("torch", 16, TORCH, 0.0004, 40.0, True),
                         _config("tensorflow", 16, TF, 0.0004, 40.0, True)])


def test_a_winner_resting_on_the_pooled_variance_says_so_on_page_one_and_in_the_methodology():
    summary = summary_table(_pooled_winner(), Judge())
    row = summary.iloc[0]
    assert row["verdict"] == "winner" and row["welch_ci_low"] < 1 < row["welch_ci_high"]
    table, notes = A.answer_table(summary, None, Judge())
    cell = table.iloc[0]["speed-up [95% CI]"]
    assert f"; own processes: [{row['welch_ci_low']:.2f}-{row['welch_ci_high']:.2f}]" in cell
    assert table.iloc[0]["verdict"].startswith("winner [")
    assert any("decided with the sweep's pooled variance" in n for n in notes)
    from bench.report.sections.findings import findings

    stated = [f for f in findings(_pooled_winner(), summary, None, Judge())
              if f.startswith("resnet50 training, batch 16")]
    assert len(stated) == 1 and "with the sweep's pooled variance (its own processes alone: [" in stated[0]
    said = A.pooled_winners_text(summary, None, Judge())
    assert said.startswith("1 of page 1's 1 winners rests on the pooling") and "batch 16" in said
    # a winner its own processes decide too carries no mark, and the methodology says none rests on the pooling
    clear = pd.DataFrame([_config("torch", 16, [4.0, 4.1, 4.05], 0.0004, 40.0, True),
                          _config("tensorflow", 16, TF, 0.0004, 40.0, True)])
    summary = summary_table(clear, Judge())
    table, notes = A.answer_table(summary, None, Judge())
    assert "own processes" not in table.iloc[0]["speed-up [95% CI]"] and not notes
    assert A.pooled_winners_text(summary, None, Judge()).startswith("None of page 1's 1 winners rests on the pooling")


def test_the_best_batch_row_names_which_frameworks_it_compared_at_which_batches():
    """Last session's best inference row picked OpenVINO over ONNX Runtime, both run at batch 16 only, beside
    TensorFlow and PyTorch run at 1-32, and its 'compared' column named the six frameworks alone."""
    rows = [_config(fw, b, [v * b ** 0.1, v * b ** 0.1 * 1.01], 0.0004, 40.0, True)
            for fw, v in (("torch", 10.0), ("tensorflow", 11.0)) for b in (1, 4, 16, 32)]
    rows += [_config(fw, 16, [v, v * 1.01], 0.0004, 40.0, True) for fw, v in (("onnxruntime", 25.0),
                                                                              ("openvino", 26.0))]
    best = best_batch_table(pd.DataFrame(rows), Judge())
    assert best.iloc[0]["compared"] == ("tensorflow, torch at batches 1, 4, 16 and 32; onnxruntime, openvino at "
                                        "batch 16 only")
    table, _ = A.answer_table(summary_table(pd.DataFrame(rows), Judge()), best, Judge())
    shown = table.set_index("batch")
    assert shown.loc["best (openvino 16, onnxruntime 16)", "compared"] == best.iloc[0]["compared"]
    assert shown.loc["16", "compared"] == "onnxruntime, openvino, tensorflow, torch"  # one batch: the names say it


def test_the_environment_table_counts_runs_as_the_report_does():
    """Last session's environment table said 59 runs where the report's counts said 79 (59 single-process on
    synthetic data, 6 on real files, 14 distributed): it counted one kind, and said not which."""
    from bench.report.coverage import successful_runs_text
    from bench.report.sections.environment import environment_table
    from bench.results.record import Record
    from tests.synthetic import dist_record, record

    runs = [record(repeat=i, seed=i) for i in range(3)] + [dist_record("allreduce", 2, 100.0, repeat=i)
                                                           for i in range(2)]
    files = record(repeat=0, seed=9, mode="training")
    files["config"]["data"] = "files"
    failed = {**record(repeat=5, seed=5), "status": "error", "reason": "crashed"}
    records = [Record.from_json(r) for r in [*runs, files, failed]]
    env = environment_table(records)
    assert env.iloc[:, 0]["runs"] == successful_runs_text(records) == (
        "6 successful runs (3 single-process on synthetic data, 1 on real files, 2 distributed)")
    assert env.iloc[:, 0]["frameworks (runs)"] == "torch (6)"


def test_every_verdict_is_printed_in_the_one_form():
    """A verdict is one of the three words, first, then its side or detail (bench/stats/verdicts.py: phrase); last
    session's report printed 'below linear (winner)', 'slower 0.67x' and 'no winner'. The report's code and texts
    hold none of those forms."""
    import re
    from pathlib import Path

    import pytest

    from bench.stats.verdicts import Verdict, phrase, said

    assert phrase("winner", "below linear") == "winner: below linear"
    assert said(Verdict("winner", 0.67, 0.63, 0.71, 0.05), "GPipe faster", "data parallel faster", "as fast",
                "0.67x [0.63-0.71]") == "winner: data parallel faster (0.67x [0.63-0.71])"
    assert said(Verdict("equivalent", 1.0, 0.98, 1.02, 0.05), "above", "below", "linear") == \
        "equivalent: linear (within +-5%)"
    with pytest.raises(ValueError):
        phrase("slower")
    root = Path(__file__).parents[2] / "bench" / "report"
    # a verdict after its reading, a bare direction for a verdict ('"faster" if ... else "slower"'), the old words
    forms = re.compile(r"\((?:winner|equivalent|undecided)\)|[\"'](?:faster|slower)[\"'] if|else [\"'](?:faster|slower)"
                       r"[\"']|no winner|within noise|\btie\b")
    found = [f"{p.relative_to(root)}: {m.group(0)}" for p in [*root.rglob("*.py"), *root.rglob("*.md")]
             for m in forms.finditer(p.read_text())]
    assert not found, found


def test_a_row_at_the_process_cap_never_asks_for_more_processes_in_this_sweep():
    # last session's batch-16 training row read "undecided, ~1 more a side" with its six processes already run
    r = {"extra_processes": 1, "fewest_processes": 6, "more_sweeps": ""}
    assert A.to_decide(r, 6) == "~1 more a side: past the sweep's 6-process cap (another sweep adds them)"
    assert A.to_decide({**r, "fewest_processes": 2}, 6) == "~1 more a side"
    assert A.to_decide(r, None) == "~1 more a side"  # no adaptive sweep: no cap known
    assert A.to_decide({**r, "more_sweeps": "more sweeps (the sweeps point different ways)"}, 6).startswith("more sw")
    assert A.to_decide({**r, "extra_processes": None}, 6) == "not decidable at this spread"
