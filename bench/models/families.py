"""Model families: what a kind of network is, declared once (framework-free) and asked everywhere.

A family says what its models read (images of a side, or token ids of a sequence length), what one sample of a batch
is and the unit its throughput is given in, how a synthetic batch is drawn (the same seed gives every framework the
same batch), how its FLOPs are counted, whether it has attention (whose implementation a run records), and which
frameworks refuse it or its int8, with why. A catalogue entry (bench/models/catalogue.py) names its family; each
framework's network builders are registered per family beside that framework's definitions
(bench/adapters/torch/models.py, bench/adapters/keras_models.py, bench/adapters/mxnet/models.py).

Adding a family is this object (registered in FAMILIES), its catalogue entries, and one builder per framework that
runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..registry import Registry
from .transformers import bert_shape

IMAGES, TOKENS = "images", "tokens"
LAYOUTS = ("NCHW", "NHWC")

NO_MXNET_TRANSFORMER = ("MXNet has no maintained transformer (GluonNLP and the model zoo ended with MXNet itself in "
                        "2023)")
NO_TFLITE_TOKEN_INT8 = ("TensorFlow's int8 is TFLite's full-integer conversion, calibrated on images here; a token "
                        "model's embedding lookup has no such path (onnxruntime, openvino and torch quantise BERT)")


@dataclass(frozen=True)
class ModelFamily:
    """One kind of network: its inputs and sample unit, its batch, its FLOPs definition and its refusals."""

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
    # framework -> why it runs none of the family's models
    refused_by: Mapping[str, str] = field(default_factory=dict)
    # framework -> why its int8 path takes none of them
    int8_refused_by: Mapping[str, str] = field(default_factory=dict)

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

    def refusal(self, framework: str, precision: str | None = None, int8: str = "int8") -> str | None:
        """Why `framework` cannot run this family's models (at `precision`), or None where it can."""
        if framework in self.refused_by:
            return f"{framework} runs no {self.kind} model: {self.refused_by[framework]}"
        if precision == int8 and framework in self.int8_refused_by:
            return f"{framework} int8 takes no {'token' if self.tokens else self.kind} model: " \
                   f"{self.int8_refused_by[framework]}"
        return None


FAMILIES: Registry[ModelFamily] = Registry("model family")
FAMILIES.add("cnn", ModelFamily(name="cnn", kind="cnn"))
FAMILIES.add("vit", ModelFamily(name="vit", kind="transformer", attention=True,
                                refused_by={"mxnet": NO_MXNET_TRANSFORMER}))
FAMILIES.add("bert", ModelFamily(name="bert", kind="transformer", inputs=TOKENS, attention=True,
                                 vocab=lambda model: bert_shape(model).vocab,
                                 flops_definition="bench/adapters/torch/models.py BERT",
                                 refused_by={"mxnet": NO_MXNET_TRANSFORMER},
                                 int8_refused_by={"tensorflow": NO_TFLITE_TOKEN_INT8}))
