"""The transformers of the catalogue, framework-free: each one's shape, and the one seeded set of weights every
framework loads (random, nothing downloaded), so that every framework runs the same network with the same weights and
its outputs can be compared with PyTorch's.

ViT-B/16 is torchvision's VisionTransformer (Dosovitskiy et al. 2021): 16x16 patches by a strided convolution, a
class token and learned position embeddings, pre-norm encoder blocks (LayerNorm eps 1e-6, multi-head self-attention,
an MLP with exact GELU), a final LayerNorm and a linear head on the class token. The weights are named as torchvision's
state dict names them; a Keras model maps them onto its layers (bench/adapters/keras_models.py).

BERT-base is Devlin et al.'s encoder (2019) with a sequence-classification head, as Hugging Face's
BertForSequenceClassification: word, position and token-type embeddings summed and layer-normalised, post-norm
encoder blocks (LayerNorm eps 1e-12, exact GELU), a pooler (dense + tanh on the first token) and a linear classifier.
In training one dropout differs from Hugging Face's: nn.TransformerEncoderLayer also drops after the GELU (the Keras
definition copies PyTorch's, so the frameworks train the same network).
Its input is token ids only: one segment (token type 0), positions 0..n-1, no padding (every sequence is the run's
sequence length, so no attention mask). The weights are named as PyTorch's nn.TransformerEncoderLayer names them (the
PyTorch definition, bench/adapters/torch/models.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# The seed of every transformer's weights: the same arrays in every framework and every process.
WEIGHTS_SEED = 20261128
LAYER_NORM_EPS = 1e-6  # ViT's
BERT_LAYER_NORM_EPS = 1e-12
BERT_DROPOUT = 0.1  # BERT's hidden and attention dropout (active in training only)


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


@dataclass(frozen=True)
class BertShape:
    """A BERT encoder's dimensions."""

    layers: int
    heads: int
    hidden: int
    mlp: int
    vocab: int
    max_positions: int  # the longest sequence its position embeddings cover
    type_vocab: int = 2


BERTS = {
    "bert_base": BertShape(layers=12, heads=12, hidden=768, mlp=3072, vocab=30522, max_positions=512),
    "tiny_bert": BertShape(layers=2, heads=4, hidden=64, mlp=128, vocab=1000, max_positions=64),  # for tests
}


def bert_shape(name: str) -> BertShape:
    return BERTS[name]


def attention_shape(name: str, input_size: int) -> tuple[int, int, int]:
    """(heads, tokens, head width) of a transformer's self-attention for an input of `input_size` (an image's side
    for a ViT, the sequence length for BERT)."""
    if name in VITS:
        s = VITS[name]
        return s.heads, s.tokens, s.hidden // s.heads
    b = BERTS[name]
    return b.heads, input_size, b.hidden // b.heads


def attention_dropout(name: str, training: bool) -> float:
    """The attention dropout model `name` runs with: BERT's in training, none otherwise (ViT has none; in inference
    it would do nothing, but Keras' MultiHeadAttention with any dropout keeps off keras.ops.dot_product_attention and
    so off fused kernels, and torch picks its SDPA backend knowing it)."""
    return BERT_DROPOUT if training and name in BERTS else 0.0


def _truncated_normal(rng: np.random.Generator):
    def normal(*shape: int) -> np.ndarray:
        return np.clip(rng.standard_normal(shape, dtype=np.float32), -2.0, 2.0) * np.float32(0.02)

    return normal


@functools.lru_cache(maxsize=2)
def vit_weights(name: str, num_classes: int) -> dict[str, np.ndarray]:
    """Model `name`'s weights in torchvision's state-dict names, float32, from WEIGHTS_SEED: linear and convolution
    weights from a truncated normal of sd 0.02 (as ViT's own initialisation), biases zero, LayerNorm scale one. The
    head is drawn as the other linears (torchvision zeroes it; a zero head would make every output equal, and the
    output check meaningless)."""
    s = vit_shape(name)
    normal = _truncated_normal(np.random.default_rng(WEIGHTS_SEED))
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


@functools.lru_cache(maxsize=2)
def bert_weights(name: str, num_classes: int) -> dict[str, np.ndarray]:
    """Model `name`'s weights in the PyTorch definition's state-dict names, float32, from WEIGHTS_SEED: embeddings,
    linear weights and the classifier from a truncated normal of sd 0.02 (BERT's own initialiser range), biases zero,
    LayerNorm scale one."""
    s = bert_shape(name)
    normal = _truncated_normal(np.random.default_rng(WEIGHTS_SEED))
    zeros, ones = (lambda n: np.zeros(n, np.float32)), (lambda n: np.ones(n, np.float32))
    d = s.hidden
    w = {"embeddings.word.weight": normal(s.vocab, d), "embeddings.position.weight": normal(s.max_positions, d),
         "embeddings.token_type.weight": normal(s.type_vocab, d),
         "embeddings.norm.weight": ones(d), "embeddings.norm.bias": zeros(d)}
    for i in range(s.layers):
        p = f"encoder.layers.{i}."
        w.update({p + "self_attn.in_proj_weight": normal(3 * d, d), p + "self_attn.in_proj_bias": zeros(3 * d),
                  p + "self_attn.out_proj.weight": normal(d, d), p + "self_attn.out_proj.bias": zeros(d),
                  p + "linear1.weight": normal(s.mlp, d), p + "linear1.bias": zeros(s.mlp),
                  p + "linear2.weight": normal(d, s.mlp), p + "linear2.bias": zeros(d),
                  p + "norm1.weight": ones(d), p + "norm1.bias": zeros(d),
                  p + "norm2.weight": ones(d), p + "norm2.bias": zeros(d)})
    w.update({"pooler.weight": normal(d, d), "pooler.bias": zeros(d),
              "classifier.weight": normal(num_classes, d), "classifier.bias": zeros(num_classes)})
    return w


def weights(name: str, num_classes: int) -> dict[str, np.ndarray]:
    """Transformer `name`'s one seeded set of weights, in the PyTorch definition's state-dict names."""
    return vit_weights(name, num_classes) if name in VITS else bert_weights(name, num_classes)


def parameter_count(name: str, num_classes: int) -> int:
    return sum(a.size for a in weights(name, num_classes).values())
