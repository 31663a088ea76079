"""The environment manifest records what matters and never a secret."""

import json

import pytest

from bench.config import make_config
from bench.errors import ConfigError
from bench.host import manifest
from bench.host.manifest import RECORDED_ENV_VARS, collect_manifest, host_name, recorded_environment
from bench.runs.single import execute

# Every prefix the old prefix-based capture accepted: none of them lets an unlisted name through now.
OLD_PREFIXES = ("OMP_", "MKL_", "KMP_", "CUDA_", "NCCL_", "TF_", "XLA_", "JAX_", "ONEDNN_", "DNNL_",
                "OPENBLAS_", "GOMP_", "PYTORCH_", "TORCH_", "TORCHINDUCTOR_", "MXNET_", "ORT_")


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
    planted = {f"{p}{n}": "v" for p in OLD_PREFIXES
               for n in ("PASSPHRASE", "PWD", "PAT", "FOO", "MY_SECRET", "CLI_CONFIG_FILE", "DB_URL")}
    planted.update(TF_CLI_CONFIG_FILE="/home/u/.terraformrc", TF_PASSPHRASE="p", CUDA_PWD="p", NCCL_PAT="p",
                   TF_DB_URL="postgres://user:secret@host/db", OMP_FOO="1", MY_SECRET="x",
                   TF_XLA_FLAGS="--tf_xla_auto_jit=2")
    assert recorded_environment(planted) == {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}


def test_every_allow_listed_name_is_recorded():
    assert len(set(RECORDED_ENV_VARS)) == len(RECORDED_ENV_VARS)
    env = {name: "1" for name in RECORDED_ENV_VARS}
    assert recorded_environment(env) == env


def test_recorded_values_carry_no_local_path():
    env = {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "XLA_FLAGS": "--xla_dump_to=/home/u/d --x=1"}
    assert recorded_environment(env) == {"LD_PRELOAD": "libjemalloc.so.2", "XLA_FLAGS": "--xla_dump_to=<path> --x=1"}


@pytest.mark.parametrize("value,expected", [
    ("/usr/lib/x/libjemalloc.so.2", "libjemalloc.so.2"),
    ("/opt/a/libtcmalloc.so:/opt/b/libiomp5.so", "libtcmalloc.so libiomp5.so"),
    ("libjemalloc.so.2 /lib/libfoo.so", "libjemalloc.so.2 libfoo.so"),
])


def test_ld_preload_keeps_library_names_only(value, expected):
    assert recorded_environment({"LD_PRELOAD": value}) == {"LD_PRELOAD": expected}


@pytest.mark.parametrize("value,expected", [
    ("--xla_dump_to=/home/u/dump --xla_cpu_x=1", "--xla_dump_to=<path> --xla_cpu_x=1"),
    ('--xla_dump_to="/home/u/my dumps" --x=1', "--xla_dump_to=<path> --x=1"),
    ("--xla_dump_to=~/dump", "--xla_dump_to=<path>"),
    (r"--xla_dump_to=C:\Users\u\dump --x=1", "--xla_dump_to=<path> --x=1"),
    ("--xla_gpu_autotune_level=2 --xla_force_host_platform_device_count=8",
     "--xla_gpu_autotune_level=2 --xla_force_host_platform_device_count=8"),
    ("a/b", "a/b"),
])


def test_absolute_paths_in_flags_are_masked(value, expected):
    assert recorded_environment({"XLA_FLAGS": value}) == {"XLA_FLAGS": expected}


def test_url_credentials_and_long_values_are_not_recorded_verbatim():
    env = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync", "NCCL_SOCKET_IFNAME": "http://user:pw@host/x",
           "TF_XLA_FLAGS": "--f=" + "1" * 600}
    got = recorded_environment(env)
    assert got["PYTORCH_CUDA_ALLOC_CONF"] == "backend:cudaMallocAsync"
    assert "pw" not in got["NCCL_SOCKET_IFNAME"] and "user" not in got["NCCL_SOCKET_IFNAME"]
    assert got["TF_XLA_FLAGS"] != env["TF_XLA_FLAGS"] and len(got["TF_XLA_FLAGS"]) < 600


def test_cpu_facts_include_clock_smt_and_vm():
    cpu = collect_manifest()["cpu"]
    assert isinstance(cpu["smt"], bool)
    assert isinstance(cpu["threads_per_core"], int) and cpu["threads_per_core"] >= 1
    assert cpu["smt"] == (cpu["logical_cpus"] > cpu["physical_cores"])
    assert cpu["virtual_machine"] in (True, False, None)
    assert cpu["virtual_machine"] is not True or "hypervisor" in cpu["flags"]
    assert cpu["mhz_advertised"] is None or (isinstance(cpu["mhz_advertised"], float) and cpu["mhz_advertised"] > 100)


@pytest.mark.parametrize("info,expected", [
    ({"hz_advertised_friendly": "2.4000 GHz", "hz_advertised": [2_400_000_000, 0]}, 2400.0),
    ({"hz_advertised": [3_100_000_000, 0]}, 3100.0),
])


def test_advertised_clock_comes_from_cpuinfo(monkeypatch, info, expected):
    monkeypatch.setattr(manifest, "_cpuinfo", lambda: info)
    assert manifest._advertised_mhz() == expected


@pytest.mark.parametrize("host", ["..", ".", "a" * 65, "a b/c"])
def test_unsafe_host_names_are_refused(monkeypatch, host):
    monkeypatch.setenv("BENCH_HOST", host)
    with pytest.raises(ConfigError, match="BENCH_HOST") as err:
        host_name()
    assert "\n" not in str(err.value) and "1-64 characters" in str(err.value)


@pytest.mark.parametrize("host,expected", [("lab-box_1.local", "lab-box_1.local"), ("a" * 64, "a" * 64)])
def test_host_name_is_one_safe_path_component(monkeypatch, host, expected):
    monkeypatch.setenv("BENCH_HOST", host)
    assert host_name() == expected


def test_empty_bench_host_falls_back_to_the_machine_name(monkeypatch):
    monkeypatch.setenv("BENCH_HOST", "")
    monkeypatch.setattr(manifest.socket, "gethostname", lambda: "node/7")
    assert host_name() == "node_7"
