"""The source studies' references."""

from __future__ import annotations

from ..studies import references
from .base import Section, Text, heading


def render(d) -> Section:
    return Section([heading("References", level=3), Text(references())])
