"""The rank contract: every framework's rank trains its adapter's Workload through the one rank loop, whose result
per rank is the record's Rank section. TensorFlow and JAX ranks run for real in a process of their own (tiny model,
tiny images, CPU): TensorFlow's model is built in its strategy's scope, JAX's replicas start from its workload."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.runs.distributed.rank_loop import RankResult
from tests.conftest import ROOT

TINY = 'model="tiny_cnn", mode="training", batch_size=4, image_size=16, strategy="allreduce", warmup=1, iterations=3'

TF_RANK = f"""
import sys
from bench.adapters import ADAPTERS
from bench.adapters.tensorflow.adapter import TFWorkload
from bench.config import make_config
from bench.runs.distributed.rank_loop import run_group
config = make_config(framework="tensorflow", {TINY}, workers=1)
group = ADAPTERS.get("tensorflow").distributed.rank_group(config, {{}})
assert type(group.workload) is TFWorkload, type(group.workload)
variable = group.workload.model.trainable_variables[0].value
assert group.strategy.extended.variable_created_in_scope(variable)  # the model was built in the strategy's scope
start = group.workload.weights_checksum()  # the rank's replica is the workload's model (float32 sums: rel 1e-5)
assert abs(group.checksums()[0] - start) <= 1e-5 * start, (group.checksums(), start)
run_group(group, config, {{"out_dir": sys.argv[1]}})
"""

JAX_RANK = f"""
import sys
from bench.adapters import ADAPTERS
from bench.config import make_config
from bench.runs.distributed.rank_loop import run_group
config = make_config(framework="jax", {TINY}, workers=2)
group = ADAPTERS.get("jax").distributed.rank_group(config, {{}})
assert type(group.workload).__name__ == "JaxWorkload", type(group.workload)
start = group.workload.weights_checksum()  # every replica starts from the workload's weights
assert all(abs(c - start) <= 1e-6 * start for c in group.checksums()), (group.checksums(), start)
run_group(group, config, {{"out_dir": sys.argv[1]}})
"""


def _run(code: str, out, **env) -> list[RankResult]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", **env}
    env.pop("TF_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return [RankResult.from_json(json.loads(p.read_text())) for p in sorted(out.glob("rank*.json"))]


def test_a_tensorflow_rank_trains_its_adapters_workload_built_in_its_strategys_scope(tmp_path):
    (rank,) = _run(TF_RANK, tmp_path, KERAS_BACKEND="tensorflow")
    section = rank.section
    assert (section.rank, section.role, section.steps, section.samples) == (0, "worker", 3, 3 * 4)
    assert section.checksum_after != section.checksum_before  # the workload's optimizer updated the weights
    assert {"forward_backward", "exposed_comm", "update"} <= set(section.phases_median_ms)
    assert rank.settings["communication"] == "RING" and rank.settings["optimizer"].startswith("SGD")
    assert len(rank.steps) == 3 and len(rank.warmup_s) == 1


def test_a_jax_rank_group_trains_its_adapters_workload_on_every_replica(tmp_path):
    first, second = _run(JAX_RANK, tmp_path, KERAS_BACKEND="jax")
    assert [r.section.rank for r in (first, second)] == [0, 1]
    assert first.section.checksum_after == pytest.approx(second.section.checksum_after, rel=1e-6)  # in lockstep
    assert first.section.checksum_after != first.section.checksum_before
    assert "pmean" in first.settings["inside_timer"] and first.params > 0
