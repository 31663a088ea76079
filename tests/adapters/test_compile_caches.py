"""Caches of compiled artefacts across processes: a key for every fact that decides the artefact, a cached export
that is the same model, hit/miss in the record, the folders in the sweep manifest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bench.adapters import ADAPTERS, compile_cache
from bench.adapters.compile_cache import FolderWatch, build_key, outcomes
from bench.adapters.onnx_export import export_key, export_onnx
from bench.config import make_config
from bench.results.record import Record
from bench.results.sweep_manifest import SweepManifest, as_manifests

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_export_key_changes_with_model_batch_shape_and_seed():
    base = export_key("tiny_cnn", 4, 32, 0)
    assert export_key("tiny_cnn", 4, 32, 0) == base
    others = [export_key("resnet18", 4, 32, 0), export_key("tiny_cnn", 8, 32, 0), export_key("tiny_cnn", 4, 64, 0),
              export_key("tiny_cnn", 4, 32, 1)]
    assert len({base, *others}) == 5


def test_the_export_key_changes_with_the_exporter_versions(monkeypatch):
    base = export_key("tiny_cnn", 4, 32, 0)
    monkeypatch.setattr("bench.adapters.onnx_export.package_version", lambda name: "0.0-other")
    assert export_key("tiny_cnn", 4, 32, 0) != base


def test_a_key_changes_with_any_fact_and_not_with_their_order():
    facts = {"model": "resnet50", "batch_size": 16, "precision": "fp32"}
    assert build_key(**facts) == build_key(**dict(reversed(facts.items())))
    for name, other in (("model", "resnet18"), ("batch_size", 32), ("precision", "bf16")):
        assert build_key(**{**facts, name: other}) != build_key(**facts)


def test_a_cached_export_is_the_same_model(cache, monkeypatch):
    import onnxruntime as ort

    first = export_onnx("tiny_cnn", 2, 32, 0, 1)
    second = export_onnx("tiny_cnn", 2, 32, 0, 1)
    assert (first.cache, second.cache) == ("miss", "hit") and second.params == first.params
    monkeypatch.setenv(compile_cache.ENV, "off")
    fresh = export_onnx("tiny_cnn", 2, 32, 0, 1)
    assert fresh.cache is None

    def logits(exported):
        return ort.InferenceSession(str(exported.path)).run(None, {"images": exported.x})[0]
    np.testing.assert_array_equal(logits(second), logits(fresh))  # the same weights, the same outputs
    second.folder.cleanup()  # what a runtime does once it holds the model: the cached file stays
    assert second.path.is_file() and second.path.stat().st_mode & 0o222 == 0  # read-only: nothing rewrites it


@pytest.mark.parametrize("fw, caches", [("onnxruntime", {"onnx_export"}), ("openvino", {"onnx_export", "openvino"})])
def test_a_runtime_reports_a_miss_then_a_hit(cache, fw, caches):
    config = make_config(framework=fw, model="tiny_cnn", batch_size=2, image_size=32, threads=1)
    first, second = (outcomes(ADAPTERS.get(fw).prepare(config).compile_caches) for _ in range(2))
    assert first == dict.fromkeys(caches, "miss") and second == dict.fromkeys(caches, "hit")


def test_a_folder_watch_tells_a_written_entry_from_a_reused_one(tmp_path):
    assert FolderWatch(tmp_path).outcome() == "miss"  # an empty cache cannot have served the build
    (tmp_path / "entry").write_text("compiled")
    watch = FolderWatch(tmp_path)
    assert watch.outcome() == "hit"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "another").write_text("compiled")
    assert watch.outcome() == "miss"


def test_xla_keeps_every_compilation_in_its_versioned_folder(cache):
    class Config:
        def __init__(self):
            self.values = {}

        def update(self, name, value):
            self.values[name] = value

    class Jax:
        config = Config()

    watch = compile_cache.configure_xla(Jax)
    assert watch is not None and watch.folder.parent == cache and watch.folder.name.startswith("xla-jax")
    assert Jax.config.values == {"jax_compilation_cache_dir": str(watch.folder),
                                 "jax_persistent_cache_min_compile_time_secs": 0.0,
                                 "jax_persistent_cache_min_entry_size_bytes": 0}


def test_inductor_reads_its_cache_from_the_listed_folder(cache, monkeypatch):
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    watch = compile_cache.configure_inductor()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(watch.folder) and watch.folder.parent == cache
    assert compile_cache.listing() == {watch.folder.name: str(watch.folder)}


def test_caches_off_means_no_folder_and_no_listing(monkeypatch):
    monkeypatch.setenv(compile_cache.ENV, "off")
    assert compile_cache.cache_dir("onnx", "export") is None and compile_cache.listing() == {}
    assert compile_cache.configure_xla(object()) is None and compile_cache.openvino_cache() == ({}, None)


def test_the_record_and_manifest_fields_are_additive():
    path = next((FIXTURES / "tiny_sweep" / "test-host" / "records").glob("*tensorflow_tiny_cnn_training*.json"))
    old = Record.from_json(json.loads(path.read_text()))
    assert old.startup is not None and old.startup.build_cache is None  # written before the field existed
    old.startup.build_cache = {"onnx_export": "hit"}
    assert Record.from_json(old.to_json()).startup.build_cache == {"onnx_export": "hit"}
    [manifest] = as_manifests([json.loads((FIXTURES / "sweep_manifests" / "adaptive.json").read_text())])
    assert manifest.compile_caches == {}
    manifest.compile_caches = {"onnx-export": "/cache/onnx-export"}
    assert SweepManifest.from_json(manifest.to_json()).compile_caches == {"onnx-export": "/cache/onnx-export"}
