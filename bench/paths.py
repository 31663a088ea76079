"""Where things live: the project root and the results folder (BENCH_RESULTS overrides), checked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MIN_FREE_BYTES = 50 * 2**20  # a sweep writes records and executed notebooks: refuse a nearly full disk


def default_results_dir() -> Path:
    return Path(os.environ.get("BENCH_RESULTS") or PROJECT_ROOT / "results")


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def checked_dir(value: str | Path | None, what: str = "results folder", default: Path | None = None) -> Path:
    """A folder we may write into, refused before any work with a one-line reason when it is unusable."""
    if value is None:
        path = default or default_results_dir()
    elif not str(value).strip():
        raise ConfigError(f"invalid {what} '': give a folder path")
    else:
        path = Path(value)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {str(path)!r} is a file, not a folder")
    base = _existing_ancestor(path)
    if not base.is_dir():
        raise ConfigError(f"{what} {str(path)!r} cannot be created: {str(base)!r} is not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {str(path)!r} is not writable")
    free = shutil.disk_usage(base).free
    if free < MIN_FREE_BYTES:
        raise ConfigError(f"{what} {str(path)!r} has only {free / 2**20:.0f} MiB free; "
                          f"at least {MIN_FREE_BYTES / 2**20:.0f} MiB are needed")
    return path
