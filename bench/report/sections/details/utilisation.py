"""Model FLOP/s as a share of this machine's best measured matrix multiply."""

from __future__ import annotations

from ...figures import utilisation
from ..base import Figures, Section, heading

INTRO = ("Model FLOP/s as a share of this machine's best measured matrix multiply (GEMM); above 100% reads "
         "\"faster than this machine's best GEMM\" (the rule in the report's methodology).")


def render(d) -> Section:
    return Section([heading("Utilisation", INTRO), Figures(utilisation(d.configs), "utilisation")])
