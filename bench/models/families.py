"""Model families: what a kind of network is, declared once (framework-free) and asked everywhere.

A family says what its models read (images of a side, or token ids of a sequence length), what one sample of a batch
is and the unit its throughput is given in, how a synthetic batch is drawn (the same seed gives every framework the
same batch), how its FLOPs are counted, and whether it has attention (whose implementation a run records). A
framework that refuses a family says so among its adapter's declarations (`refused_families`,
`refused_int8_families`: only bench/adapters names a framework); one with no builder for it skips its runs, saying
so. A catalogue entry (bench/models/catalogue.py) names its family; each framework's network builders are registered
per family beside that framework's definitions (bench/adapters/torch/models.py, bench/adapters/keras_models.py,
bench/adapters/mxnet/models.py).

Adding a family is this object (registered in FAMILIES), its catalogue entries, and one builder per framework that
runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..registry import Registry
from .transformers import bert_shape

IMAGES, TOKENS = "images", "tokens"
LAYOUTS = ("NCHW", "NHWC")


@dataclass(frozen=True)
class ModelFamily:
    """One kind of network: its inputs and sample unit, its batch, its FLOPs definition and its attention."""

    name: str
    # how a refusal names the family's models ("mxnet runs no transformer model")
    kind: str
    # IMAGES: float32 batches of square images (NCHW or NHWC), `image_size` their side;
    # TOKENS: int64 token ids, `sequence_length` each
    inputs: str = IMAGES
    # whether its models have self-attention (a run records how its framework implements it: the record's
    # `attention` section)
    attention: bool = False
    # a token family: the vocabulary of its model `name` (token ids are drawn uniform over it)
    vocab: Callable[[str], int] | None = None
    # the definition the reference framework's FLOP counter runs on
    flops_definition: str = "torchvision"

    @property
    def tokens(self) -> bool:
        return self.inputs == TOKENS

    @property
    def sample_unit(self) -> str:
        """What one sample of a batch is: 'images' or 'sequences' (throughput is samples/s in that unit)."""
        return "sequences" if self.tokens else "images"

    @property
    def rate_unit(self) -> str:
        """The throughput's short unit: 'img/s' or 'seq/s'."""
        return "seq/s" if self.tokens else "img/s"

    @property
    def size_field(self) -> str:
        """The run field that holds its input size: 'image_size' or 'sequence_length'."""
        return "sequence_length" if self.tokens else "image_size"

    def batch_shape(self, model: str, batch_size: int, input_size: int, layout: str = "NCHW") -> tuple[int, ...]:
        """(n, 3, s, s) or (n, s, s, 3) for images of side `input_size`; (n, input_size) for tokens."""
        if self.tokens:
            return batch_size, input_size
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r}; valid choices: {', '.join(LAYOUTS)}")
        return (batch_size, 3, input_size, input_size) if layout == "NCHW" else (batch_size, input_size, input_size, 3)

    def synthetic_batch(self, model: str, batch_size: int, input_size: int, rng: np.random.Generator,
                        layout: str = "NCHW") -> np.ndarray:
        """One batch drawn from `rng`: float32 standard-normal images, or int64 token ids uniform over the model's
        vocabulary."""
        shape = self.batch_shape(model, batch_size, input_size, layout)
        if self.tokens:
            return rng.integers(0, self.vocab(model), shape, dtype=np.int64)
        return rng.standard_normal(shape, dtype=np.float32)

    def describe_batch(self, batch_size: int, input_size: int) -> str:
        """'8 standard-normal 224x224 images' or '8 sequences of 128 uniform token ids'."""
        if self.tokens:
            return f"{batch_size} sequences of {input_size} uniform token ids"
        return f"{batch_size} standard-normal {input_size}x{input_size} images"

    def layout(self, images: str, token_dtype: str | None = None) -> str:
        """The record's `layout` setting: `images` (how the framework lays out an image batch), or for token ids
        the ids, with the dtype the framework feeds them in where it names one."""
        if not self.tokens:
            return images
        return "token ids (batch, sequence)" + (f", {token_dtype}" if token_dtype else "")


FAMILIES: Registry[ModelFamily] = Registry("model family")
FAMILIES.add("cnn", ModelFamily(name="cnn", kind="cnn"))
FAMILIES.add("vit", ModelFamily(name="vit", kind="transformer", attention=True))
FAMILIES.add("bert", ModelFamily(name="bert", kind="transformer", inputs=TOKENS, attention=True,
                                 vocab=lambda model: bert_shape(model).vocab,
                                 flops_definition="bench/adapters/torch/models.py BERT"))
