"""A catalogue model's synthetic input batch, framework-free, as its family draws it (bench/models/families.py):
standard-normal images (NCHW or NHWC) for an image model, uniform token ids (int64) for a token model, from a NumPy
generator. Every adapter draws its batch here, so a seed gives every framework the same batch."""

from __future__ import annotations

import numpy as np

from .catalogue import family_of
from .families import LAYOUTS

__all__ = ["LAYOUTS", "batch_shape", "describe", "layout", "synthetic_batch"]


def batch_shape(model: str, batch_size: int, input_size: int, layout: str = "NCHW") -> tuple[int, ...]:
    """The batch's shape: (n, 3, s, s) or (n, s, s, 3) for images of side `input_size`; (n, input_size) for tokens."""
    return family_of(model).batch_shape(model, batch_size, input_size, layout)


def synthetic_batch(model: str, batch_size: int, input_size: int, rng: np.random.Generator,
                    layout: str = "NCHW") -> np.ndarray:
    """One batch for `model` drawn from `rng`."""
    return family_of(model).synthetic_batch(model, batch_size, input_size, rng, layout)


def layout(model: str, images: str, token_dtype: str | None = None) -> str:
    """The record's `layout` setting for `model`: `images` for an image model, its token ids for a token model."""
    return family_of(model).layout(images, token_dtype)


def describe(model: str, batch_size: int, input_size: int) -> str:
    """'8 standard-normal 224x224 images' or '8 sequences of 128 uniform token ids'."""
    return family_of(model).describe_batch(batch_size, input_size)
