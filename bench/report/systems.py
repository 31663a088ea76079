"""Every framework the field compares and where it stands here: measured, not installed, or impossible.

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
class SourceSystem:
    name: str
    adapter: str | None  # the adapter that measures it here, if any
    reason: str  # why it is not measured, when it is not
    successor: str  # the closest runnable successor


SYSTEMS = (
    SourceSystem("TensorFlow", "tensorflow", "", "-"),
    SourceSystem("PyTorch", "torch", "", "-"),
    SourceSystem("JAX", "jax", "", "-"),
    SourceSystem("ONNX Runtime", "onnxruntime", "", "-"),
    SourceSystem("OpenVINO", "openvino", "", "-"),
    SourceSystem("Caffe2", None, "merged into PyTorch in 2018 and removed from its builds; no installable package "
                 "for Python 3.11", "ONNX Runtime (its deployment role: PyTorch's ONNX path), PyTorch"),
    SourceSystem("MXNet", "mxnet", "", "-"),
    SourceSystem("CNTK", None, "retired; wheels stop at Python 3.6", "ONNX Runtime (CNTK's successor at Microsoft)"),
    SourceSystem("Caffe-MPI", None, "a C++/CUDA/MPI source build, no Python package", "PyTorch DDP (all-reduce)"),
    SourceSystem("Apache SINGA", None, "no installable distribution for Python 3.11 on the package registry",
                 "PyTorch DDP; its parameter-server comparison: bench's ps_sync / ps_async strategies"),
)


def _unavailable(adapter) -> str | None:
    try:
        adapter.check_available()
    except FrameworkUnavailableError as exc:
        return str(exc)
    return None


def status_rows(results: dict[str, dict[str, int]] | None = None) -> list[dict]:
    """One row per source system: runnable here (with version) or not, and why. `results`: per adapter, the
    successful runs in the results at hand per "version on host" (the version each record's manifest
    names), so a runnable framework the results lack says so."""
    rows = []
    for s in SYSTEMS:
        adapter = ADAPTERS.get(s.adapter) if s.adapter and s.adapter in ADAPTERS else None
        missing = _unavailable(adapter) if adapter else None
        version = adapter.version() if adapter and not missing else None
        if adapter and version:
            status, reason = f"runnable ({s.adapter} {version})", ""
            if results is not None:
                runs = results.get(s.adapter) or {}
                n = sum(runs.values())
                measured = "; ".join(f"{v}: {k} runs" for v, k in sorted(runs.items()))
                status = f"measured ({s.adapter} {measured})" if n else status
                reason = "" if n else "runnable, but no successful run in these results"
        elif adapter:
            status, reason = "not installed", missing or f"the {s.adapter} package is not installed"
        else:
            status, reason = "not measured", s.reason
        rows.append({"framework": s.name, "status": status, "reason": reason, "closest runnable successor":
                     s.successor})
    return rows
