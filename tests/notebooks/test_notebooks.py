"""nbval over every notebook with tiny parameters (papermill --prepare-only, then pytest --nbval-lax).

The aggregate notebooks read the committed tiny sweep (tests/fixtures/tiny_sweep) in `make test`, and a tiny
sweep made by this checkout in `make test-full`."""

import json
import subprocess
import sys

import papermill
import pytest

from tests.conftest import ROOT, TINY_RUN

AGGREGATES = ["per_hardware", "per_framework", "details", "report"]


@pytest.mark.parametrize("source", ["committed_sweep", pytest.param("tiny_sweep", marks=pytest.mark.full)])
def test_every_notebook_runs_under_nbval(source, request, tmp_path):
    results = request.getfixturevalue(source)
    results = results[0] if isinstance(results, tuple) else results
    tiny = dict(zip([a.removeprefix("--").replace("-", "_") for a in TINY_RUN[0::2]], TINY_RUN[1::2]))
    settings = {**{k: int(v) if v.isdigit() else v for k, v in tiny.items()}, "framework": "torch"}
    params = {"settings": settings, "results_dir": str(tmp_path / "nb-results")}
    papermill.execute_notebook(str(ROOT / "notebooks" / "benchmark.ipynb"), str(tmp_path / "benchmark.ipynb"),
                               parameters=params, prepare_only=True)
    for name in AGGREGATES:
        papermill.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb"),
                                   parameters={"results_dir": str(results)}, prepare_only=True)
    papermill.execute_notebook(str(ROOT / "notebooks" / "distributed.ipynb"), str(tmp_path / "distributed.ipynb"),
                               parameters={**params, "settings": {**settings, "image_size": 16, "iterations": 3,
                                           "warmup": 1, "mode": "training", "strategy": "allreduce", "workers": 2}},
                               prepare_only=True)
    papermill.execute_notebook(str(ROOT / "notebooks" / "compare.ipynb"), str(tmp_path / "compare.ipynb"),
                               parameters={"a": str(results), "b": str(results)}, prepare_only=True)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
                           *sorted(str(p) for p in tmp_path.glob("*.ipynb"))],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    written = [json.loads(p.read_text()) for p in (tmp_path / "nb-results").rglob("records/*.json")]
    assert {r["config"].get("strategy", "none") for r in written} == {"none", "allreduce"}, \
        "the benchmark and distributed notebooks each wrote their record"
