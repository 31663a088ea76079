"""A model's synthetic input batch, framework-free: standard-normal images (NCHW or NHWC) for an image model, uniform
token ids (int64) for a token model, from a NumPy generator. Every adapter draws its batch here, so a seed gives every
framework the same batch."""

from __future__ import annotations

import numpy as np

from .catalogue import get_model
from .transformers import bert_shape

LAYOUTS = ("NCHW", "NHWC")


def batch_shape(model: str, batch_size: int, input_size: int, layout: str = "NCHW") -> tuple[int, ...]:
    """The batch's shape: (n, 3, s, s) or (n, s, s, 3) for images of side `input_size`; (n, input_size) for tokens."""
    if get_model(model).tokens:
        return batch_size, input_size
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}; valid choices: {', '.join(LAYOUTS)}")
    return (batch_size, 3, input_size, input_size) if layout == "NCHW" else (batch_size, input_size, input_size, 3)


def synthetic_batch(model: str, batch_size: int, input_size: int, rng: np.random.Generator,
                    layout: str = "NCHW") -> np.ndarray:
    """One batch for `model` drawn from `rng`: float32 standard-normal images, or int64 token ids uniform over the
    model's vocabulary (bench/models/transformers.py)."""
    shape = batch_shape(model, batch_size, input_size, layout)
    if get_model(model).tokens:
        return rng.integers(0, bert_shape(model).vocab, shape, dtype=np.int64)
    return rng.standard_normal(shape, dtype=np.float32)


def layout(model: str, images: str, token_dtype: str | None = None) -> str:
    """The record's `layout` setting: `images` (how the framework lays out an image batch) for an image model; for a
    token model its ids, with the dtype the framework feeds them in where it names one."""
    if not get_model(model).tokens:
        return images
    return "token ids (batch, sequence)" + (f", {token_dtype}" if token_dtype else "")


def describe(model: str, batch_size: int, input_size: int) -> str:
    """'8 standard-normal 224x224 images' or '8 sequences of 128 uniform token ids'."""
    if get_model(model).tokens:
        return f"{batch_size} sequences of {input_size} uniform token ids"
    return f"{batch_size} standard-normal {input_size}x{input_size} images"
