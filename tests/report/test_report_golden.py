"""The report and its details rendered from the committed tiny sweep say exactly what they said when the golden
files were written (tests/fixtures/golden/): a refactor of the estimates, flags or sections changes no number, flag or
sentence. Regenerate on purpose with `BENCH_WRITE_GOLDEN=1` and review the diff."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bench.report.context import load
from bench.report.export import build_report
from tests.rendered import page_content

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"
HOST = "test-host"


def _steady_peaks(results: Path) -> Path:
    """The committed sweep with its peak trials made steady, so that utilisations are given (the committed peak was
    measured under load: every utilisation is withheld there)."""
    for path in (results / HOST / "sweeps").glob("*.json"):
        manifest = json.loads(path.read_text())
        for entry in manifest["peaks"].values():
            for when in ("start", "end"):
                if entry.get(when):
                    entry[when]["trials_flops_per_sec"] = [entry[when]["flops_per_sec"]] * 5
                    entry[when]["spread"] = 0.0
        path.write_text(json.dumps(manifest))
    return results


@pytest.fixture(scope="module", params=["committed", "steady_peak"])
def rendered(request, committed_sweep, tmp_path_factory):
    results = committed_sweep
    if request.param == "steady_peak":
        results = tmp_path_factory.mktemp("steady") / "results"
        shutil.copytree(committed_sweep, results)
        _steady_peaks(results)
    out = tmp_path_factory.mktemp(f"golden-{request.param}")
    report, details = build_report(results, out, pdf=False)
    # the per-config estimates every page is drawn from, utilisation included (a figure shows it, no table does)
    configs = load(results).configs
    estimates = configs.reindex(sorted(configs.columns), axis=1).to_csv(index=False)
    return request.param, {"report": page_content(report), "details": page_content(details), "configs": estimates}


@pytest.mark.parametrize("page", ["report", "details", "configs"])
def test_the_rendered_page_is_unchanged(rendered, page):
    name, pages = rendered
    golden = GOLDEN / f"{name}_{page}.{'csv' if page == 'configs' else 'txt'}"
    if os.environ.get("BENCH_WRITE_GOLDEN"):
        golden.write_text(pages[page])
    assert pages[page] == golden.read_text(), f"{golden.name} differs: diff it against the rendered page"
