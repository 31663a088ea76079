"""End to end: tiny sweep records -> report.html (offline, code hidden) and report.pdf (titles, charts)."""

import shutil
import subprocess

import pytest

from bench.report import figures as F
from bench.report.context import load
from bench.report.export import build_report, chromium
from bench.stats.judge import Judge
from tests.conftest import TEST_HOST, bench_cli

SECTIONS = ["Answer", "Reading the answer", "What else the machine was doing", "Throughput vs batch size",
            "Each framework at batch 32 and at its best batch", "Distributed data-parallel training",
            "Frameworks: measured and not", "Methodology", "Environment"]
# What the linked details hold (notebooks/details.ipynb, exported beside the report).
DETAILS_SECTIONS = ["Findings", "Study coverage", "References", "Statistics.", "Every framework pair",
                    "Flagged numbers", "Latency at batch size 1", "Peak memory", "Utilisation",
                    "Phase breakdown", "Start-up cost", "Fairness and parity", "Distributed: where the step goes",
                    "Distributed: communication model", "Appendix: every published row, with its source"]
# What the tiny profile can show (its tiny CNN has no published or 2019 figures to overlay).
TINY_FIGURES = {"per_hardware", "per_framework", "drift", "scaling_throughput", "scaling_efficiency"}
DETAILS_FIGURES = {"latency_batch1", "memory", "utilisation", "phases", "scaling_phases", "network_fit",
                   "predicted_vs_measured", "scaling_extrapolation"}


@pytest.fixture(scope="module", params=["committed_sweep", pytest.param("tiny_sweep", marks=pytest.mark.full)])
def results(request):
    """The committed tiny sweep (`make test`) and one swept by this checkout (`make test-full`)."""
    found = request.getfixturevalue(request.param)
    return found[0] if isinstance(found, tuple) else found


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    html, pdf = build_report(results, out)[:2]
    return results, out, html, pdf


def test_html_is_self_contained_with_code_hidden(report):
    results, out, html, _ = report
    text = html.read_text()
    for title in SECTIONS:
        assert title in text, title
    # the tiny CNN has nothing to set beside the 2019 study's VGG16/ResNet-152: that section is left out, not empty
    assert "No data for this figure yet (then_and_now)" not in text and ">Then and now: the 2019 study<" not in text
    # nor any published single-device figure: that section is left out too, not "No data"
    assert ">Published reference figures<" not in text and "No data for this figure yet" not in text
    assert text.count("data:image/png;base64") >= len(TINY_FIGURES)  # the charts are embedded, not linked
    assert 'src="http' not in text and "<link" not in text.replace('<link rel="icon"', "")  # nothing remote
    assert "from bench.report" not in text and "make_config(" not in text  # code hidden
    drawn = {p.stem.rsplit("_", 1)[0] for p in (out / "figures").glob("*.png")}
    # page 1's verdict picture is drawn where a comparison has an interval on two sound sides, and said absent else
    assert drawn - {"verdicts"} == TINY_FIGURES
    from bench.report.sections.answer import NO_POINTS
    assert ("verdicts" in drawn) != (NO_POINTS.split(":")[0] in text)
    details = (out / "details.html").read_text()
    assert 'href="details.html"' in text and "from bench.report" not in details
    for title in DETAILS_SECTIONS:
        assert title in details, title
    assert "published, not measured here" in details
    expected = set(DETAILS_FIGURES)
    if load(results).configs["utilisation"].isna().all():  # the committed sweep's peak was measured under load
        expected.discard("utilisation")
        assert "peak_unsteady" in details and "no utilisation is given" in details  # said, not silently left out
    assert {p.stem.rsplit("_", 1)[0] for p in (out / "figures" / "details").glob("*.png")} == expected


def test_pdf_has_the_sections_and_the_charts(report):
    _, out, _, pdf = report
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    for title in SECTIONS:
        assert title in flat, title
    images = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert len(images.strip().splitlines()) - 2 >= len(TINY_FIGURES)  # 2 header lines, then a line per image


def test_headless_chromium_renders_a_non_blank_page(report, tmp_path):
    from PIL import Image

    _, _, html, _ = report
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,1600", html.resolve().as_uri())
    img = Image.open(shot).convert("L")
    dark = sum(img.histogram()[:200]) / (img.width * img.height)
    assert dark > 0.02, f"page looks blank ({dark:.2%} non-white pixels)"


def test_findings_are_computed_from_the_data(report):
    results, *_ = report
    from bench.report.sections.findings import findings
    from bench.report.sections.header import header, provenance
    from bench.report.sections.methodology import methodology

    d = load(results)
    lines = findings(d.configs, d.summary, None, Judge())
    # a winner is a finding of its own; configurations without one are counted once (page 1 gives each reason)
    assert any(("tiny_cnn inference" in line and ("faster" in line or "equivalent" in line))
               or line.startswith("Undecided in ") for line in lines)
    assert len(d.configs) == 8 and set(d.configs["processes"]) == {2}  # 2 fresh processes per config
    verdicts = set(d.ratios["verdict"])
    assert verdicts <= {"winner", "small difference", "equivalent", "undecided"}  # the four verdicts, nothing else
    assert "Built " in provenance(d) and "tiny" in provenance(d) and "Status:" in header(d)
    method = methodology(d)
    assert "order seed 0" in method and "2 repetitions per config" in method  # generated from what ran


def test_results_from_another_host_appear_as_more_hardware(results, tmp_path):
    merged = tmp_path / "merged"
    shutil.copytree(results / TEST_HOST, merged / TEST_HOST)
    shutil.copytree(results / TEST_HOST, merged / "other-machine")
    for path in (merged / "other-machine" / "records").glob("*.json"):
        path.write_text(path.read_text().replace(f'"host": "{TEST_HOST}"', '"host": "other-machine"'))
    d = load(merged)
    assert d.configs["platform"].nunique() == 2
    assert len(F.per_hardware(d.configs)) == 2


@pytest.mark.full  # moved from the default tier on 2026-11-27 (22 s): `make test` within 10 minutes
def test_missing_chromium_keeps_html_and_exits_nonzero(results, tmp_path):
    proc = bench_cli("report", "--results-dir", str(results), "--out", str(tmp_path),
                     env={"BENCH_CHROMIUM": "/nonexistent/chromium"})
    assert proc.returncode == 1
    assert "PDF export failed" in proc.stderr and "Chromium is needed" in proc.stderr
    assert (tmp_path / "report.html").exists() and not (tmp_path / "report.pdf").exists()
