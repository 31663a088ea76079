"""What the TensorFlow adapter and its distributed worker share: the runtime, threads, model, loss and optimizer."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from .. import keras_backend
from ..base import LEARNING_RATE, MOMENTUM
from ..keras_models import build_in_policy

if TYPE_CHECKING:
    from ...config import RunConfig

POLICIES = {"fp32": "float32", "tf32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
LOSS = "SparseCategoricalCrossentropy(from_logits=True)"


def import_tf():
    """(tensorflow, keras), with Keras on its TensorFlow backend."""
    keras_backend.choose("tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    if keras.backend.backend() != "tensorflow":
        raise UnsupportedError(f"tensorflow: KERAS_BACKEND is {keras.backend.backend()!r}, not 'tensorflow'")
    return tf, keras


def set_tf_threads(tf, threads: int) -> dict:
    """Set intra- and inter-op pools to `threads` (only possible before TF's runtime starts)."""
    with contextlib.suppress(RuntimeError):
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    return {"intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads()}


def build_model(keras, config: RunConfig):
    """The untrained model of `config`, its layers in the precision's dtype policy (set only while building, so
    nothing built later inherits it). Call it inside the device or distribution-strategy scope that owns it."""
    return build_in_policy(keras, config.model, config.input_size, POLICIES[config.precision],
                           config.mode == "training")


def make_loss(keras):
    """The training loss (LOSS): cross-entropy on the model's logits."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def make_optimizer(keras, precision: str, variables):
    """SGD-momentum (loss-scaled for fp16), built for `variables`; call it in the scope that owns them."""
    opt = keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=MOMENTUM)
    if precision == "fp16":
        opt = keras.optimizers.LossScaleOptimizer(opt)
    opt.build(variables)
    return opt
