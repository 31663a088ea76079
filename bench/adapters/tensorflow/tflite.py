"""TensorFlow's `tflite` engine: the Keras model converted by `tf.lite.TFLiteConverter` and run by
`tf.lite.Interpreter` (its default XNNPACK delegate on the CPU), in fp32, or in int8 by full-integer post-training
quantisation with a representative data set (the procedural calibration set). int8 is set beside TFLite's own fp32
(the same engine) as well as TensorFlow's graph fp32.

LiteRT (`ai_edge_litert`, TFLite's successor package) is not installed here; `tf.lite` is the interpreter that
ships with TensorFlow (deprecated in its favour, still the same runtime).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ...models.inputs import layout, synthetic_batch
from ..base import Workload
from ..int8 import ImageSets, Quantised, Stopwatch, logits_of, normalise
from ..keras_models import keras_batch
from ..precision import INT8
from .recipe import build_model, import_tf

if TYPE_CHECKING:
    from ...config import RunConfig

ENGINE = "tflite"
PRECISIONS = ("fp32", INT8)


def convert(tf, model, representative: np.ndarray | None = None) -> bytes:
    """The TFLite flatbuffer of the Keras `model`: fp32, or full-integer int8 (every op int8, float input and output
    quantised/dequantised at the edges) calibrated one image at a time on `representative` (NHWC float32)."""
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if representative is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([x[None]] for x in representative)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter.convert()


def interpreter(tf, flatbuffer: bytes, batch_size: int, threads: int):
    """A TFLite interpreter of `flatbuffer` with its input resized to `batch_size` images, tensors allocated."""
    it = tf.lite.Interpreter(model_content=flatbuffer, num_threads=threads)
    index = it.get_input_details()[0]["index"]
    shape = list(it.get_input_details()[0]["shape"])
    it.resize_tensor_input(index, [batch_size, *shape[1:]])
    it.allocate_tensors()
    return it


def predict(it, x: np.ndarray) -> np.ndarray:
    """One batch through the interpreter (its input resized to the batch first where it differs)."""
    detail = it.get_input_details()[0]
    if list(detail["shape"]) != list(x.shape):
        it.resize_tensor_input(detail["index"], list(x.shape))
        it.allocate_tensors()
    it.set_tensor(detail["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def quantise(tf, model, batch_size: int, threads: int, image_size: int, sets: ImageSets | None = None):
    """(the int8 flatbuffer, its Quantised description with held-out logits against TFLite's fp32 ones)."""
    sets = sets or ImageSets.for_size(image_size)
    clock = Stopwatch()
    flatbuffer = convert(tf, model, normalise(sets.calibration, "NHWC"))
    quantise_s = clock()
    held_out = normalise(sets.held_out, "NHWC")
    fp32 = interpreter(tf, convert(tf, model), batch_size, threads)
    int8 = interpreter(tf, flatbuffer, batch_size, threads)
    return flatbuffer, Quantised(
        tool="tf.lite.TFLiteConverter (full-integer post-training quantisation) + tf.lite.Interpreter",
        method="static post-training quantisation, TFLITE_BUILTINS_INT8 (int8 weights per channel, int8 "
               "activations per tensor), representative data set = the calibration set, one image at a time",
        sets=sets.describe(), quantise_s=quantise_s,
        fp32_reference="the same Keras model converted to TFLite fp32 (the same interpreter)",
        fp32_logits=logits_of(lambda b: predict(fp32, b), held_out, batch_size),
        int8_logits=logits_of(lambda b: predict(int8, b), held_out, batch_size),
        details={"settings": {"input_output": "float32, quantised and dequantised inside the model",
                              "litert": "ai_edge_litert is not installed: tf.lite.Interpreter runs it"}})


class TFLiteWorkload(Workload):
    """Inference through the TFLite interpreter (fp32 or full-integer int8) on a resident NHWC batch."""

    def __init__(self, config: RunConfig) -> None:
        tf, keras = import_tf()
        self.config = config
        keras.utils.set_random_seed(config.seed)
        model = build_model(keras, dataclasses.replace(config, precision="fp32", engine="graph"))
        self.params = int(sum(np.prod(v.shape) for v in model.trainable_weights))
        if config.precision == INT8:
            flatbuffer, self.quantised = quantise(tf, model, config.batch_size, config.threads, config.image_size)
        else:
            flatbuffer = convert(tf, model)
        self.interpreter = interpreter(tf, flatbuffer, config.batch_size, config.threads)
        rng = np.random.default_rng(config.seed)
        self.host_x = keras_batch(synthetic_batch(config.model, config.batch_size, config.input_size, rng))
        self.index = self.interpreter.get_input_details()[0]["index"]
        self.settings = {
            "intra_op_threads": config.threads,  # the interpreter's num_threads (no read-back)
            "layout": layout(config.model, "NHWC (the Keras model's)", "int32"),
            "engine": f"{ENGINE}: tf.lite.Interpreter (XNNPACK delegate by default), "
                      f"{'full-integer int8' if config.precision == INT8 else 'fp32'} flatbuffer",
            "data_placement": config.data,
            "inside_timer": "set_tensor + invoke of the interpreter on the batch",
            "autograd_in_inference": False,  # an interpreter of a converted graph: no gradients exist
            "optimizer": None, "loss": None, "timer": "time.perf_counter",
        }
        if self.quantised is not None:
            self.settings["int8"] = self.quantised.describe()

    def _input(self):
        return self.host_x if self.config.data == "device" else self.host_x.copy()

    def _location(self, batch) -> str:
        return "cpu"

    def step(self) -> None:
        self.interpreter.set_tensor(self.index, self._input())
        self.interpreter.invoke()

    def logits(self, x):
        """The converted model's outputs, through the run's own interpreter."""
        return predict(self.interpreter, keras_batch(x))
