"""`bench gpucheck`: the GPU checklist planned from what each framework sees, run step by step as fresh processes
with this interpreter (no Jupyter); on this CPU its plumbing runs with a tiny model."""

from __future__ import annotations

import json

import pytest

from bench.commands import gpucheck

from .conftest import bench_cli

GPU_HOST = {"torch": {"version": "2.11.0", "gpus": ["cuda:0 NVIDIA H100 80GB HBM3 (sm_90)"]},
            "jax": {"version": "0.11.2", "gpus": ["gpu:0 NVIDIA H100 80GB HBM3"]},
            "tensorflow": {"version": None, "gpus": [], "gpu": "tensorflow is not installed"}}


def test_the_plan_covers_the_checklist_on_a_gpu_host():
    planned = gpucheck.plan(GPU_HOST, "cuda:0", tiny=False)
    steps = {s.name: s for s in planned}
    # the claims never run on a GPU first (--minutes may stop the rest): DDP on NCCL, 2 gloo ranks on the GPU, a
    # training run (its NVML energy), JAX on its device; then the reference framework's precisions and its search
    assert [s.name for s in planned[:6]] == ["torch DDP 1 rank NCCL", "torch DDP 2 ranks gloo on one GPU",
                                             "torch training fp32 cuda:0", "jax data parallel over 1 device",
                                             "jax training fp32 cuda:0", "torch largest training batch bf16"]
    assert [s.name for s in planned[6:9]] == ["torch training tf32 cuda:0", "jax training tf32 cuda:0",
                                              "jax training bf16 cuda:0"] and planned[-1].name.startswith("tensorflow")
    for precision in ("fp32", "tf32"):  # bf16 and fp16 run at the batch the search finds (best_batch_steps)
        assert steps[f"torch training {precision} cuda:0"].outcome == "not run"
    assert [p for p in ("fp32", "tf32", "bf16") if f"jax training {p} cuda:0" in steps] == ["fp32", "tf32", "bf16"]
    absent = [s for name, s in steps.items() if name.startswith("tensorflow")]  # one run, a skipped record of why
    assert [s.name for s in absent] == ["tensorflow on cuda:0: tensorflow is not installed"]
    nccl, gloo = steps["torch DDP 1 rank NCCL"].argv, steps["torch DDP 2 ranks gloo on one GPU"].argv
    assert "--backend" not in nccl and nccl[nccl.index("--workers") + 1] == "1"  # auto: NCCL with a GPU per rank
    assert gloo[gloo.index("--backend") + 1] == "gloo" and gloo[gloo.index("--workers") + 1] == "2"
    assert "jax data parallel over 1 device" in steps
    search = steps["torch largest training batch bf16"].argv
    assert search[0] == "maxbatch" and search[search.index("--model") + 1] == "resnet50"


def test_best_batch_runs_beside_the_published_figure():
    found = gpucheck.Step("torch largest training batch bf16", ["maxbatch"], best_batch=256)
    bf16, fp16 = gpucheck.best_batch_steps([found], "cuda:0", tiny=False)
    assert bf16.argv[bf16.argv.index("--batch-size") + 1] == "256" and "fp16" in fp16.name
    assert gpucheck.published_reference() == 2616  # Lambda's PyTorch AMP fp16 ResNet-50 on one H100 SXM


def test_without_a_gpu_it_says_so_and_the_dry_run_lists_the_steps():
    done = bench_cli("gpucheck", "--frameworks", "torch", timeout=300)
    assert done.returncode == 1 and "no GPU on this machine" in done.stdout
    done = bench_cli("gpucheck", "--frameworks", "torch", "--device", "cpu", "--tiny", "--dry-run", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "torch training tf32 cpu: not applicable" in done.stdout and "python -m bench maxbatch" in done.stdout


@pytest.mark.full
def test_the_tiny_check_runs_every_step_here(tmp_path):
    done = bench_cli("gpucheck", "--frameworks", "torch", "--device", "cpu", "--tiny", results=tmp_path,
                     timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(next(tmp_path.glob("*/gpucheck-*.json")).read_text())
    outcomes = {s["name"]: s["outcome"] for s in summary["steps"]}
    assert "img/s" in outcomes["torch DDP 2 ranks gloo on one CPU"] and "largest batch 8" in \
        outcomes["torch largest training batch bf16"]
    assert not [o for o in outcomes.values() if o.startswith(("failed", "error", "stopped", "not run"))], outcomes
    assert len(list(tmp_path.glob("*/records/*.json"))) >= 4
