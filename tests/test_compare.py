"""`bench compare A B` on synthetic result sets with known answers."""

import re

import papermill
import pytest

from bench.compare import compare_results, plot_comparison

from .conftest import ROOT, bench_cli
from .synthetic import record, write

DISTURBED = {"name": "disturbed", "reason": "other processes used 40% of the CPUs during the timed loop"}


def _side(folder, configs):
    records = []
    for (model, values, flagged) in configs:
        for i, v in enumerate(values):
            r = record(model=model, repeat=i, ips=v, seed=i)
            if i < flagged:
                r["flags"] = [DISTURBED]
            records.append(r)
    return write(records, folder)


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    a = _side(root / "a", [("resnet50", [10.0, 10.2, 9.9], 0), ("resnet18", [10.0, 10.2, 9.9], 0),
                           ("vgg16", [10.0, 10.2, 9.9], 0), ("alexnet", [10.0, 10.2, 9.9], 0),
                           ("googlenet", [20.0, 20.4, 19.8], 0)])
    b = _side(root / "b", [("resnet50", [13.0, 13.1, 12.9], 0), ("resnet18", [10.1, 9.8, 10.0], 0),
                           ("vgg16", [13.0, 13.1, 12.9], 2), ("googlenet", [10.0, 10.1, 9.9], 0)])
    return a, b


def test_known_verdicts(sets):
    t = compare_results(*sets).set_index("model")
    assert t.loc["resnet50", "verdict"] == "B faster (1.30x)"
    assert t.loc["resnet18", "verdict"] == "within noise"
    assert t.loc["vgg16", "verdict"].startswith("not measured reliably (B: disturbed")
    assert t.loc["alexnet", "verdict"] == "only in A"
    assert re.fullmatch(r"B slower \((1\.9\d|2\.0\d)x\)", t.loc["googlenet", "verdict"])  # a factor >= 1, never 0.5x
    assert t.loc["resnet50", "ci_low"] < 1.3 < t.loc["resnet50", "ci_high"]
    assert plot_comparison(compare_results(*sets)) is not None


def test_cli_prints_the_table_and_refuses_a_missing_folder(sets, tmp_path):
    proc = bench_cli("compare", str(sets[0]), str(sets[1]), "--csv", str(tmp_path / "c.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "B faster (1.30x)" in proc.stdout and "within noise" in proc.stdout and (tmp_path / "c.csv").exists()
    missing = bench_cli("compare", str(sets[0]), str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = bench_cli("compare", str(empty), str(sets[1]))
    assert none.returncode == 2 and "no results in" in none.stderr


def test_the_notebook_runs_under_papermill(sets, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    out = tmp_path / "compare.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "compare.ipynb"), str(out), kernel_name="python3",
                               parameters={"a": str(sets[0]), "b": str(sets[1])}, cwd=str(ROOT), progress_bar=False)
    assert "B faster (1.30x)" in out.read_text()
