"""`bench compare A B` on synthetic result sets with known answers (no framework runs)."""

import json
import re

import matplotlib.pyplot as plt
import papermill
import pytest

from bench.cli import EXIT_BAD_INPUT, main
from bench.config import make_config
from bench.errors import ConfigError
from bench.report.compare import COLUMNS, compare_results, identical_line, plot_comparison
from bench.results.record import SCHEMA_VERSION
from bench.stats.judge import Judge
from tests.conftest import ROOT, bench_cli
from tests.synthetic import record, write

DISTURBED = {"name": "disturbed", "reason": "other processes used 40% of the CPUs"}
A_IPS = [10.0, 10.2, 9.9]


def _side(folder, configs, host="test-host", threads=None):
    """Write (model, per-process medians, how many of them flagged disturbed) configs under `folder`."""
    records = []
    for model, values, flagged in configs:
        for i, v in enumerate(values):
            r = record(model=model, repeat=i, ips=v, seed=i, host=host)
            r["interference"] = None
            r["flags"] = [DISTURBED] if i < flagged else []
            if threads is not None:  # another machine: its default thread count, so another config key
                config = make_config(**{**{k: v for k, v in r["config"].items() if k != "extra"},
                                        "threads": threads})
                r.update(config=config.to_dict(), config_key=config.key)
            records.append(r)
    return write(records, folder)


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    a = _side(root / "a", [("resnet50", A_IPS, 0), ("resnet18", A_IPS, 0), ("vgg16", A_IPS, 0),
                           ("alexnet", A_IPS, 0), ("googlenet", [20.0, 20.4, 19.8], 0)])
    b = _side(root / "b", [("resnet50", [13.0, 13.1, 12.9], 0), ("resnet18", [10.1, 9.8, 10.0], 0),
                           ("vgg16", [13.0, 13.1, 12.9], 2), ("googlenet", [10.0, 10.1, 9.9], 0),
                           ("mobilenet_v2", A_IPS, 0)])
    return a, b


def test_known_verdicts(sets):
    table = compare_results(*sets, Judge())
    assert list(table.columns) == COLUMNS
    t = table.set_index("model")
    assert t.loc["resnet50", "verdict"] == "winner: B faster (1.30x)"
    assert t.loc["resnet50", "ci_low"] < 1.3 < t.loc["resnet50", "ci_high"]
    assert t.loc["resnet50", "processes_a"] == 3 and t.loc["resnet50", "processes_b"] == 3
    # tight processes about 10 img/s on both sides: the whole interval lies within +-5%, so equal, shown by the data
    assert t.loc["resnet18", "verdict"] == "equivalent (within +-5%)"
    assert t.loc["vgg16", "verdict"].startswith("undecided (not measured reliably (B: disturbed")
    assert "40% of the CPUs" in t.loc["vgg16", "verdict"]
    assert t.loc["alexnet", "verdict"] == "only in A" and t.loc["alexnet", "platform_b"] == ""
    assert t.loc["mobilenet_v2", "verdict"] == "only in B" and t.loc["mobilenet_v2", "processes_a"] == 0
    # B is half as fast: said as a factor >= 1, never "0.5x"
    assert re.fullmatch(r"winner: B slower \((1\.9\d|2\.0\d)x\)", t.loc["googlenet", "verdict"])
    assert (t["note"] == "").all()  # same machine, same keys: nothing to explain


def test_other_machine_and_several_platforms(sets, tmp_path):
    # B: another machine with another default thread count (keys differ), and the same config on two hosts.
    b = _side(tmp_path / "b", [("resnet50", [13.0, 13.1, 12.9], 0)], threads=97)
    _side(b, [("resnet50", [20.0, 20.2, 19.9], 0)], host="other-host", threads=97)
    t = compare_results(sets[0], b, Judge())
    pairs = t[t["model"] == "resnet50"]
    assert len(pairs) == 2 and set(pairs["platform_b"].str.extract(r"\[(.*)\]")[0]) == {"test-host", "other-host"}
    assert sorted(pairs["verdict"]) == ["winner: B faster (1.30x)", "winner: B faster (2.00x)"]
    for note in pairs["note"]:
        assert "threads" in note and "vs 97" in note and "B has it on 2 platforms" in note
    assert (t[t["model"] != "resnet50"]["verdict"] == "only in A").all()


def test_missing_or_empty_folders_are_config_errors(sets, tmp_path):
    with pytest.raises(ConfigError, match="nope"):
        compare_results(sets[0], tmp_path / "nope", Judge())
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        compare_results(tmp_path / "file", sets[1], Judge())
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no results in .*empty.*: run a sweep first"):
        compare_results(sets[0], tmp_path / "empty", Judge())


def test_plot(sets):
    table = compare_results(*sets, Judge())
    fig = plot_comparison(table)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    # one point per compared pair (not for configs on one side only), labelled model mode bs series
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "googlenet inference bs=8 torch"
    assert len(ax.get_yticklabels()) == table["ratio_b_over_a"].notna().sum()
    plt.close(fig)
    assert plot_comparison(table.iloc[0:0]) is None


def test_cli_prints_the_table_and_refuses_a_missing_folder(sets, tmp_path):
    proc = bench_cli("compare", str(sets[0]), str(sets[1]), "--csv", str(tmp_path / "c.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "winner: B faster (1.30x)" in proc.stdout and "undecided (" in proc.stdout
    assert (tmp_path / "c.csv").exists()
    assert "1 winner: B faster; " in proc.stdout or "; 1 winner: B faster" in proc.stdout
    assert "shared shift:" in proc.stdout
    assert "1 only in A" in proc.stdout and "1 only in B" in proc.stdout
    missing = bench_cli("compare", str(sets[0]), str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope" in missing.stderr and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    none = bench_cli("compare", str(empty), str(sets[1]))
    assert none.returncode == 2 and "no results in" in none.stderr


def test_the_notebook_runs_under_papermill(sets, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    out = tmp_path / "compare.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "compare.ipynb"), str(out), kernel_name="python3",
                               parameters={"a": str(sets[0]), "b": str(sets[1])}, cwd=str(ROOT), progress_bar=False)
    text = out.read_text()
    assert "B faster (1.30x)" in text and "image/png" in text


def test_a_folder_compared_with_itself_says_so_and_names_no_change(sets):
    a, _ = sets
    table = compare_results(a, a, Judge())
    assert table.attrs["identical"] and identical_line(table).startswith("A and B hold the same measurements")
    assert (table["ratio_b_over_a"] == 1.0).all()
    assert not table["verdict"].str.startswith(("winner", "small difference")).any()
    assert not compare_results(*sets, Judge()).attrs["identical"]


def test_two_sweeps_of_one_commit_read_as_no_change_beyond_their_shared_shift(tmp_path):
    """Two sweeps of the same commit: every config drawn from one distribution (2% process spread, 6 processes a side),
    the second sweep 2% slower across the board (the machine drifted): no config changed, most are equivalent beyond
    the shared shift at +-5%, none a winner."""
    import numpy as np

    from bench.report.compare import beyond_shift, shared_shift

    rng = np.random.default_rng(7)
    models = ["resnet50", "resnet18", "vgg16", "alexnet", "googlenet", "mobilenet_v2"]
    base = {m: 10.0 + 3 * i for i, m in enumerate(models)}

    def sweep(folder, drift):
        return _side(folder, [(m, list(base[m] * drift * np.exp(0.02 * rng.standard_normal(6))), 0) for m in models])

    table = compare_results(sweep(tmp_path / "one", 1.0), sweep(tmp_path / "two", 0.98), Judge())
    assert not table.attrs["identical"]
    assert not table["verdict"].str.startswith("winner").any()
    shift = shared_shift(table)
    own = beyond_shift(table, shift, Judge())["own_verdict"]
    assert not own.str.startswith("winner").any()
    assert own.str.startswith("equivalent").sum() >= len(models) / 2


def test_compare_on_harness_only_results_says_so(tmp_path, capsys):
    for side in ("a", "b"):
        write([record(framework="null", model="tiny_cnn", seed=i, repeat=i) for i in range(3)], tmp_path / side)
    with pytest.raises(ConfigError, match="measure the harness itself"):
        compare_results(tmp_path / "a", tmp_path / "b", Judge())
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "harness itself" in err and "Traceback" not in err


def test_compare_says_how_many_records_it_left_out_and_why(tmp_path, capsys):
    """A record of a newer format (another checkout's results) is counted with its reason, never skipped silently;
    a damaged file beside it is counted apart."""
    for side in ("a", "b"):
        write([record(seed=i, repeat=i) for i in range(3)], tmp_path / side)
    newer = record(seed=9, repeat=9)
    newer["schema_version"] = 99
    folder = next((tmp_path / "b").glob("*/records"))
    (folder / "20990101T000000_newer_r9a0_0123456789abcdef.json").write_text(json.dumps(newer))
    (folder / "20990101T000000_newer_r8a0_0123456789abcdef.json").write_text(json.dumps(newer))
    (folder / "20990101T000000_torn_r7a0_0123456789abcdef.json").write_text("{torn")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    line = [x for x in out.out.splitlines() if x.startswith("B: ")]
    assert line == ["B: 3 record files skipped: 2 of a newer record format (schema_version 99; this checkout reads "
                    f"up to {SCHEMA_VERSION}): update this checkout to compare them; 1 unreadable (first: Expecting "
                    "property name enclosed in double quotes: line 1 column 2 (char 1))"], out.out
    assert not [x for x in out.out.splitlines() if x.startswith("A: ")] and "skipping" not in out.err
    only_newer = tmp_path / "c" / "other-host" / "records"
    only_newer.mkdir(parents=True)
    (only_newer / "20990101T000000_newer_r9a0_0123456789abcdef.json").write_text(json.dumps(newer))
    with pytest.raises(ConfigError, match=r"no results in .*\(1 record file skipped: 1 of a newer record format"):
        compare_results(tmp_path / "a", tmp_path / "c", Judge())


def test_compare_into_a_missing_folder_is_refused(tmp_path, capsys):
    fixture = str(ROOT / "tests" / "fixtures" / "tiny_sweep")
    code = main(["compare", fixture, fixture, "--csv", str(tmp_path / "missing" / "folder" / "t.csv")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "does not exist" in err and "valid:" in err
    assert not (tmp_path / "missing").exists()
