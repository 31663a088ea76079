"""Distributed: methodology, generated from the distributed records."""

from __future__ import annotations

from ... import scaling_text
from ..base import Section, Text, heading


def render(d) -> Section:
    return Section([heading("Distributed: methodology"), Text(scaling_text.methodology(d.scaling))])
