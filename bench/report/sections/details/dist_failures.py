"""Distributed runs that failed (left out when none did)."""

from __future__ import annotations

from ... import scaling_text
from ..base import Section, optional


def render(d) -> Section:
    return optional("Distributed runs that failed", scaling_text.failures(d.scaling.records))
