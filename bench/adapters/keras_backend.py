"""Which backend Keras 3 runs on in this process, chosen by the framework that runs its models."""

from __future__ import annotations

import os
import sys


def choose(backend: str) -> None:
    """Set KERAS_BACKEND to `backend` for this process before Keras is imported, whatever it inherited: a JAX run
    started by a process that had imported TensorFlow's adapter inherits KERAS_BACKEND=tensorflow, and its Keras
    would then run on TensorFlow (CI, 2026-11-27: the full tier's JAX data-parallel run, after an in-process
    TensorFlow test). Once Keras is imported its backend is fixed: the caller checks it and refuses another."""
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = backend
