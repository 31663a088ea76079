"""Report sections as objects: every section module is listed (once per page), and each renders blocks only."""

from __future__ import annotations

import pkgutil

import matplotlib.pyplot as plt

from bench.report import sections
from bench.report.context import load
from bench.report.sections import details
from bench.report.sections.base import Figures, Section, Table, Text

NOT_SECTIONS = {"base", "display", "details"}


def _modules(package) -> set[str]:
    return {f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)} - \
        {f"{package.__name__}.{n}" for n in NOT_SECTIONS}


def test_every_section_module_is_on_a_page_once():
    for page in (sections.REPORT, details.DETAILS):
        names = [m.__name__ for m in page]
        assert len(names) == len(set(names)), names
    shown = {m.__name__ for m in sections.REPORT + details.DETAILS}
    assert _modules(sections) | _modules(details) == shown  # a section module nobody lists is never shown


def test_each_section_renders_only_blocks(committed_sweep):
    d = load(committed_sweep)
    for module in sections.REPORT + details.DETAILS:
        section = module.render(d)
        assert isinstance(section, Section), module.__name__
        assert all(isinstance(b, Text | Table | Figures) for b in section.blocks), module.__name__
    plt.close("all")
