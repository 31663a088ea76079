"""Export: execute the report notebook over all results, then write self-contained HTML and a PDF."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..paths import PROJECT_ROOT
from ..sweep.jupyter_kernels import MAIN_KERNEL, kernel_environment
from ..sweep.masked_notebooks import execute_masked

REPORT_NOTEBOOK = PROJECT_ROOT / "notebooks" / "report.ipynb"
# Exported beside the report, which links to it as details.html: every pair, every flagged process, the process
# tables and the published rows, so the report itself stays short.
DETAILS_NOTEBOOK = PROJECT_ROOT / "notebooks" / "details.ipynb"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chromium-headless-shell", "chrome-headless-shell")
# Chromium flags for a closed network and running as root (see TOOLING.md).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars")


class ExportError(RuntimeError):
    """The report could not be fully exported; the message says what is missing and what was kept."""


def find_chromium() -> str | None:
    explicit = os.environ.get("BENCH_CHROMIUM")
    if explicit:
        return explicit if shutil.which(explicit) else None
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def chromium(*args: str, timeout: int = 180) -> None:
    exe = find_chromium()
    if exe is None:
        raise ExportError(f"Chromium is needed (looked for BENCH_CHROMIUM or {', '.join(CHROMIUM_NAMES)} on PATH); "
                          "install it with `apt-get install chromium` (make report does this on Debian/Ubuntu)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], check=True,
                       capture_output=True, timeout=timeout)


def execute_report(results_dir: Path, out_dir: Path, notebook: Path = REPORT_NOTEBOOK) -> Path:
    """Execute an aggregate notebook over `results_dir` into `out_dir` (its figures under figures/, the details'
    under figures/details/ so that no name collides)."""
    executed = out_dir / notebook.name
    figures = out_dir / "figures" / ("" if notebook == REPORT_NOTEBOOK else notebook.stem)
    with kernel_environment(out_dir / "kernels.log"):
        # masked as it is written, as a sweep's notebooks are: the HTML and PDF are made from this file
        execute_masked(notebook, executed, kernel_name=MAIN_KERNEL, cwd=str(PROJECT_ROOT), progress_bar=False,
                       parameters={"results_dir": str(results_dir), "figures_dir": str(figures)})
    return executed


_REMOTE = re.compile(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>|<link[^>]*\bhref=\"https?://[^\"]*\"[^>]*>",
                     re.IGNORECASE)


# Narrow enough for A4/Letter: small table text that wraps, figures scaled to the page. In print, a
# section's heading cell stays with the figure or table cell after it: Chromium's print-to-PDF honours
# break-after/break-before: avoid between the sibling cell divs of nbconvert's 'lab' template, and the
# legacy page-break-* names cover older builds. Table cells wrap between words only (never inside one, which
# squeezed columns to a letter: "plat/for/m"); headers do not wrap. Not every markdown cell avoids a break
# after it: when
# all the break points on a page are 'avoid' (a run of text cells), Chromium breaks at the last one,
# which is just before the figure. Tables keep their index column: report tables are written
# without one, and hiding tbody th would also hide real row labels.
_PRINT_CSS = """<style>
.jp-RenderedHTMLCommon table { font-size: 9px; table-layout: auto; max-width: 100%; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { white-space: normal; word-break: normal;
  overflow-wrap: normal; hyphens: none; }
.jp-RenderedHTMLCommon th { white-space: normal; word-break: keep-all; }  /* wrap at spaces, never inside a word */
img { max-width: 100%; height: auto; }
@page { size: A4; margin: 12mm 11mm; }
@media print {
  /* the page's width for the tables (the lab template's screen padding would take a fifth of it) */
  .jp-Notebook, .jp-Cell, .jp-OutputArea-output, .jp-RenderedHTMLCommon { padding-left: 0; padding-right: 0; }
  .jp-Notebook { padding-top: 0; }
  .jp-OutputPrompt, .jp-InputPrompt { display: none; }
  h1, h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
  .jp-Cell:has(h2), .jp-Cell:has(h3), .jp-MarkdownCell:has(+ .jp-CodeCell) {
    break-after: avoid; page-break-after: avoid; }
  .jp-Cell:has(h2) + .jp-Cell, .jp-MarkdownCell + .jp-CodeCell { break-before: avoid; page-break-before: avoid; }
  /* sections render as outputs of one cell (bench/report/sections/): a heading's output stays with the next one */
  .jp-OutputArea-child:has(h2), .jp-OutputArea-child:has(h3) { break-after: avoid; page-break-after: avoid; }
  .jp-OutputArea-child:has(h2) + .jp-OutputArea-child, .jp-OutputArea-child:has(h3) + .jp-OutputArea-child {
    break-before: avoid; page-break-before: avoid; }
  .jp-MarkdownCell, img, table, tr, .jp-OutputArea-output { break-inside: avoid; page-break-inside: avoid; }
  thead { display: table-header-group; }
  /* a figure taller than a page would leave its heading alone on a page and then be cut: scale it to fit */
  img { max-height: 200mm; width: auto; }
}
</style>
"""


def to_html(executed: Path, html: Path, title: str = "Deep-learning framework benchmark report") -> Path:
    """Code hidden, images embedded, no remote scripts (readable offline)."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4),
                                          resources={"metadata": {"name": title}})
    html.write_text(_REMOTE.sub("", body).replace("</head>", _PRINT_CSS + "</head>", 1))
    return html


def to_pdf(html: Path, pdf: Path) -> Path:
    chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", html.resolve().as_uri())
    if not pdf.exists() or pdf.stat().st_size == 0:
        raise ExportError(f"Chromium ran but wrote no PDF at {pdf}")
    return pdf


def build_report(results_dir, out_dir=None, pdf: bool = True) -> list[Path]:
    """Execute notebooks/report.ipynb and notebooks/details.ipynb over `results_dir` and write report.html and
    details.html (+ their PDFs) in `out_dir`."""
    results_dir = Path(results_dir).resolve()
    out_dir = Path(out_dir or PROJECT_ROOT / "report").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    html = to_html(execute_report(results_dir, out_dir), out_dir / "report.html")
    details = to_html(execute_report(results_dir, out_dir, DETAILS_NOTEBOOK), out_dir / "details.html",
                      "Benchmark report: details")
    if not pdf:
        return [html, details]
    try:
        return [html, to_pdf(html, out_dir / "report.pdf"), details, to_pdf(details, out_dir / "details.pdf")]
    except (ExportError, subprocess.SubprocessError) as exc:
        raise ExportError(f"PDF export failed: {exc}. The HTML report was kept at {html} (details: {details})") \
            from None
