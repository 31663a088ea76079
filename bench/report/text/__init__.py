"""The report's prose: methodology paragraphs kept as Markdown templates beside this module, filled from the data."""

from __future__ import annotations

from importlib import resources


def prose(name: str, **values) -> str:
    """The template `name`.md with its `{fields}` filled (str.format: a field may carry a format spec)."""
    return resources.files(__package__).joinpath(f"{name}.md").read_text().format(**values)
