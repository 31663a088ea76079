"""`independent`: N workers that never communicate, the baseline every scaling comparison divides by (its
throughput is what N workers sharing the machine reach without any communication)."""

from .base import BASELINE, Strategy, register

INDEPENDENT = register(Strategy("independent", "one worker (no parallelism)", "independent (no communication)",
                                BASELINE, line=":"))
