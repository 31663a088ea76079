"""Every framework the field compares and where it stands here: measured, not installed, or impossible.

The runnable frameworks are the registered adapters (bench/adapters/); the systems that cannot run here are
data in this module.

The 2019 study and the distributed-training studies this project remakes compared TensorFlow, PyTorch,
Caffe2, MXNet, CNTK, Caffe-MPI and SINGA; users today also choose JAX, ONNX Runtime and OpenVINO. None
of them may silently disappear from the report: each is listed with its status, the reason, and the
closest runnable successor.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..adapters import ADAPTERS
from ..errors import FrameworkUnavailableError


@dataclass(frozen=True)
class HistoricalSystem:
    """A system the source studies measured that cannot run here: data, not an adapter."""

    name: str
    key: str  # how the source studies' tables name it
    reason: str  # why it is not measured
    successor: str  # the closest runnable successor
    colour: str  # its colour where its published numbers are drawn


HISTORICAL = (
    HistoricalSystem("Caffe2", "caffe2", "merged into PyTorch in 2018 and removed from its builds; no installable "
                     "package for Python 3.11", "ONNX Runtime (its deployment role: PyTorch's ONNX path), PyTorch",
                     "#e377c2"),
    HistoricalSystem("CNTK", "cntk", "retired; wheels stop at Python 3.6",
                     "ONNX Runtime (CNTK's successor at Microsoft)", "#c7c7c7"),
    HistoricalSystem("Caffe-MPI", "caffe-mpi", "a C++/CUDA/MPI source build, no Python package",
                     "PyTorch DDP (all-reduce)", "#dbdb8d"),
    HistoricalSystem("Apache SINGA", "singa", "no installable distribution for Python 3.11 on the package registry",
                     "PyTorch DDP; its parameter-server comparison: bench's ps_sync / ps_async strategies", "#9edae5"),
)


def _unavailable(adapter) -> str | None:
    try:
        adapter.check_available()
    except FrameworkUnavailableError as exc:
        return str(exc)
    return None


def _adapter_row(adapter, results: dict[str, dict[str, int]] | None) -> dict:
    missing = _unavailable(adapter)
    version = adapter.version() if not missing else None
    if version:
        status, reason = f"runnable ({adapter.name} {version})", ""
        if results is not None:
            runs = results.get(adapter.name) or {}
            n = sum(runs.values())
            measured = "; ".join(f"{v}: {k} runs" for v, k in sorted(runs.items()))
            status = f"measured ({adapter.name} {measured})" if n else status
            reason = "" if n else "runnable, but no successful run in these results"
    else:
        status, reason = "not installed", missing or f"the {adapter.name} package is not installed"
    int8 = "available" if "int8" in adapter.precisions else f"no: {adapter.no_int8_because or 'no int8 path here'}"
    return {"framework": adapter.display_name or adapter.name, "status": status, "reason": reason,
            "closest runnable successor": "-", "int8 path (post-training)": int8}


def status_rows(results: dict[str, dict[str, int]] | None = None) -> list[dict]:
    """One row per system: every registered framework (runnable here, with version, or not, and why), then the
    historical systems that cannot run. `results`: per adapter, the successful runs in the results at hand per
    "version on host" (the version each record's manifest names), so a runnable framework the results lack says
    so."""
    adapters = sorted((ADAPTERS.get(n) for n in ADAPTERS if ADAPTERS.get(n).measures_a_framework),
                      key=lambda a: (a.display_name or a.name).lower())
    return [_adapter_row(a, results) for a in adapters] + [
        {"framework": s.name, "status": "not measured", "reason": s.reason, "closest runnable successor": s.successor,
         "int8 path (post-training)": "-"} for s in HISTORICAL]
