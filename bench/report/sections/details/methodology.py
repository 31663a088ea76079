"""The whole methodology (the report carries its brief: bench/report/sections/methodology.py)."""

from __future__ import annotations

from ..methodology import render_full as render

__all__ = ["render"]
