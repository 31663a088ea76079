"""The sweep's speed reference: a short fixed step of a real network, measured between comparison groups.

A slow spell of the machine (seen here: every process of a sweep's last minutes 12.5% slow, while other processes'
CPU share and steal stayed at zero and a GEMM saw nothing) is visible only to work like a benchmark's own. This
process builds one small network once in the reference framework (ResNet-18 inference on 64 px images, batch 8) and,
each time the sweep writes a line to its stdin, times REFERENCE_STEPS steps and prints their median seconds as JSON;
between readings it sleeps on its stdin, so it takes no CPU from the benchmark beside it. Run by the sweep as
`python -m bench.runs.speed_reference` (bench/sweep/speed_reference.py).
"""

from __future__ import annotations

import json
import statistics
import sys

from ..adapters import process_environment, reference_adapter
from ..config import make_config

REFERENCE = dict(model="resnet18", mode="inference", batch_size=8, image_size=64, device="cpu")
REFERENCE_STEPS = 8
WARM_STEPS = 3


def serve(lines=sys.stdin, out=sys.stdout) -> None:
    adapter = reference_adapter()
    process_environment.apply(adapter.process_environment)  # as every run of the framework
    config = make_config(framework=adapter.name, **REFERENCE)
    workload = adapter.prepare(config)
    for _ in range(WARM_STEPS):
        workload.timed_iteration()
    print(json.dumps({"ready": True, "label": config.label}), file=out, flush=True)
    for _ in lines:
        steps = [workload.timed_iteration() for _ in range(REFERENCE_STEPS)]
        print(json.dumps({"step_s": statistics.median(steps)}), file=out, flush=True)


if __name__ == "__main__":
    serve()
