"""A stand-in for a smoke-test rank (bench/adapters/torch/pipeline_smoke.py) whose schedule step never returns."""

import sys
import time
from pathlib import Path

from bench.adapters.torch import pipeline_smoke

if __name__ == "__main__":
    _, _, schedule, rank, port, out = sys.argv
    (Path(out) / f"phase{rank}").write_text(pipeline_smoke.STEP)
    time.sleep(3600)
