"""Profiles and the sweep runner: validation before work, failures recorded, resume after a kill."""

import json
from collections import Counter

import nbformat
import pytest

from bench import ConfigError
from bench.profiles import available_profiles, load_profile
from bench.store import load_records

from .conftest import TEST_HOST, bench_cli


def test_shipped_profiles_load_and_validate():
    assert {"quick", "seed", "full", "tiny"} <= set(available_profiles())
    quick = load_profile("quick")
    assert {c.model for c in quick.configs} == {"resnet50", "vgg16", "resnet152"}
    assert {c.mode for c in quick.configs} == {"inference", "training"}
    assert len({c.batch_size for c in quick.configs}) >= 2
    assert {c.framework for c in quick.configs} == {"torch", "tensorflow"}


def test_seed_profile_is_the_2019_protocol():
    seed = load_profile("seed")
    assert {c.model for c in seed.configs} == {"vgg16", "resnet152"}
    assert sorted({c.batch_size for c in seed.configs}) == [1, 2, 4, 8, 16, 32]
    assert {(c.protocol, c.warmup, c.iterations, c.precision) for c in seed.configs} == {("seed", 10, 20, "fp32")}
    assert {c.mode for c in seed.configs} == {"inference", "training"}


def test_full_profile_covers_engines_and_precisions():
    full = load_profile("full")
    assert {c.engine for c in full.configs} >= {"eager", "compile", "graph", "xla"}
    assert {c.precision for c in full.configs} == {"fp32", "bf16", "fp16"}


@pytest.mark.parametrize("text,needle", [
    ("frameworks: [caffe2]\nmodels: [tiny_cnn]\n", "caffe2"),
    ("models: [tiny_cnn]\nbatch_sizes: [0]\n", "batch_size 0"),
    ("models: [tiny_cnn]\nfrobnicate: 1\n", "frobnicate"),
    ("models: [tiny_cnn]\nsettings: {warmpu: 3}\n", "warmpu"),
    ("models: []\n", "no runs"),
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


def test_unknown_profile_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown profile 'fastest'; valid choices: .*quick"):
        load_profile("fastest")


def test_a_failing_config_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from bench import sweep

    nb = nbformat.read(sweep.BENCHMARK_NOTEBOOK, as_version=4)
    planted = nbformat.v4.new_code_cell('if mode == "training":\n    raise RuntimeError("planted failure")')
    nb.cells.insert(2, planted)  # after the parameters cell
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, broken)
    monkeypatch.setattr(sweep, "BENCHMARK_NOTEBOOK", broken)
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nmodes: [training, inference]\n"
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


def test_resume_after_kill_records_every_config_exactly_once(tiny_sweep):
    results, killed_after = tiny_sweep
    assert 0 < killed_after < 8, "the first sweep must have been killed mid-way"
    counts = Counter(p.stem.rsplit("_", 1)[-1] for p in (results / TEST_HOST / "records").glob("*.json"))
    assert len(counts) == 8 and set(counts.values()) == {1}
    notebooks = {p.stem.rsplit("_", 1)[-1] for p in (results / TEST_HOST / "notebooks").glob("*.ipynb")}
    assert len(notebooks) >= 8 - killed_after  # every config the resumed sweep ran kept its notebook
    assert notebooks <= set(counts)
    listing = bench_cli("sweep", "--profile", "tiny", "--results-dir", str(results), "--list")
    assert listing.stdout.count("done") == 8 and "todo" not in listing.stdout


def test_sweep_summary_reports_overhead(tiny_sweep):
    results, _ = tiny_sweep
    statuses = Counter(r["status"] for r in load_records(results))
    assert statuses == {"ok": 8}
    rec = json.loads(next((results / TEST_HOST / "records").glob("*.json")).read_text())
    assert rec["host"] == TEST_HOST
