"""Model catalogue and per-framework architecture definitions."""

from .catalogue import MODELS, ModelSpec, get_model, list_models

__all__ = ["MODELS", "ModelSpec", "get_model", "list_models"]
