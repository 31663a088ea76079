"""The one seeded set of weights every framework loads for a catalogue CNN (random, nothing downloaded), so that its
outputs can be compared with PyTorch's before any timing (bench/measurement/outputs_check.py), as the transformers'
are (bench/models/transformers.py).

A CNN's weights are addressed by layer kind and position, not by name: each framework's definition (torchvision, the
Keras definitions in bench/adapters/keras_models.py, the Gluon ones in bench/adapters/mxnet/models.py) lists its
layers of each kind (convolution, depthwise convolution, BatchNorm, linear) in the order torchvision registers them,
and the j-th layer of a kind holds the arrays drawn from (WEIGHTS_SEED, kind, j), in torchvision's layout; a loader
maps that layout onto its own. Each loader draws with its own layer's shape, so a definition that differs from
torchvision's in a layer still loads; the output check is what catches it.

The values: normal weights of sd sqrt(2 / fan-in) (He's) for a convolution with a bias and a linear layer (AlexNet and
VGG have no BatchNorm: He's keeps their activations' scale through their 8 and 16 layers), sd sqrt(1 / fan-in) for a
convolution without bias, which a BatchNorm follows (with He's, a residual network's activations about double per
block: ResNet-152's logits on standard-normal images reached 1e13, against 2.2e3 with this), biases N(0, 0.1), and
BatchNorm with statistics of its own (scale and variance uniform in [0.5, 1.5], shift and mean
N(0, 0.1)): a default BatchNorm (scale 1, shift 0, mean 0, variance 1) would hide a loader that mixes its four arrays
up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np

from .transformers import WEIGHTS_SEED

# the kinds of layer that hold weights, with the code each one's draws are seeded by
KINDS = {"conv": 1, "depthwise": 2, "bn": 3, "linear": 4}
BN_ARRAYS = ("weight", "bias", "running_mean", "running_var")  # torch's names, in the order `draw` returns them


def draw(kind: str, index: int, shape: tuple[int, ...], bias: bool = False) -> list[np.ndarray]:
    """The arrays of the `index`-th layer of `kind` (0-based, torchvision's order), float32 in torchvision's layout:
    a convolution's or a linear layer's weight of `shape` ((out, in / groups, kh, kw) or (out, in)) and its bias if
    `bias`; a BatchNorm's scale, shift, running mean and running variance for `shape` = (channels,)."""
    if kind not in KINDS:
        raise ValueError(f"unknown layer kind {kind!r}; valid: {', '.join(KINDS)}")
    rng = np.random.default_rng([WEIGHTS_SEED, KINDS[kind], index])
    if kind == "bn":
        (n,) = shape
        return [rng.uniform(0.5, 1.5, n).astype(np.float32), (rng.standard_normal(n) * 0.1).astype(np.float32),
                (rng.standard_normal(n) * 0.1).astype(np.float32), rng.uniform(0.5, 1.5, n).astype(np.float32)]
    gain = 2.0 if bias or kind == "linear" else 1.0
    weight = rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(gain / np.prod(shape[1:])))
    return [weight] + ([(rng.standard_normal(shape[0]) * 0.1).astype(np.float32)] if bias else [])


def in_order(layers: Iterable[tuple[str, tuple[int, ...], bool]]) -> Iterator[list[np.ndarray]]:
    """Each layer's arrays (`draw`'s), for layers given as (kind, shape in torchvision's layout, whether it has a
    bias) in torchvision's order within each kind: the j-th layer of a kind gets the j-th draw of that kind. Every
    framework's loader walks its layers through this one count."""
    seen = Counter()
    for kind, shape, bias in layers:
        yield draw(kind, seen[kind], shape, bias)
        seen[kind] += 1
