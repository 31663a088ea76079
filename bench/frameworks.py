"""Every framework the field compares and where it stands here: measured, not installed, or impossible.

The 2019 study and the distributed-training studies this project remakes compared TensorFlow, PyTorch,
Caffe2, MXNet, CNTK, Caffe-MPI and SINGA; users today also choose JAX, ONNX Runtime and OpenVINO. None
of them may silently disappear from the report: each is listed with its status, the reason, and the
closest runnable successor.
"""

from __future__ import annotations

from dataclasses import dataclass

from .adapters import ADAPTERS


@dataclass(frozen=True)
class SourceSystem:
    name: str
    adapter: str | None  # the adapter that measures it here, if any
    reason: str  # why it is not measured, when it is not
    successor: str  # the closest runnable successor


SYSTEMS = (
    SourceSystem("TensorFlow", "tensorflow", "", "-"),
    SourceSystem("PyTorch", "torch", "", "-"),
    SourceSystem("Caffe2", None, "merged into PyTorch in 2018 and removed from its builds; no installable package "
                 "for Python 3.11", "PyTorch, and ONNX Runtime for its deployment role"),
    SourceSystem("MXNet", None, "no adapter yet; MXNet 1.9.1 (retired) needs numpy 1.23.5 and so a second "
                 "environment", "-"),
    SourceSystem("CNTK", None, "wheels stop at Python 3.6; the project is retired", "ONNX Runtime"),
    SourceSystem("Caffe-MPI", None, "a C++/CUDA/MPI source build, no Python package", "PyTorch DDP / Horovod"),
    SourceSystem("Apache SINGA", None, "no installable distribution on the package registry", "PyTorch DDP"),
    SourceSystem("JAX", None, "no adapter yet", "-"),
    SourceSystem("ONNX Runtime", None, "no adapter yet", "-"),
    SourceSystem("OpenVINO", None, "no adapter yet", "-"),
)


def status_rows() -> list[dict]:
    """One row per source system: measured here (with version) or not, and why."""
    rows = []
    for s in SYSTEMS:
        adapter = ADAPTERS.get(s.adapter) if s.adapter and s.adapter in ADAPTERS else None
        version = adapter.version() if adapter else None
        if adapter and version:
            status, reason = f"measured ({s.adapter} {version})", ""
        elif adapter:
            status, reason = "not installed", f"the {s.adapter} package is not installed in this environment"
        else:
            status, reason = "not measured", s.reason
        rows.append({"framework": s.name, "status": status, "reason": reason, "closest runnable successor":
                     s.successor})
    return rows
