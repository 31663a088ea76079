"""Slow spells: a process that ran while the sweep's speed reference (bench/runs/speed_reference.py) read slow.

The reference is read at the start until steady, between comparison groups and at the end; each reading has a
position (the order index of the process that ran next). A process is in a slow spell when the readings just before
and just after it (the last at or before its position, the first after it) both took more than SPELL_LIMIT longer
than the sweep's median reading: the machine itself was slow then, whatever the other processes' CPU share and steal
said. One rule, stated once in the methodology (flags.py: slow_spell)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

SPELL_LIMIT = 0.07
MIN_READINGS = 3  # fewer readings give no median to be slow against


def spell_reason(readings: Sequence[tuple[int, float]], order_index: int | None) -> str | None:
    """Why the process at `order_index` ran in a slow spell, from the sweep's readings [(position, step seconds)];
    None where it did not, or where there is nothing to judge by."""
    if order_index is None or len(readings) < MIN_READINGS:
        return None
    usual = statistics.median(s for _, s in readings)
    before = [s for p, s in readings if p <= order_index]
    after = [s for p, s in readings if p > order_index]
    if not before or not after or usual <= 0:
        return None
    slow_before, slow_after = before[-1] / usual - 1, after[0] / usual - 1
    if slow_before > SPELL_LIMIT and slow_after > SPELL_LIMIT:
        return (f"the sweep's speed reference ran {slow_before:.0%} slow just before this process and "
                f"{slow_after:.0%} just after it (limit {SPELL_LIMIT:.0%} over its median): a slow spell of the "
                "machine")
    return None
