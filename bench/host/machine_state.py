"""What the machine is while it measures: the CPU frequency governor, transparent huge pages, load and steal.

`bench noise` prints these beside the spreads it measures, so a reader can tell a noisy framework from a noisy
machine (a VM whose hypervisor steals time, a laptop's power-saving governor)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .interference import _cpu_ticks

_GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
_THP = Path("/sys/kernel/mm/transparent_hugepage")


def _chosen(path: Path) -> str | None:
    """A sysfs setting's value: the bracketed choice of 'always [madvise] never', or the whole text."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if "[" in text and "]" in text:
        return text[text.index("[") + 1:text.index("]")]
    return text or None


def machine_state(window_s: float = 1.0, sleep=time.sleep) -> dict:
    """The governor, THP's `enabled` and `defrag` settings, the 1-minute load, and over `window_s` (this process
    idle) the busy and stolen shares of the machine's CPU time."""
    t0 = _cpu_ticks()
    sleep(window_s)
    t1 = _cpu_ticks()
    busy = steal = None
    if t0 and t1 and t1["total"] > t0["total"]:
        total = t1["total"] - t0["total"]
        busy, steal = (t1["busy"] - t0["busy"]) / total, (t1["steal"] - t0["steal"]) / total
    return {"cpus": os.cpu_count(), "governor": _chosen(_GOVERNOR) or "none (no cpufreq: a VM, or fixed)",
            "thp_enabled": _chosen(_THP / "enabled"), "thp_defrag": _chosen(_THP / "defrag"),
            "loadavg_1m": os.getloadavg()[0], "busy_share": busy, "steal_share": steal}
