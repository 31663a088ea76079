"""MXNet in its own environment and Jupyter kernel: a sweep runs it through papermill's kernel option, the
main environment never imports it, and an environment that is not built is a skipped run with the reason."""

import json

import nbformat
import pytest

from bench.adapters import ADAPTERS
from bench.adapters.mxnet.adapter import MXNetAdapter
from bench.report.systems import status_rows
from bench.results.store import load_records
from bench.sweep.profiles import load_profile
from tests.conftest import TEST_HOST, TINY_RUN, assert_utilisation_sane, bench_cli

BUILT = ADAPTERS.get("mxnet").interpreter() is not None
needs_env = pytest.mark.skipif(not BUILT, reason="MXNet's environment (.venv-mxnet) is not built: `make setup-mxnet`")

PROFILE = ("frameworks: [mxnet]\nmodels: [tiny_cnn]\nmodes: [inference, training]\nbatch_sizes: [4]\nrepeats: 1\n"
           "settings: {image_size: 32, protocol: seed, warmup: 2, iterations: 5, phase_iterations: 2}\n")


def _sweep(tmp_path):
    from bench.sweep.runner import run_sweep

    (tmp_path / "p.yaml").write_text(PROFILE)
    results = tmp_path / "results"
    run_sweep(load_profile(str(tmp_path / "p.yaml")), results, progress=False, announce=lambda _: None)
    return results, {r["config"]["mode"]: r for r in load_records(results)}


def test_the_main_environment_does_not_import_mxnet():
    import importlib.util

    assert importlib.util.find_spec("mxnet") is None  # numpy 1.23.5 would conflict with the main pins


@pytest.mark.full
@needs_env
def test_a_sweep_runs_mxnet_in_its_own_kernel(tmp_path):
    results, records = _sweep(tmp_path)
    assert set(records) == {"inference", "training"}
    for r in records.values():
        assert r["status"] == "ok", r["reason"]
        assert r["manifest"]["framework"]["version"] == "1.9.1"
        assert r["manifest"]["interpreter"] == str(ADAPTERS.get("mxnet").interpreter().parent.parent)
        assert r["manifest"]["libraries"]["numpy"] == "1.23.5"
        assert r["fairness"]["failed"] == [] and r["fairness"]["threads_match"] is True
        assert_utilisation_sane(r)  # the peak is measured by the main environment
    assert records["training"]["fairness"]["weights_changed"] is True
    assert {r["fairness"]["params"] for r in records.values()} == {5466}  # torch's tiny_cnn
    notebooks = list((results / TEST_HOST / "notebooks").glob("mxnet_*.ipynb"))
    # one notebook per config, and one more per retry of a run a busy machine disturbed (a0, a1, ...)
    assert {"inference", "training"} == {m for p in notebooks for m in ("inference", "training") if m in p.name}
    assert all(nbformat.read(p, 4).metadata.papermill.exception is None for p in notebooks)


@needs_env
def test_the_cli_runs_mxnet_in_its_environment(shared_results):
    proc = bench_cli("run", "--framework", "mxnet", "--mode", "training", *TINY_RUN, results=shared_results)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(open(proc.stdout.strip().splitlines()[-1].removeprefix("record: ")).read())
    assert r["status"] == "ok" and r["settings"]["engine"].startswith("hybridize")


@needs_env
def test_gluon_definitions_match_torchvision_parameter_counts():
    """Run in MXNet's interpreter: every catalogue model has torchvision's parameter count."""
    import subprocess

    from bench.measurement.fresh_process import bench_environ

    code = ("import mxnet as mx, json\nfrom bench.adapters.mxnet.models import build_gluon_model\nout = {}\n"
            "for name, s in [('resnet50', 64), ('mobilenet_v2', 64), ('vgg16', 32), ('googlenet', 64)]:\n"
            "    net = build_gluon_model(name); net.initialize(); net(mx.nd.zeros((1, 3, s, s)))\n"
            "    out[name] = sum(p.data().size for p in net.collect_params().values() if p.grad_req != 'null')\n"
            "print(json.dumps(out))")
    proc = subprocess.run([str(ADAPTERS.get("mxnet").interpreter()), "-c", code], capture_output=True, text=True,
                          env=bench_environ(), check=True)
    assert json.loads(proc.stdout) == {"resnet50": 25_557_032, "mobilenet_v2": 3_504_872, "vgg16": 138_357_544,
                                       "googlenet": 6_624_904}


@pytest.mark.full  # moved from the default tier on 2026-11-27: `make test` within 10 minutes
def test_an_environment_that_is_not_built_is_a_skipped_run_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(MXNetAdapter, "environment", ".venv-mxnet-not-built")
    _, records = _sweep(tmp_path)
    for r in records.values():
        assert r["status"] == "skipped"
        assert "environment of its own" in r["reason"] and "make setup-mxnet" in r["reason"]
    row = next(r for r in status_rows() if r["framework"] == "MXNet")
    assert row["status"] == "not installed" and "make setup-mxnet" in row["reason"]
