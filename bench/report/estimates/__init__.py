"""The estimate layer: per-config numbers and flags computed once, the statistics behind every interval, ratio and
verdict, and the judgement of what is sound. The report's sections read these, never records or raw tables."""

from ...measurement.flags import MIN_PROCESSES
from .comparisons import GROUP, ratio_table, summary_table
from .configs import Certificate, ConfigEstimate, estimate_configs
from .intervals import UNRELIABLE, Interval, compare_pair, no_winner, pair_ratio
from .judgement import join_reasons, sound, unsound_flags, unsound_reason
from .processes import process_table

__all__ = ["GROUP", "MIN_PROCESSES", "UNRELIABLE", "Certificate", "ConfigEstimate", "Interval",
           "compare_pair", "estimate_configs", "join_reasons", "no_winner", "pair_ratio", "process_table",
           "ratio_table", "sound", "summary_table", "unsound_flags", "unsound_reason"]
