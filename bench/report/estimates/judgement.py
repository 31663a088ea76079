"""What a config's flags make of its number: which flags keep its throughput out of the findings, and why."""

from __future__ import annotations

from collections.abc import Iterable

from ...measurement.flags import FLAG_SCOPE
from ...results.record import Flag


def on_throughput(flag: Flag) -> bool:
    """Whether a flag makes the throughput unusable (an unknown flag does: the cautious reading)."""
    return FLAG_SCOPE.get(flag.name, "throughput") == "throughput"


def join_reasons(reasons: Iterable[str]) -> str:
    """Distinct non-empty reasons, in order, as one line."""
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def sound(flags: Iterable[Flag]) -> bool:
    return not any(on_throughput(f) for f in flags)


def unsound_flags(flags: Iterable[Flag]) -> list[str]:
    """The names of the flags that keep a config's throughput out of the findings."""
    return list(dict.fromkeys(f.name for f in flags if on_throughput(f)))


def unsound_reason(flags: Iterable[Flag]) -> str:
    return join_reasons(f"{f.name}: {f.reason}" for f in flags if on_throughput(f))
