"""Model catalogue, model families and per-framework architecture definitions."""

from .catalogue import MODELS, ModelSpec, family_of, get_model, list_models
from .families import FAMILIES, ModelFamily

__all__ = ["FAMILIES", "MODELS", "ModelFamily", "ModelSpec", "family_of", "get_model", "list_models"]
