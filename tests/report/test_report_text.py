"""What the report's text says of itself: no machine path, no literal None, plurals right; environments and study rows
named by what tells them apart; a folder of distributed runs alone renders every section."""

import json

import pytest

from bench.report.context import load
from bench.report.sections.environment import environment_folders, environment_table
from bench.report.sections.header import header
from bench.report.sections.methodology import methodology
from bench.results.sweep_manifest import write_sweep
from tests.conftest import ROOT
from tests.synthetic import dist_record, record, write


def test_the_report_text_holds_no_machine_path_and_no_literal_none_or_bad_plural(tmp_path):
    """Issue 30, item 7: the environment is named by its folder (no /tmp/<clone>/.venv of the machine that ran it),
    a framework that reports one thread pool is not said to have 'None inter-op', and one config is one config."""
    runs = [record(framework="torch", repeat=i, seed=i, sweep_id="s1") for i in range(2)]
    for r in runs:
        r["manifest"]["interpreter"] = "/tmp/clone-1a2b3c/.venv"
    runs[0]["settings"] = {"intra_op_threads": 2}
    runs[1]["settings"] = {"intra_op_threads": 2, "inter_op_threads": 1}
    write(runs, tmp_path)
    write_sweep(tmp_path, {
        "sweep_id": "s1", "host": "test-host", "profile": "quick", "description": "", "order_seed": 1, "repeats": 2,
        "retries": 0, "budget_minutes": 5, "force": False, "started": "2026-01-01T00:00:00Z", "finished": None,
        "status": "finished", "estimate_s": 60.0, "already_done": 0, "peaks": {}, "retried": [], "networks": {},
        "not_applicable": [], "order": [{"config_key": runs[0]["config_key"], "repeat": i, "round": i,
                                         "label": runs[0]["label"]} for i in range(2)],
        "dropped": [{"config_key": "k", "label": "big one", "reason": "over budget"}]})
    d = load(tmp_path)
    assert set(environment_table(d.records).loc["environment (interpreter)"]) == {".venv"}
    text = methodology(d)
    assert "None" not in text and "torch: 2 intra-op: 1, torch: 2 intra-op / 1 inter-op: 1" in text, text
    assert "1 config dropped to fit the budget" in text and "1 configs" not in text + header(d)


@pytest.mark.parametrize("interpreters, shown", [
    (["/tmp/clone-1a2b/.venv"], [".venv"]),
    (["/tmp/a/.venv", "/tmp/b/.venv", "/opt/mxnet-env"], ["a/.venv", "b/.venv", "mxnet-env"]),
    (["/home/alice/.venv", "/srv/x/.venv"], ["~/.venv", "x/.venv"]),
    ([None], ["not recorded"]),
])


def test_an_environment_is_named_by_its_folder_with_only_the_parents_that_tell_it_apart(interpreters, shown):
    assert list(environment_folders(interpreters).values()) == shown


def test_a_study_row_names_the_profile_that_measured_it_and_the_command_that_does(tmp_path):
    """The thesis' parameter-server rows are measured by the `distributed` profile, not by a plain `make report`:
    the row says which profile measured what it holds (from the records' sweeps), and the command that would."""
    from bench.report.studies import coverage_table

    runs = [dist_record(s, 2, 50.0, repeat=i, framework="tensorflow") for s in ("ps_async", "allreduce")
            for i in range(2)]
    for r in runs:
        r["sweep"] = {"id": "d1", "order_index": 0}
    single = [record(framework="tensorflow", repeat=i, seed=i, sweep_id="q1") for i in range(2)]
    write(runs + single, tmp_path)
    base = {"host": "test-host", "description": "", "order_seed": 1, "repeats": 2, "retries": 0,
            "budget_minutes": None, "force": False, "started": "2026-01-01T00:00:00Z", "finished": None,
            "status": "finished", "estimate_s": 60.0, "already_done": 0, "peaks": {}, "retried": [], "networks": {},
            "not_applicable": [], "order": [], "dropped": []}
    write_sweep(tmp_path, {**base, "sweep_id": "d1", "profile": "distributed"})
    write_sweep(tmp_path, {**base, "sweep_id": "q1", "profile": "quick"})
    thesis = coverage_table(load(tmp_path), "thesis").set_index("figure or claim")
    row = thesis.loc["TensorFlow ps/worker processes on localhost"]
    assert row["measured here"] == "tensorflow ps_async x2 (profile `distributed`)", row["measured here"]
    # the rows of what the `distributed` profile measures say so (the pipeline rows name `parallelism`, their own)
    ps_rows = [c for c in thesis.index if "parameter server" in c or "ps/worker" in c or "Downpour" in c]
    assert len(ps_rows) >= 2
    assert all("PROFILE=distributed" in thesis.loc[c, "what would measure it"] for c in ps_rows), ps_rows
    hkbu = coverage_table(load(tmp_path), "HKBU").set_index("figure or claim")
    assert hkbu.loc["Caffe-MPI, CNTK, MXNet and TensorFlow compared on a GPU cluster", "measured here"] == \
        "tensorflow (1 config) (profile `quick`)"
    singa = coverage_table(load(tmp_path), "SINGA").set_index("figure or claim")
    assert "ps_async" in singa.iloc[0]["measured here"]  # all-reduce against a parameter server: both ran


def test_singas_parameter_server_claim_is_measured_only_where_a_parameter_server_ran(tmp_path):
    # last session's coverage marked SINGA's "all-reduce against a parameter server" measured from a sweep that ran
    # all-reduce alone
    from bench.report.studies import coverage_table

    write([dist_record("allreduce", 2, 50.0, repeat=i) for i in range(2)]
          + [dist_record("independent", w, 40.0, repeat=i) for w in (1, 2) for i in range(2)], tmp_path)
    singa = coverage_table(load(tmp_path), "SINGA")
    row = singa[singa["figure or claim"].str.startswith("ResNet-50 throughput")].iloc[0]
    assert row["measured here"] == "not measured", row["measured here"]


def test_a_folder_of_distributed_runs_only_renders_every_section(tmp_path):
    """Before: the details failed on an empty single-process frame (KeyError 'status' in the parity table) and no PDF
    was written; page 1 said 'No results yet'. Now every section renders, and page 1 says where the runs are."""
    import shutil

    from bench.report.context import load
    from bench.report.sections import REPORT, show_all
    from bench.report.sections.details import DETAILS

    source = ROOT / "tests" / "fixtures" / "tiny_sweep" / "test-host" / "records"
    target = tmp_path / "test-host" / "records"
    target.mkdir(parents=True)
    for path in source.glob("*.json"):
        if json.loads(path.read_text()).get("distributed"):
            shutil.copy(path, target / path.name)
    d = load(tmp_path)
    n = len(d.scaling.records)
    assert n >= 2 and d.runs.empty and f"this folder holds {n} distributed runs only" in d.only_distributed()
    show_all(REPORT, d, tmp_path / "figures")
    show_all(DETAILS, d, tmp_path / "figures")
