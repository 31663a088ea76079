"""The details' sections, in reading order (each a module with `render(d) -> Section`); notebooks/details.ipynb
shows DETAILS. Adding a section is one module here and one line in the list."""

from .. import fairness, findings, header, model_vs_published, references, study_coverage
from . import (
    appendix,
    dist_accuracy,
    dist_extrapolation,
    dist_failures,
    dist_methodology,
    dist_network,
    dist_phases,
    energy,
    flagged,
    latency,
    measured,
    memory,
    methodology,
    overhead,
    pairs,
    phases,
    profiles_not_run,
    startup,
    utilisation,
    variance,
)

DETAILS = [header, findings, measured, pairs, flagged, variance, latency, energy, memory, utilisation, phases,
           overhead, startup, fairness, dist_phases, dist_network, dist_extrapolation, dist_accuracy, dist_failures,
           model_vs_published, dist_methodology, methodology, study_coverage, references, profiles_not_run,
           appendix]

__all__ = ["DETAILS"]
