"""Published single-device reference figures beside the measured ones (left out where none applies)."""

from __future__ import annotations

from ..published import published_overlay
from .base import Section, optional

INTRO = ("Published single-device numbers for context (**published, not measured here**, hatched), one comparable "
         "row per device; every published row with its source is in the details' appendix. Left out where none of "
         "this report's models has a published figure.")


def render(d) -> Section:
    return optional("Published reference figures", published_overlay(d.configs, d.published), INTRO, "published")
