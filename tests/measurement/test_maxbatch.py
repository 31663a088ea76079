"""Largest batch and memory: the search's logic, a real probe stopped at the memory cap, the profile block, the
report's table and figure, and bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from bench.adapters import says_out_of_memory
from bench.cli import EXIT_BAD_INPUT, main
from bench.config import make_config
from bench.errors import ConfigError
from bench.report import memory as M
from bench.results.searches import load_searches
from bench.runs import maxbatch
from bench.sweep.profiles import load_profile

GIB = 2**30


def fake_probe(per_image: float, base: float = 0.5 * GIB, fail_at: int | None = None):
    """A probe whose memory is base + per_image x batch; an error at `fail_at`."""
    tried = []

    def probe(config, b, cap, facts=None):
        tried.append(b)
        if fail_at is not None and b >= fail_at:
            return {"batch_size": b, "fits": None, "reason": "boom", "peak_bytes": None}
        need = base + per_image * b
        return {"batch_size": b, "fits": need <= cap, "peak_bytes": need if need <= cap else None,
                "reason": "" if need <= cap else "over the cap"}
    return probe, tried


def config():
    return make_config(framework="torch", model="tiny_cnn", image_size=32, mode="training", batch_size=1)


def test_search_doubles_then_bisects_to_within_an_eighth():
    probe, tried = fake_probe(per_image=0.1 * GIB)  # fits while 0.5 + 0.1 b <= 4: b <= 35
    found = maxbatch.search(config(), 4 * GIB, 256, probe_fn=probe)
    assert tried[:7] == [1, 2, 4, 8, 16, 32, 64]
    assert found["limited_by"] == "memory"
    assert 35 - 35 // 8 <= found["largest_batch"] <= 35
    misses = [p["batch_size"] for p in found["probes"] if p["fits"] is False]
    assert min(misses) - found["largest_batch"] <= max(1, found["largest_batch"] // 8)
    assert [p["batch_size"] for p in found["probes"]] == sorted(set(tried))


def test_search_stops_at_max_batch_and_tries_the_limit_itself():
    probe, tried = fake_probe(per_image=1.0)  # everything fits
    found = maxbatch.search(config(), 4 * GIB, 100, probe_fn=probe)
    assert found["largest_batch"] == 100 and found["limited_by"] == "max_batch"
    assert tried == [1, 2, 4, 8, 16, 32, 64, 100]


def test_an_error_ends_the_search_and_is_recorded():
    probe, tried = fake_probe(per_image=1.0, fail_at=8)
    found = maxbatch.search(config(), 4 * GIB, 256, probe_fn=probe)
    assert found["limited_by"] == "error" and found["error"] == "boom" and found["largest_batch"] == 4
    assert tried == [1, 2, 4, 8]


@pytest.mark.parametrize("reason,oom", [
    ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", True),  # PyTorch
    ("ResourceExhaustedError: OOM when allocating tensor", True),  # TensorFlow
    ("XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate", True),  # JAX
    ("MXNetError: std::bad_alloc", True),
    ("RuntimeException: Failed to allocate memory for requested buffer", True),  # ONNX Runtime
    ("MemoryError: Unable to allocate array", True),
    ("RuntimeError: shape mismatch in conv2d", False),  # any other error is not 'does not fit'
])


def test_only_a_framework_out_of_memory_error_means_the_batch_does_not_fit(reason, oom):
    assert says_out_of_memory(reason) is oom


def test_a_probe_over_the_cap_is_stopped_and_leaves_no_process(tmp_path, monkeypatch):
    # Importing torch alone needs more than 0.3 GiB: the watchdog stops the probe, the search says so.
    monkeypatch.setattr(maxbatch, "host_facts", lambda config, results_dir: None)  # stopped before it needs them
    before = {p.pid for p in psutil.process_iter()}
    found = maxbatch.execute(config(), tmp_path, int(0.3 * GIB), 4)
    assert found["largest_batch"] is None and found["limited_by"] == "memory"
    (p,) = found["probes"]
    assert p["fits"] is False and "passed the cap (0.3 GiB)" in p["reason"] and p["tree_peak_rss_bytes"] > 0.3 * GIB
    left = [q for q in psutil.process_iter(["cmdline"]) if q.pid not in before
            and "bench-probe-" in " ".join(q.info["cmdline"] or [])]
    assert not left
    stored = load_searches(tmp_path)
    assert len(stored) == 1 and stored[0]["probes"] == found["probes"]
    # a stored search is reused, not redone
    assert maxbatch.execute(config(), tmp_path, int(0.3 * GIB), 4)["created"] == found["created"]


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_a_probe_that_fits_reports_the_runs_own_peak_memory(tmp_path):
    p = maxbatch.probe(config(), 2, 16 * GIB, maxbatch.host_facts(config(), tmp_path))
    assert p["fits"] is True and p["peak_bytes"] > 0 and "ru_maxrss" in p["memory_kind"]
    assert p["images_per_sec"] > 0
    assert not list(tmp_path.glob("*/records/*.json"))  # probes never enter the results


def test_profile_memory_block_expands_and_is_validated(tmp_path):
    good = tmp_path / "m.yaml"
    good.write_text("models: [tiny_cnn]\nsettings: {image_size: 32}\n"
                    "memory:\n  - frameworks: [torch, onnxruntime]\n    modes: [training]\n"
                    "    memory_cap_gb: 2\n    max_batch: 64\n")
    prof = load_profile(str(good))
    (search,) = prof.memory_searches  # ONNX Runtime does not train: left out, with the reason
    cfg, cap, max_batch = search
    assert (cfg.framework, cfg.mode, cap, max_batch) == ("torch", "training", 2 * GIB, 64)
    assert any("onnxruntime training" in s for s in prof.not_applicable)
    for bad, what in (("    memory_cap_gb: 0\n", "memory_cap_gb"), ("    batch_sizes: [4]\n", "batch_sizes"),
                      ("    max_batch: 1.5\n", "max_batch")):
        path = tmp_path / "bad.yaml"
        path.write_text("models: [tiny_cnn]\nmemory:\n  - frameworks: [torch]\n" + bad)
        with pytest.raises(ConfigError, match=what):
            load_profile(str(path))


def test_report_table_and_figure_from_stored_searches(tmp_path):
    probe, _ = fake_probe(per_image=0.1 * GIB)
    found = maxbatch.search(config(), 4 * GIB, 256, probe_fn=probe)
    search = {"host": "h", "config": {"framework": "torch", "engine": "eager", "model": "tiny_cnn",
                                      "mode": "training", "precision": "fp32", "device": "cpu"},
              "cap_bytes": 4 * GIB, "max_batch": 256, "seconds": 1.0, **found}
    table = M.searches_table([search, json.loads(json.dumps(search)) | {"host": "g"}])
    shown = M.largest_for_display(table)
    assert list(shown["largest batch (within the cap)"]) == [found["largest_batch"]] * 2
    assert shown["limited by"].str.startswith("memory").all()
    figs = M.memory_probes_figure(table)
    assert len(figs) == 2  # one per host and device
    assert all(any("memory cap 4.0 GiB" in t.get_text() for t in f.legends[0].get_texts()) for f in figs)
    assert M.memory_probes_figure(M.searches_table([])) == []


@pytest.mark.parametrize("argv, named", [
    (["--memory-cap-gb", "0"], "--memory-cap-gb 0"),
    (["--max-batch", "0"], "--max-batch 0"),
    (["--mode", "sleeping"], "sleeping"),
])


def test_bad_input_is_named_before_any_probe(argv, named, tmp_path, capsys):
    code = main(["maxbatch", "--framework", "torch", "--model", "tiny_cnn", "--results-dir", str(tmp_path), *argv])
    assert code == EXIT_BAD_INPUT and named in capsys.readouterr().err
    assert not list(tmp_path.glob("*/memory/*"))


def test_the_largest_batch_search_keeps_its_deadline_and_the_checked_interpreter(monkeypatch, tmp_path):
    from bench.commands import gpucheck
    from bench.measurement import fresh_process
    from bench.runs import maxbatch

    now = [0.0]
    monkeypatch.setattr(maxbatch.time, "monotonic", lambda: now[0])

    def probe(config, b, cap, facts, deadline=None):
        now[0] += 30.0  # each probe a fresh ResNet-50 process
        return {"batch_size": b, "fits": True, "reason": "", "images_per_sec": float(b)}

    found = maxbatch.search(None, None, 512, probe_fn=probe, deadline=100.0, start=64)
    assert [p["batch_size"] for p in found["probes"]] == [64, 128, 256, 512] and found["limited_by"] == "max_batch"
    found = maxbatch.search(None, None, 512, probe_fn=probe, deadline=now[0] + 50.0, start=64)
    assert len(found["probes"]) == 2 and found["limited_by"] == "time" and found["largest_batch"] == 128
    monkeypatch.delenv("BENCH_MAIN_PYTHON", raising=False)
    assert "BENCH_MAIN_PYTHON" not in os.environ
    source = Path(gpucheck.__file__).read_text()
    assert 'os.environ["BENCH_MAIN_PYTHON"] = sys.executable' in source
    monkeypatch.setenv("BENCH_MAIN_PYTHON", sys.executable)
    assert fresh_process.main_python() == sys.executable  # what maxbatch's probes start
