"""Where things live: the project root and the default results folder (BENCH_RESULTS overrides)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def default_results_dir() -> Path:
    return Path(os.environ.get("BENCH_RESULTS") or PROJECT_ROOT / "results")
