"""Distributed runs that failed (left out when none did)."""

from __future__ import annotations

from ... import scaling
from ..base import Section, optional


def render(d) -> Section:
    return optional("Distributed runs that failed", scaling.failures(d.scaling.records))
