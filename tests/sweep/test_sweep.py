"""Profiles and the sweep runner: validation before work, failures recorded, resume after a kill."""

import json
from collections import Counter

import nbformat
import pytest

from bench import ConfigError
from bench.adapters import ADAPTERS
from bench.cli import main
from bench.results.store import load_records
from bench.sweep.profiles import available_profiles, load_profile
from tests.conftest import ROOT, TEST_HOST, bench_cli


def test_shipped_profiles_load_and_validate():
    assert {"quick", "seed", "full", "tiny", "engines", "distributed", "memory"} <= set(available_profiles())
    quick = load_profile("quick")
    resnet = [c for c in quick.configs if c.model == "resnet50"]
    # the 2019 study's figures: ResNet-50 at batch 1, 4, 16 and 32 in both modes in PyTorch and TensorFlow
    assert {(c.mode, c.batch_size, c.framework) for c in resnet} >= {
        (m, b, f) for m in ("inference", "training") for b in (1, 4, 16, 32) for f in ("torch", "tensorflow")}
    # every runnable framework at one batch size, in the same comparison group as PyTorch's and TensorFlow's
    frameworks = {"torch", "tensorflow", "jax", "mxnet", "onnxruntime", "openvino"}
    assert {c.framework for c in resnet if c.mode == "inference" and c.batch_size == 16} == frameworks
    # a small data-parallel scaling section; the pipeline rows, the real-files pair and the largest-batch search
    # moved to their named profiles (each process of the default measures 10+ steady iterations, so it costs more)
    assert {c.strategy for c in quick.configs if c.distributed} == {"independent", "allreduce"}
    assert not quick.memory_searches and not any(c.data == "files" for c in quick.configs)
    assert all(c.protocol == "adaptive" and c.iterations >= 10 for c in quick.configs if not c.distributed)
    # 2 processes each first, more where a comparison is undecided, within a budget
    assert quick.adaptive and quick.repeats >= 2 and quick.max_repeats > quick.repeats and quick.budget_minutes > 0
    assert quick.configs[0].model == "resnet50"  # priority: the must-have block first
    # what the default leaves out, each in a named profile that `make render` merges:
    # every engine of every framework at the default's all-framework batch (each framework's best engine)
    engines = {(f, e) for f in frameworks for e in ADAPTERS.get(f).engines}
    assert {(c.framework, c.engine) for c in load_profile("engines").configs
            if c.mode == "inference" and c.batch_size == 16} == engines
    # training in every framework that trains, the parameter servers, every framework's largest batch, VGG16
    assert {c.framework for c in load_profile("training32").configs if c.mode == "training"} == \
        frameworks - {"onnxruntime", "openvino"}
    assert {c.strategy for c in load_profile("distributed").configs} >= {"independent", "allreduce", "ps_sync",
                                                                          "ps_async"}
    assert {(c.framework, c.mode) for c, _, _ in load_profile("memory").memory_searches} >= {
        ("torch", "training"), ("tensorflow", "training")}
    assert "vgg16" in {c.model for c in load_profile("full").configs}


def test_seed_profile_is_the_2019_protocol():
    seed = load_profile("seed")
    assert {c.model for c in seed.configs} == {"vgg16", "resnet152"}
    assert sorted({c.batch_size for c in seed.configs}) == [1, 2, 4, 8, 16, 32]
    assert {(c.protocol, c.warmup, c.iterations, c.precision) for c in seed.configs} == {("seed", 10, 20, "fp32")}
    assert {c.mode for c in seed.configs} == {"inference", "training"}


def test_full_profile_covers_engines_and_precisions():
    full = load_profile("full")
    assert {c.engine for c in full.configs} >= {"eager", "compile", "graph", "xla"}
    # a precision this machine cannot run natively is expanded away and listed with the reason
    listed = {p for p in ("tf32", "bf16", "fp16") if any(f" {p} " in line for line in full.not_applicable)}
    assert {c.precision for c in full.configs} | listed == {"fp32", "tf32", "bf16", "fp16"}


@pytest.mark.parametrize("text,needle", [
    ("frameworks: [caffe2]\nmodels: [tiny_cnn]\n", "caffe2"),
    ("models: [tiny_cnn]\nbatch_sizes: [0]\n", "batch_size 0"),
    ("models: [tiny_cnn]\nfrobnicate: 1\n", "frobnicate"),
    ("models: [tiny_cnn]\nsettings: {warmpu: 3}\n", "warmpu"),
    ("models: []\n", "must be a non-empty list"),
    ("models: [tiny_cnn\n", "not valid YAML at line"),  # an unclosed list
    ("models:\n\t- tiny_cnn\n", "not valid YAML"),  # a tab indent
    ("models: 5\n", "'models' must be a non-empty list, got 5"),
    ("models: tiny_cnn\n", "'models' must be a non-empty list, got 'tiny_cnn'"),
    ("models: [[tiny_cnn]]\n", "every item of 'models' must be a str"),
    ("- models\n- tiny_cnn\n", "expected a mapping"),
    ("models: [tiny_cnn]\nsettings: [1, 2]\n", "'settings' must be a mapping"),
    ("models: [tiny_cnn]\nsettings: {framework: torch}\n", "may not set framework"),
    ("models: [tiny_cnn]\nrepeats: 0\n", "'repeats' must be a number from 1"),
    ("models: [tiny_cnn]\nbudget_minutes: .nan\n", "'budget_minutes' must be a number"),
    ("models: [tiny_cnn]\nsettings: {time_budget_s: .inf}\n", "time_budget_s"),
    ("models: [tiny_cnn]\nalso: [{repeats: 2}]\n", "an 'also' block may set only"),
])


def test_bad_profile_fails_before_any_run(tmp_path, text, needle):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_profile(str(bad))
    results = tmp_path / "results"
    proc = bench_cli("sweep", "--profile", str(bad), "--results-dir", str(results))
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert not results.exists()


def test_a_directory_or_binary_file_is_refused_as_a_profile(tmp_path):
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"models: [\xff\xfe]\n")
    for path, needle in ((folder, "not a file"), (binary, "not UTF-8")):
        proc = bench_cli("sweep", "--profile", str(path), "--results-dir", str(tmp_path / "r"))
        assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_profile_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown profile 'fastest'; valid choices: .*quick"):
        load_profile("fastest")


def test_a_failing_config_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from bench.sweep import runner as sweep
    from bench.sweep import task

    nb = nbformat.read(task.BENCHMARK_NOTEBOOK, as_version=4)
    planted = nbformat.v4.new_code_cell('if settings.get("mode") == "training":\n'
                                        '    raise RuntimeError("planted failure")')
    nb.cells.insert(2, planted)  # after the parameters cell
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, broken)
    monkeypatch.setattr(task, "BENCHMARK_NOTEBOOK", broken)
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nmodes: [training, inference]\nrepeats: 1\n"
                       "settings: {protocol: seed}\n")
    results = tmp_path / "results"
    result = sweep.run_sweep(load_profile(str(profile)), results, progress=False)
    records = {r["config"]["mode"]: r for r in load_records(results)}
    assert records["inference"]["status"] == "ok"
    assert records["training"]["status"] == "error"
    assert "RuntimeError: planted failure" in records["training"]["reason"]
    assert [f[1] for f in result.failures] == ["error"]
    kept = list((results / TEST_HOST / "notebooks").glob("*training*.ipynb"))
    assert len(kept) == 1 and "planted failure" in kept[0].read_text()


RUNS = 22  # the tiny profile: 8 single-process + 3 distributed configs x 2 repetitions


def _run_id(path):
    *_, rep, key = path.stem.split("_")
    return key, rep.split("a")[0]


@pytest.mark.full
def test_resume_after_kill_records_every_repetition_exactly_once(tiny_sweep):
    results, killed_after = tiny_sweep
    assert 0 < killed_after < RUNS, "the first sweep must have been killed mid-way"
    records = [json.loads(p.read_text()) for p in (results / TEST_HOST / "records").glob("*.json")]
    counts = Counter((r["config_key"], r["repeat"]) for r in records if r["attempt"] == 0)
    assert len(counts) == RUNS and set(counts.values()) == {1}
    notebooks = {_run_id(p) for p in (results / TEST_HOST / "notebooks").glob("*.ipynb")}
    assert len(notebooks) >= RUNS - killed_after  # every run the resumed sweep did kept its notebook
    listing = bench_cli("sweep", "--profile", "tiny", "--results-dir", str(results), "--list")
    assert f"0 runs to do, {RUNS} already recorded" in listing.stdout and "todo" not in listing.stdout


@pytest.mark.full
def test_runs_of_a_config_are_interleaved_across_frameworks(tiny_sweep):
    results, _ = tiny_sweep
    records = sorted(load_records(results), key=lambda r: r["created"])
    frameworks = [r["config"]["framework"] for r in records]
    assert sum(a != b for a, b in zip(frameworks, frameworks[1:])) >= 4
    assert {r["repeat"] for r in records} == {0, 1}


@pytest.mark.full
def test_a_corrupt_record_is_quarantined_and_rerun_on_resume(tiny_sweep, tmp_path):
    import shutil

    results, _ = tiny_sweep
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    victim = sorted((copy / TEST_HOST / "records").glob("*.json"))[0]
    victim.write_text(victim.read_text()[:100])  # truncated, as by a full disk
    listing = bench_cli("sweep", "--profile", "tiny", "--results-dir", str(copy), "--list")
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert f"1 run to do, {RUNS - 1} already recorded" in listing.stdout
    # a listing changes nothing (issue 30): the unreadable record stays where it is until a sweep resumes
    assert victim.exists() and not (copy / TEST_HOST / "records" / "quarantine" / victim.name).exists()
    resumed = bench_cli("sweep", "--profile", "tiny", "--results-dir", str(copy))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert (copy / TEST_HOST / "records" / "quarantine" / victim.name).exists() and not victim.exists()
    # the lost run measured again: every planned run recorded once more (a disturbed attempt's retry, which a busy
    # machine can cause, is a second record of the same run, not another run)
    runs = {(r["config_key"], r["repeat"]) for r in load_records(copy)}
    assert len(runs) == RUNS


@pytest.mark.full
def test_sweep_summary_reports_overhead(tiny_sweep):
    results, _ = tiny_sweep
    statuses = Counter(r["status"] for r in load_records(results))
    assert statuses == {"ok": RUNS}
    rec = json.loads(next((results / TEST_HOST / "records").glob("*.json")).read_text())
    assert rec["host"] == TEST_HOST


def test_a_sweep_waits_for_a_quiet_machine_before_its_first_measurement_and_says_so():
    import itertools

    from bench.host.interference import wait_until_quiet
    from bench.sweep.runner import quiet_start

    said = []
    shares = iter([0.45, 0.30, 0.04])
    seen = quiet_start(said.append, look=lambda: next(shares), max_wait_s=90)
    assert seen["quiet"] and len(said) == 2
    assert said[0].startswith("waiting for a quiet machine") and "45%" in said[0] and "at most 90 s" in said[0]
    assert said[1].startswith("quiet after")
    # bounded: a machine that stays busy is measured anyway, and the terminal says so
    clock = itertools.count(0.0, 10.0)
    said.clear()
    seen = quiet_start(said.append, look=lambda: 0.5, max_wait_s=30,
                       wait=lambda **kw: wait_until_quiet(clock=lambda: next(clock), **kw))
    assert not seen["quiet"] and said[1].startswith("still busy after") and "measuring anyway" in said[1]
    assert quiet_start(said.append, look=lambda: 0.02) is None  # quiet at once: nothing said
    assert quiet_start(said.append, look=lambda: 0.5, max_wait_s=0) is None  # BENCH_QUIET_START_S=0: no wait


def test_a_framework_with_none_of_the_listed_engines_is_left_out_with_the_reason(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [torch, tensorflow]\nmodels: [tiny_cnn]\nengines: [xla]\n")
    p = load_profile(str(profile))
    assert {(c.framework, c.engine) for c in p.configs} == {("tensorflow", "xla")}
    assert any(s.startswith("torch inference fp32 cpu: torch has none of the engines xla") for s in p.not_applicable)


def test_foreign_sweep_manifests_and_records_are_set_aside_and_said(tmp_path, capsys):
    fixture = next((ROOT / "tests" / "fixtures" / "tiny_sweep").glob("*/sweeps/*.json"))
    good = json.loads(fixture.read_text())
    other = tmp_path / "other" / "sweeps"
    other.mkdir(parents=True)
    bad = {"list.json": [1, 2], "text.json": "a sweep", "peaks.json": {**good, "peaks": [1, 2]},
           "started.json": {**good, "started": 12345}}
    for name, data in bad.items():
        (other / name).write_text(json.dumps(data))
    (tmp_path / "other" / "records").mkdir()
    (tmp_path / "other" / "records" / "20990101T000000_torn_r0a0_0123456789abcdef.json").write_text("{torn")
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\n")
    from bench.results.sweep_manifest import load_sweeps
    from bench.sweep.executors import _all_hosts

    assert load_sweeps(tmp_path) == []
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "todo" in out
    for name in bad:
        assert f"set aside an unreadable sweep manifest (the plan goes on without it): other/sweeps/{name}" in out
    assert "a JSON list, not a sweep manifest" in out and "data.peaks must be object" in out
    with pytest.warns(UserWarning, match="set aside unreadable record other/records/20990101T000000_torn"):
        assert _all_hosts(tmp_path) == []
    assert (tmp_path / "other" / "records" / "20990101T000000_torn_r0a0_0123456789abcdef.json").exists()
