"""How the report draws a framework: one colour each, from the adapters' declarations and the historical systems."""

from __future__ import annotations

from ..adapters import ADAPTERS, framework_of
from .systems import HISTORICAL

FALLBACK_COLOUR = "#ff7f0e"  # a name no adapter and no historical system answers to
# One colour per framework in every figure: a reader learns the mapping once. Engines and precisions of one
# framework differ by line style, marker and hatch instead (bench/report/figures.py: series_style).
FRAMEWORK_COLOURS = {**{n: ADAPTERS.get(n).colour for n in ADAPTERS}, **{s.key: s.colour for s in HISTORICAL},
                     "other": FALLBACK_COLOUR}


def canonical_framework(name: str) -> str:
    """The registered name of a framework from any name a source uses ('PyTorch', 'pytorch' -> 'torch')."""
    return framework_of(str(name).strip().lower())


def framework_colour(framework: str) -> str:
    """The framework's colour in every figure; unknown names share the fallback colour."""
    return FRAMEWORK_COLOURS.get(canonical_framework(framework), FALLBACK_COLOUR)
