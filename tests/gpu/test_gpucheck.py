"""`bench gpucheck`: the GPU checklist planned from what each framework sees, run step by step as fresh processes
with this interpreter (no Jupyter); on this CPU its plumbing runs with a tiny model."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bench.commands import gpucheck
from bench.host import energy
from tests.conftest import ROOT, bench_cli

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


BARE = {"PYTHONPATH": f"{ROOT / 'tests' / 'bare'}{os.pathsep}{ROOT}",
        "BENCH_UNIMPORTABLE": "fastjsonschema,keras,pandas,matplotlib,seaborn,scipy,IPython,papermill,nbformat"}


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_gpucheck_and_doctor_run_on_a_bare_interpreter(tmp_path):
    """fastjsonschema, keras and pandas unimportable (an import hook, in every child too): doctor answers, JAX's runs
    (which need keras) are skipped records saying so, a torch run writes a record checked against the schema in plain
    Python, and each record is valid for the full environment that renders it."""
    # Pillow too (a GPU container may lack it; the int8 path imported it at start-up), except for the torch run:
    # torchvision needs it
    no_pil = {**BARE, "BENCH_UNIMPORTABLE": BARE["BENCH_UNIMPORTABLE"] + ",PIL"}
    done = bench_cli("doctor", "--results-dir", str(tmp_path), env=no_pil, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "torch" in done.stdout and "jax" in done.stdout
    done = bench_cli("gpucheck", "--frameworks", "jax", "--device", "cpu", "--tiny", "--minutes", "3",
                     "--results-dir", str(tmp_path), env=no_pil, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(next(tmp_path.glob("*/gpucheck-*.json")).read_text())
    assert summary["validator"].startswith("bench.results.json_check")
    jax_runs = [s for s in summary["steps"] if s["name"].startswith("jax training fp32")]
    assert jax_runs and jax_runs[0]["outcome"].startswith("skipped: jax is installed") and "keras" in \
        jax_runs[0]["outcome"]
    assert (next(tmp_path.glob("*/gpucheck-*.txt")).read_text().count("\n")) >= 3  # the pasteable claims
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--batch-size", "2",
                     "--protocol", "seed", "--warmup", "1", "--iterations", "2", "--phase-iterations", "0",
                     "--results-dir", str(tmp_path), env=BARE, timeout=300)
    assert done.returncode == 0, done.stderr
    from bench.results.record import validate_record

    records = [json.loads(p.read_text()) for p in tmp_path.glob("*/records/*.json")]
    assert {r["status"] for r in records} == {"ok", "skipped"}
    for record in records:
        validate_record(record)  # with fastjsonschema, here
    ok = next(r for r in records if r["status"] == "ok")
    assert ok["manifest"]["record_check"].startswith("bench.results.json_check")  # said in the record


def test_gpucheck_summary_survives_a_counter_that_did_not_advance():
    from bench.commands.gpucheck import summary

    ok = {"status": "ok", "summary": {"images_per_sec_median": 10.0, "n": 3}, "utilisation": None,
          "energy": energy.measured("NVML total energy, GPU 0", 0.0, 30)}
    assert "energy: the counter did not advance" in summary(ok)
    assert summary({"status": "skipped", "reason": ""}) == "skipped: no reason given"


@pytest.mark.parametrize("minutes", ["nan", "-5", "0", "inf", "soon"])
def test_gpucheck_minutes_are_validated(minutes, capsys):
    from bench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["gpucheck", "--minutes", minutes])
    assert stop.value.code == 2 and f"invalid value {minutes!r}" in capsys.readouterr().err


@pytest.mark.full
def test_gpucheck_and_doctor_in_a_real_bare_virtual_environment(tmp_path):
    """A virtual environment with only psutil, numpy, py-cpuinfo and one framework (JAX, without keras), as pins in
    requirements.txt: doctor answers, and gpucheck writes JAX's runs as skipped records naming keras (exit 0)."""
    import subprocess

    pins = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.split("==")[0].strip() in ("psutil", "numpy", "py-cpuinfo", "jax", "jaxlib", "ml_dtypes",
                                               "opt_einsum", "scipy")]
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", *pins], check=True, timeout=900)
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(ROOT),
           "BENCH_HOST": "bare"}
    for argv in (["doctor", "--results-dir", str(tmp_path / "r")],
                 ["gpucheck", "--device", "cpu", "--tiny", "--frameworks", "jax", "--minutes", "3", "--results-dir",
                  str(tmp_path / "r")]):
        done = subprocess.run([str(python), "-m", "bench", *argv], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("*/records/*.json")]
    assert records and all(r["status"] == "skipped" and "keras" in r["reason"] for r in records)
