"""JAX data parallel over one process's devices: a real 2-device run on CPU host devices, and what is refused."""

from __future__ import annotations

import pytest

from bench.config import make_config
from bench.errors import ConfigError
from bench.host import devices
from bench.results.record import validate_record
from bench.runs.single import execute

TINY = dict(framework="jax", model="tiny_cnn", mode="training", batch_size=4, image_size=16, warmup=1, iterations=3)


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_allreduce_over_two_host_devices_keeps_the_replicas_identical(tmp_path):
    record = execute(make_config(**TINY, strategy="allreduce", workers=2), tmp_path)
    assert record["status"] == "ok", record["reason"]
    validate_record(record)
    d = record["distributed"]
    assert (d["workers"], d["launch"], d["global_batch"]) == (2, "local_devices", 8)
    assert [r["device"] for r in d["ranks"]] == ["cpu:0", "cpu:1"]  # one process, two XLA host devices
    assert record["summary"]["images_per_sec_median"] > 0
    before = {r["checksum_before"] for r in d["ranks"]}
    after = [r["checksum_after"] for r in d["ranks"]]
    assert after[0] == pytest.approx(after[1], rel=1e-6) and after[0] not in before  # trained, in lockstep
    assert not [f for f in record["flags"] if f["name"] in ("ranks_disagree", "weights_unchanged")]
    assert "host devices" in record["settings"]["host_devices"] and "pmean" in record["settings"]["inside_timer"]
    assert record["fairness"]["failed"] == [] and record["fairness"]["recipe_match"]
    # RAPL is read once for the process (rank 0); without a readable counter the reason is recorded
    energy = d["ranks"][0]["energy"]
    assert energy["available"] or energy["reason"]
    assert d["ranks"][1]["energy"] is None


def test_host_device_flag_replaces_any_count_and_keeps_other_flags():
    from bench.adapters.jax.worker import host_device_flags

    assert host_device_flags("", 2) == "--xla_force_host_platform_device_count=2"
    assert host_device_flags("--xla_cpu_x=1 --xla_force_host_platform_device_count=8", 3) == \
        "--xla_cpu_x=1 --xla_force_host_platform_device_count=3"


def test_jax_distributed_configs_are_refused_where_they_cannot_run(monkeypatch):
    with pytest.raises(ConfigError, match="invalid strategy 'ps_sync' for jax; valid choices: independent, allreduce"):
        make_config(**TINY, strategy="ps_sync", workers=2)
    with pytest.raises(ConfigError, match="devices of one process on one machine; valid choice: nodes 1"):
        make_config(**TINY, strategy="allreduce", workers=2, nodes=2)
    monkeypatch.setattr(devices, "gpus", lambda: ({"index": "0", "name": "a GPU"},))
    with pytest.raises(ConfigError, match="2 workers need 2 GPUs, this machine has 1; valid here: workers 1 to 1"):
        make_config(**TINY, strategy="allreduce", workers=2, device="cuda")
    assert make_config(**TINY, strategy="allreduce", workers=1, device="cuda").device == "cuda:0"


def test_a_jax_process_runs_keras_on_jax_whatever_backend_it_inherited():
    # CI, 2026-11-27: an in-process TensorFlow test left KERAS_BACKEND=tensorflow in pytest's environment, and the
    # JAX data-parallel run it then started refused to run ("Keras in this process already runs on 'tensorflow'")
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = "from bench.adapters.jax.training import import_jax; print(import_jax(1)[1].backend.backend())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": "tensorflow"})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("jax"), proc.stderr[-2000:]
