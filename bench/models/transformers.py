"""The transformers of the catalogue, framework-free: each one's shape, and the one seeded set of weights every
framework loads (random, nothing downloaded), so that every framework runs the same network with the same weights and
its outputs can be compared with PyTorch's.

ViT-B/16 is torchvision's VisionTransformer (Dosovitskiy et al. 2021): 16x16 patches by a strided convolution, a
class token and learned position embeddings, pre-norm encoder blocks (LayerNorm eps 1e-6, multi-head self-attention,
an MLP with exact GELU), a final LayerNorm and a linear head on the class token. The weights are named as torchvision's
state dict names them; a Keras model maps them onto its layers (bench/adapters/keras_models.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# The seed of every transformer's weights: the same arrays in every framework and every process.
WEIGHTS_SEED = 20261128
LAYER_NORM_EPS = 1e-6


@dataclass(frozen=True)
class VitShape:
    """A vision transformer's dimensions."""

    image_size: int
    patch_size: int
    layers: int
    heads: int
    hidden: int
    mlp: int

    @property
    def tokens(self) -> int:
        """Patches plus the class token."""
        return (self.image_size // self.patch_size) ** 2 + 1


VITS = {
    "vit_b16": VitShape(image_size=224, patch_size=16, layers=12, heads=12, hidden=768, mlp=3072),
    "tiny_vit": VitShape(image_size=32, patch_size=8, layers=2, heads=4, hidden=64, mlp=128),  # for tests
}


def vit_shape(name: str) -> VitShape:
    return VITS[name]


@functools.lru_cache(maxsize=2)
def vit_weights(name: str, num_classes: int) -> dict[str, np.ndarray]:
    """Model `name`'s weights in torchvision's state-dict names, float32, from WEIGHTS_SEED: linear and convolution
    weights from a truncated normal of sd 0.02 (as ViT's own initialisation), biases zero, LayerNorm scale one. The
    head is drawn as the other linears (torchvision zeroes it; a zero head would make every output equal, and the
    output check meaningless)."""
    s = vit_shape(name)
    rng = np.random.default_rng(WEIGHTS_SEED)

    def normal(*shape: int) -> np.ndarray:
        return np.clip(rng.standard_normal(shape, dtype=np.float32), -2.0, 2.0) * np.float32(0.02)

    zeros, ones = (lambda n: np.zeros(n, np.float32)), (lambda n: np.ones(n, np.float32))
    d = s.hidden
    w = {"class_token": normal(1, 1, d), "conv_proj.weight": normal(d, 3, s.patch_size, s.patch_size),
         "conv_proj.bias": zeros(d), "encoder.pos_embedding": normal(1, s.tokens, d)}
    for i in range(s.layers):
        p = f"encoder.layers.encoder_layer_{i}."
        w.update({p + "ln_1.weight": ones(d), p + "ln_1.bias": zeros(d),
                  p + "self_attention.in_proj_weight": normal(3 * d, d),
                  p + "self_attention.in_proj_bias": zeros(3 * d),
                  p + "self_attention.out_proj.weight": normal(d, d), p + "self_attention.out_proj.bias": zeros(d),
                  p + "ln_2.weight": ones(d), p + "ln_2.bias": zeros(d),
                  p + "mlp.0.weight": normal(s.mlp, d), p + "mlp.0.bias": zeros(s.mlp),
                  p + "mlp.3.weight": normal(d, s.mlp), p + "mlp.3.bias": zeros(d)})
    w.update({"encoder.ln.weight": ones(d), "encoder.ln.bias": zeros(d), "heads.head.weight": normal(num_classes, d),
              "heads.head.bias": zeros(num_classes)})
    return w


def parameter_count(name: str, num_classes: int) -> int:
    return sum(a.size for a in vit_weights(name, num_classes).values())
