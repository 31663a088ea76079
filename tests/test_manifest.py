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


def test_only_the_exact_allow_list_is_recorded():
    planted = {f"{p}{n}": "v" for p in ("OMP_", "TF_", "CUDA_", "NCCL_", "XLA_", "JAX_", "MKL_", "PYTORCH_")
               for n in ("PASSPHRASE", "PWD", "PAT", "FOO")}
    planted.update(TF_CLI_CONFIG_FILE="/home/u/.terraformrc", TF_DB_URL="postgres://user:secret@host/db",
                   MY_SECRET="x", TF_XLA_FLAGS="--tf_xla_auto_jit=2")
    assert recorded_environment(planted) == {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}


def test_recorded_values_carry_no_local_path():
    env = {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "XLA_FLAGS": "--xla_dump_to=/home/u/d --x=1"}
    assert recorded_environment(env) == {"LD_PRELOAD": "libjemalloc.so.2", "XLA_FLAGS": "--xla_dump_to=<path> --x=1"}


def test_cpu_facts_include_clock_smt_and_vm():
    cpu = collect_manifest()["cpu"]
    assert isinstance(cpu["smt"], bool) and cpu["threads_per_core"] >= 1
    assert cpu["virtual_machine"] in (True, False, None)
    assert cpu["mhz_advertised"] is None or cpu["mhz_advertised"] > 100
