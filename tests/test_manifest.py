"""The environment manifest records what matters and never a secret."""

import json

from bench import make_config
from bench.manifest import collect_manifest, recorded_environment
from bench.runner import execute


def test_allow_list_only():
    env = {"OMP_NUM_THREADS": "2", "KERAS_BACKEND": "tensorflow", "HOME": "/root", "PATH": "/bin",
           "TF_API_TOKEN": "x", "CUDA_SECRET": "y", "AWS_SECRET_ACCESS_KEY": "z"}
    assert recorded_environment(env) == {"OMP_NUM_THREADS": "2", "KERAS_BACKEND": "tensorflow"}


def test_planted_secret_never_appears_in_a_record(tmp_path, monkeypatch):
    secret = "hunter2-planted-secret-value"
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "TF_SERVING_API_KEY", "OMP_PASSWORD", "DB_URL"):
        monkeypatch.setenv(name, secret)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    record = execute(make_config(framework="null", model="tiny_cnn", protocol="seed"), tmp_path)
    text = json.dumps(record)
    assert secret not in text
    assert record["manifest"]["env"]["OMP_NUM_THREADS"] == "2"


def test_manifest_describes_the_machine():
    m = collect_manifest({"version": "x"})
    assert m["cpu"]["model"] and m["cpu"]["physical_cores"] >= 1 and m["memory_bytes"] > 0
    assert {"torch", "numpy"} <= set(m["libraries"])
    assert len(m["git"]["commit"] or "") in (0, 40)
    assert isinstance(m["gpus"], list)
