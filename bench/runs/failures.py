"""What a failed run's record says: one sentence a user can act on, whatever the framework raised."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapters import says_out_of_memory

if TYPE_CHECKING:
    from ..config import RunConfig


def describe_failure(exc: BaseException, config: RunConfig) -> str:
    """One sentence a user can act on, from whatever a framework raised."""
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, MemoryError) or says_out_of_memory(f"{name} {first}"):
        return f"out of memory at batch size {config.batch_size} on {config.device} ({name})"
    return f"{name}: {first}" if first else name
