"""The largest-batch searches stored under every host folder (bench/runs/maxbatch.py writes them): read beside the
store, so the report reads them without the code that runs a search."""

from __future__ import annotations

import json
from pathlib import Path

MEMORY_DIR = "memory"


def load_searches(results_dir: Path | str) -> list[dict]:
    """Every stored search under every host folder."""
    return [json.loads(p.read_text()) for p in sorted(Path(results_dir).glob(f"*/{MEMORY_DIR}/*.json"))]
