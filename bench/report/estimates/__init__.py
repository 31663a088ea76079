"""The estimate layer: per-config numbers and flags computed once, the statistics behind every interval, ratio and
verdict, and the judgement of what is sound. The report's sections read these, never records or raw tables."""

from ...measurement.flags import MIN_PROCESSES
from ...measurement.loop import P99_MIN_TIMED
from ...stats.config_intervals import Interval, pair_ratio
from .best_engines import REFERENCE, framework_grid
from .comparisons import GROUP, NOT_COMPARED, best_batch_table, ratio_table, summary_table, tiers
from .configs import Certificate, ConfigEstimate, estimate_configs
from .engines import engines_table
from .int8 import int8_pairs, int8_table
from .judgement import join_reasons, sound, unsound_flags, unsound_reason
from .pair_verdicts import UNRELIABLE, compare_pair, pair_verdict
from .processes import process_table

__all__ = ["GROUP", "MIN_PROCESSES", "NOT_COMPARED", "P99_MIN_TIMED", "REFERENCE", "UNRELIABLE", "Certificate",
           "ConfigEstimate", "Interval", "best_batch_table", "compare_pair", "engines_table", "estimate_configs",
           "framework_grid", "int8_pairs", "int8_table", "join_reasons", "pair_ratio", "pair_verdict",
           "process_table", "ratio_table", "sound", "summary_table", "tiers", "unsound_flags", "unsound_reason"]
