"""`bench doctor`'s answers as kept for the report: results/<host>/doctor.json, read back for any host, and the plain
table the command prints (the report's environment section shows the same text)."""

from __future__ import annotations

import json
from pathlib import Path

DOCTOR_FILE = "doctor.json"  # results/<host>/doctor.json: the last answers, for the report's environment section


def table(answers: dict[str, dict], host: dict) -> str:
    """The plain text `bench doctor` prints."""
    head = ("framework", "version", "built for", "cuDNN", "NCCL", "GPUs it sees", "GPU runs")
    rows = [head] + [(name, a.get("version") or "-", a.get("built_for") or "-", a.get("cudnn") or "-",
                      a.get("nccl") or "-", ", ".join(a.get("gpus") or []) or "none",
                      "ready" if not a.get("gpu") else a["gpu"]) for name, a in answers.items()]
    widths = [max(len(str(r[i])) for r in rows[:]) if i < 6 else 0 for i in range(7)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    driver = f"{host['driver']} (CUDA {host['driver_cuda'] or '?'})" if host["driver"] else "none (no nvidia-smi GPU)"
    lines += ["", f"GPUs (nvidia-smi): {'; '.join(host['gpus']) or 'none'}", f"driver: {driver}",
              f"NVML: {host['nvml']}"] + [f"device peak on {d}: {state}" for d, state in host["peak"].items()]
    return "\n".join(lines)


def read_doctors(results_dir: Path | str) -> dict[str, str]:
    """host -> its kept doctor answers as the table `bench doctor` printed (hosts whose file is missing or unreadable
    are left out: a doctor that never ran says nothing)."""
    out = {}
    for path in sorted(Path(results_dir).glob(f"*/{DOCTOR_FILE}")):
        try:
            found = json.loads(path.read_text())
            out[path.parent.name] = table(found["frameworks"], found["host"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return out
