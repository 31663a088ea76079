"""What the JAX adapter's single-process workload and its data-parallel worker share: the runtime, the model in
its precision, the loss and the SGD-momentum update (the same recipe as the other frameworks)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from ...host.devices import default_threads
from .. import keras_backend
from ..base import LEARNING_RATE, MOMENTUM
from ..keras_models import build_in_policy

if TYPE_CHECKING:
    from ...config import RunConfig

POLICIES = {"fp32": "float32", "tf32": "float32", "bf16": "mixed_bfloat16"}

# Engines: jax.jit with XLA's defaults, and with an XLA:CPU compile option that changes how convolutions run, passed
# per compilation (jax.jit's compiler_options: an option this jaxlib does not have is an error, never silently
# ignored). XLA:CPU (jaxlib 0.10) hands a convolution to XNNPACK's YNNPACK library where its cost model expects a gain
# (ResNet-50: 45 of its 53) and the rest to Eigen; `xla_cpu_experimental_ynn_fusion_type` empty sends none there (every
# convolution through Eigen, XLA's path before YNNPACK), which took ~5% less CPU time per ResNet-50 step on an AVX-512
# EPYC. Tried and not kept (no change, or none measurable): every convolution to YNNPACK (the same option set to
# individual convolutions), xla_cpu_use_onednn and xla_cpu_experimental_onednn_custom_call (the same compiled program:
# oneDNN fuses only dots, elementwise ops and reductions here), xla_cpu_prefer_vector_width=512. The options are
# XLA:CPU's: XLA:GPU ignores them.
YNN = "xla_cpu_experimental_ynn_fusion_type"
COMPILER_OPTIONS = {"jit": {}, "jit_eigen": {YNN: ""}}


def compiler_options(engine: str) -> dict:
    """The XLA compile options of a JAX engine (none: XLA's defaults)."""
    return dict(COMPILER_OPTIONS.get(engine, {}))
LOSS = "softmax cross-entropy on integer labels (mean)"


def import_jax(threads: int):
    """Import jax and keras on the JAX backend. XLA's CPU thread pool is sized by the CPUs this process
    may use, so fewer threads than cores are set by CPU affinity before JAX starts."""
    keras_backend.choose("jax")
    # JAX takes 75% of a GPU's memory at start-up unless told not to: allocated as used, like PyTorch's caching
    # allocator, its memory and largest batch compare like for like (recorded among the adapter's variables)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if threads < default_threads() and hasattr(os, "sched_setaffinity") and "jax" not in sys.modules:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    import jax
    import keras

    if keras.backend.backend() != "jax":
        raise UnsupportedError(f"jax: Keras in this process already runs on {keras.backend.backend()!r}; "
                               "JAX runs need a process of their own (KERAS_BACKEND=jax)")
    return jax, keras


def set_matmul_precision(jax, precision: str) -> None:
    """fp32 means fp32 ("highest"); XLA's GPU default would use TF32 tensor cores for float32 dots."""
    jax.config.update("jax_default_matmul_precision", "tensorfloat32" if precision == "tf32" else "highest")


def build_model(keras, config: RunConfig):
    """The untrained Keras model of `config` (seeded: the same weights in every process), its layers in the
    precision's dtype policy (set only while building, so nothing built later inherits it)."""
    keras.utils.set_random_seed(config.seed)
    return build_in_policy(keras, config.model, config.input_size, POLICIES[config.precision],
                           config.mode == "training")


def cross_entropy(jax, logits, labels):
    """Mean softmax cross-entropy on integer labels (torch.nn.CrossEntropyLoss's definition)."""
    logp = jax.nn.log_softmax(logits.astype("float32"))
    return -jax.numpy.mean(jax.numpy.take_along_axis(logp, labels[:, None], axis=1))


def make_loss(jax, model):
    """loss(trainable, non_trainable, x, y) -> (loss, updated non-trainable state), through stateless_call."""

    def loss(trainable, non_trainable, x, y):
        logits, updated = model.stateless_call(trainable, non_trainable, x, training=True)
        return cross_entropy(jax, logits, y), updated

    return loss


def sgd_momentum(params, grads, velocity):
    """torch.optim.SGD(momentum) form: v = m v + g; p = p - lr v."""
    velocity = [MOMENTUM * v + g for v, g in zip(velocity, grads)]
    return [p - LEARNING_RATE * v for p, v in zip(params, velocity)], velocity
