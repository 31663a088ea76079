"""Showing sections in a notebook: each block displayed in order, figures saved as PNG where asked."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from IPython.display import Markdown, display

from ..context import show, table
from .base import Figures, Section, Table, Text


def show_section(section: Section, figures_dir=None) -> None:
    for block in section.blocks:
        if isinstance(block, Text):
            display(Markdown(block.markdown))
        elif isinstance(block, Table):
            display(table(block.frame, block.empty))
        elif isinstance(block, Figures):
            show(block.figures, block.name, figures_dir)


def show_all(sections: Iterable[ModuleType], d, figures_dir=None) -> None:
    """Render and show each section (a module with `render(d) -> Section`) in order."""
    for section in sections:
        show_section(section.render(d), figures_dir)
