"""TensorFlow adapter: Keras 3 models (channels-last), tf.function / XLA steps, SGD-momentum training."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from ...host.devices import is_gpu
from ...models import family_of, get_model
from ...models.inputs import layout, synthetic_batch
from ...models.transformers import attention_dropout
from .. import keras_backend
from ..base import LEARNING_RATE, MOMENTUM, OPTIMIZER, Adapter, Workload, dist_version, register, subtractive_phases
from ..distributed_runs import DistributedRuns
from ..keras_models import keras_attention, keras_batch
from ..launch import LOCAL_DEVICES, LaunchPlan
from ..precision import INT8
from ..ranks import RankGroup
from . import doctor, launch, strategies, tflite, worker
from .recipe import LOSS, POLICIES, build_model, import_tf, make_loss, make_optimizer, set_tf_threads

if TYPE_CHECKING:
    from ...config import RunConfig


class TFWorkload(Workload):
    def __init__(self, config: RunConfig, scope: Callable[[], AbstractContextManager] | None = None) -> None:
        """`scope`: where a distribution strategy builds the model and optimizer (its `scope`: the variables are its
        replicas'); None: on the config's device."""
        import numpy as np

        tf, keras = import_tf()
        self.tf, self.config = tf, config
        threads = set_tf_threads(tf, config.threads)
        if is_gpu(config.device):
            if not tf.config.list_physical_devices("GPU"):
                raise UnsupportedError("tensorflow: this TensorFlow build sees no GPU (tensorflow-cpu?); its CUDA "
                                       "build is requirements-tensorflow-gpu.txt (make setup GPU=1)")
            self.tf_device = "/GPU:" + config.device.split(":")[1]
        else:
            self.tf_device = "/CPU:0"
        self.training = config.mode == "training"
        # On the CPU, synchronous eager execution (TF's default) returns only when the work is done,
        # so an explicit device sync would only add its own ~60 us; GPUs queue work and need it.
        self.needs_sync = is_gpu(config.device) or not tf.config.experimental.get_synchronous_execution()
        tf.random.set_seed(config.seed)
        keras.utils.set_random_seed(config.seed)
        # fp32 means fp32: TensorFlow's default runs float32 matmuls and convolutions on TF32 tensor cores
        tf.config.experimental.enable_tensor_float_32_execution(config.precision == "tf32")
        with scope() if scope is not None else tf.device(self.tf_device):
            self.model = build_model(keras, config)
            n = config.batch_size
            rng = np.random.default_rng(config.seed)
            self.host_x = keras_batch(synthetic_batch(config.model, n, config.input_size, rng))
            self.x = tf.identity(tf.constant(self.host_x))
            self.y = tf.constant(rng.integers(0, get_model(config.model).num_classes, n), dtype=tf.int32)
            self.opt = make_optimizer(keras, config.precision, self.model.trainable_variables)
        self.params = int(sum(np.prod(v.shape) for v in self.model.trainable_weights))
        self.feed, self.batch_y = None, None
        if config.data == "files":  # tf.data over the image files (its own module: the pipeline as TF users write it)
            from .input_files import tf_feed

            self.feed = tf_feed(tf, config.data_dir, config.data_images, config.batch_size, config.image_size)
        self.loss_fn = make_loss(keras)
        compile_ = self._compiler()
        self._infer = compile_(lambda x: self.model(x, training=False))
        self._train = compile_(self._train_step)
        self._fwd_loss = compile_(lambda x: self.loss_fn(self.y, self.model(x, training=True)))
        self._grads = compile_(self._grads_step)
        # The training step's parts for a distribution strategy, which runs them on each replica's batch as
        # tf.functions with its collective between them (bench/adapters/tensorflow/worker.py).
        self.gradients = tf.function(self._loss_and_grads)
        self.apply = tf.function(lambda grads: self.opt.apply(grads, self.model.trainable_variables))
        self.settings = {
            **threads,
            "layout": layout(config.model, "NHWC (channels_last, Keras default; oneDNN's preferred layout on CPU)",
                             "int32"),
            "engine": config.engine,
            "data_placement": config.data,
            "inside_timer": self._inside_timer(),
            "dtype_policy": POLICIES[config.precision],
            "optimizer": OPTIMIZER if self.training else None,
            "loss": LOSS if self.training else None,
            "timer": "time.perf_counter" + (" after tf.test.experimental.sync_devices()" if self.needs_sync
                                            else " (synchronous eager execution on the CPU)"),
            "autograd_in_inference": False if not self.training else None,
        }
        if family_of(config.model).attention:
            self.settings["attention"] = keras_attention("tensorflow", is_gpu(config.device),
                                                         attention_dropout(config.model, self.training))

    def _compiler(self):
        engine = self.config.engine
        if engine == "eager":
            return lambda f: f
        return lambda f: self.tf.function(f, jit_compile=(engine == "xla"))

    def _inside_timer(self) -> str:
        h2d = {"host": "host->device copy of the batch + ",
               "files": "the tf.data iterator's next batch (decoded and augmented in its map) + "
               }.get(self.config.data, "")
        if self.training:
            return h2d + "forward + cross-entropy + GradientTape backward + SGD-momentum apply"
        return h2d + "forward with training=False, no GradientTape"

    def _grads_step(self, x, y=None):
        with self.tf.GradientTape() as tape:
            loss = self.loss_fn(self.y if y is None else y, self.model(x, training=True))
            scaled = self.opt.scale_loss(loss)
        return tape.gradient(scaled, self.model.trainable_variables)

    def _loss_and_grads(self, x, y):
        """Forward, loss and backward of batch (x, y): (loss, the trainable variables' gradients)."""
        with self.tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
            scaled = self.opt.scale_loss(loss)
        return loss, tape.gradient(scaled, self.model.trainable_variables)

    def _train_step(self, x, y=None):
        """y: the labels read with a `files` batch (None: the synthetic labels)."""
        grads = self._grads_step(x, y)
        self.opt.apply(grads, self.model.trainable_variables)

    def _input(self):
        if self.config.data == "device":
            return self.x
        if self.feed is not None:
            x, self.batch_y = self.feed.next()
            return x
        with self.tf.device(self.tf_device):
            return self.tf.identity(self.tf.constant(self.host_x))

    def _location(self, batch) -> str:
        return "gpu" if ":GPU:" in batch.device.upper() else "cpu"

    def logits(self, x):
        """The Keras model's outputs, called eagerly (no graph traced before the timing's own)."""
        return self._outputs(lambda batch: self.model(batch, training=False), x)

    def compiled_logits(self, x):
        """The traced (graph or XLA) forward the timed loop ran, on a batch of its shape and dtype; whether it traced
        again is read from the function's own count."""
        if self.training or self.config.engine == "eager":
            return None
        traced = self._infer.experimental_get_tracing_count()
        out = self._outputs(self._infer, x)
        return out, self._infer.experimental_get_tracing_count() > traced

    def _outputs(self, forward, x):
        with self.tf.device(self.tf_device):
            out = forward(self.tf.constant(keras_batch(x)))
        return self.tf.cast(out, self.tf.float32).numpy()

    def step(self) -> None:
        with self.tf.device(self.tf_device):
            x = self._input()
            if self.training and self.batch_y is not None:
                self._train(x, self.batch_y)
            else:
                (self._train if self.training else self._infer)(x)

    def sync(self) -> None:
        if self.needs_sync:
            self.tf.test.experimental.sync_devices()

    subtractive = True

    def phases(self, iterations: int, step_s=()) -> dict[str, list[float]]:
        """Subtractive split, each part timed as the compiled function the timed loop runs (timing the
        update as its own function ran it outside the fused step and cost 60x more than torch's)."""
        name = {"host": "h2d", "files": "data"}.get(self.config.data)
        prefix = ((name, self._input),) if name else ()
        if not self.training:
            return subtractive_phases(self.sync, iterations, lambda: self._infer(self.x), prefix=prefix)
        return subtractive_phases(self.sync, iterations, lambda: self._fwd_loss(self.x), lambda: self._grads(self.x),
                                  lambda: self._train(self.x), prefix=prefix, step_s=step_s)

    def weights_checksum(self) -> float | None:
        if not self.training:
            return None
        import numpy as np

        return float(sum(np.abs(v.numpy().astype(np.float64)).sum() for v in self.model.trainable_variables))

    def reset_memory(self) -> None:
        if self.tf_device.startswith("/GPU"):
            self.tf.config.experimental.reset_memory_stats(self.tf_device.strip("/"))

    def memory(self) -> dict:
        if not self.tf_device.startswith("/GPU"):
            return super().memory()
        info = self.tf.config.experimental.get_memory_info(self.tf_device.strip("/"))
        return {"peak_bytes": int(info["peak"]), "kind": "TensorFlow allocator peak (get_memory_info)"}


class TensorFlowDistributed(DistributedRuns):
    """TF_CONFIG tasks (MultiWorkerMirroredStrategy, ParameterServerStrategy), or MirroredStrategy over one
    process's GPUs; on real machines from a host list or SlurmClusterResolver."""

    strategies = ("independent", "allreduce", "ps_async")
    launch = launch.TF_CONFIG
    independent_workers_connect = False  # independent workers have no cluster: nothing gathers their results
    multi_machine = True  # TF_CONFIG from a host list, or SlurmClusterResolver inside Slurm
    own_collectives = "a ring over gRPC"

    def prepare_rank(self, config: RunConfig, scope: Callable[[], AbstractContextManager] | None = None) -> TFWorkload:
        return TFWorkload(config, scope)

    def rank_group(self, config: RunConfig, spec: dict) -> RankGroup | None:
        return worker.rank_group(self.adapter, config, spec)

    def launch_for(self, strategy: str, device: str, nodes: int) -> str | None:
        return LOCAL_DEVICES if strategies.local_devices(strategy, device, nodes) else self.launch

    def slurm_tasks(self, strategy: str, workers: int) -> int | None:
        return workers + (2 if strategy == "ps_async" else 0)  # one Slurm task per TF task: a ps and a chief too

    def launch_plan(self, config: RunConfig, module: str, env: dict, nodes, cluster) -> LaunchPlan:
        return launch.launch_plan(config, module, env, nodes, cluster)

    def gpu_layout_refusal(self, strategy: str, ranks_here: int, nodes: int, gpu_count: int) -> str | None:
        return strategies.gpu_refusal(strategy, ranks_here, gpu_count)


@register
class TensorFlowAdapter(Adapter):
    name = "tensorflow"
    display_name = "TensorFlow"
    colour = "#1f77b4"
    aliases = ("tf",)
    oom_markers = ("resourceexhausted", "outofmemory", "memoryerror", "badalloc")  # ResourceExhaustedError: OOM
    environment_variables = ("TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                             "TF_XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "TF_GPU_ALLOCATOR", "TF_FORCE_GPU_ALLOW_GROWTH",
                             "TF_DETERMINISTIC_OPS", "TF_CUDNN_DETERMINISTIC", "TF_GPU_THREAD_MODE",
                             "TF_USE_LEGACY_KERAS", "KERAS_BACKEND", "XLA_FLAGS")
    engines = ("graph", "xla", "eager", tflite.ENGINE)
    precisions = ("fp32", "tf32", "bf16", "fp16", INT8)
    module = "tensorflow"
    distribution = "tensorflow-cpu"
    other_distributions = ("tensorflow",)  # tensorflow[and-cuda]
    requires = ("keras",)
    gpu_kernel = "bench-tensorflow-gpu"
    gpu_environment = ".venv-tensorflow-gpu"
    libraries = ("tensorflow", "keras")
    distributed_runs = TensorFlowDistributed
    refused_int8_families = {"bert": "TensorFlow's int8 is TFLite's full-integer conversion, calibrated on images "
                                     "here; a token model's embedding lookup has no such path (onnxruntime, openvino "
                                     "and torch quantise BERT)"}

    def doctor(self) -> dict:
        return doctor.gpu_facts()

    def info(self) -> dict:
        tf, keras = import_tf()
        build = dict(tf.sysconfig.get_build_info())
        onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
        return {
            "version": tf.__version__,
            "keras": keras.__version__,
            "cuda": build.get("cuda_version"),
            "cudnn": build.get("cudnn_version"),
            "is_cuda_build": build.get("is_cuda_build"),
            "onednn": "on (x86 Linux default)" if onednn is None else f"TF_ENABLE_ONEDNN_OPTS={onednn}",
        }

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):

        keras_backend.choose("tensorflow")
        import keras
        import numpy as np
        import tensorflow as tf

        from ..keras_models import build_keras_model

        tf.config.threading.set_intra_op_parallelism_threads(c.threads)
        tf.config.threading.set_inter_op_parallelism_threads(c.threads)
        model = build_keras_model(c.model, c.input_size, c.mode == "training")
        x = tf.constant(keras_batch(synthetic_batch(c.model, c.batch_size, c.input_size, np.random.default_rng())))
        y = tf.random.uniform((c.batch_size,), 0, get_model(c.model).num_classes, dtype=tf.int32)
        opt = keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=MOMENTUM)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def infer(x):
            return model(x, training=False)

        @tf.function
        def train(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            return loss

        return lambda: (infer(x) if c.mode == "inference" else train(x, y)).numpy()

    def engines_for(self, mode: str, precision: str) -> tuple[str, ...]:
        # TFLite: inference in fp32 or int8; int8 only there (full-integer conversion)
        if precision == INT8:
            return (tflite.ENGINE,)
        keep = mode == "inference" and precision in tflite.PRECISIONS
        return tuple(e for e in self.engines if keep or e != tflite.ENGINE)

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        if config.engine == tflite.ENGINE:
            if is_gpu(config.device):
                raise UnsupportedError("tensorflow: the tflite engine runs on the CPU here; valid devices: cpu")
            return tflite.TFLiteWorkload(config)
        return TFWorkload(config)

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        # the CPU-only wheel (the default environment's) cannot run a GPU config: said before any work, unless the
        # CUDA build's environment is there to run it (kernel_for)
        if (is_gpu(device) and dist_version("tensorflow-cpu") and not dist_version("tensorflow")
                and self.gpu_interpreter() is None):
            return ("tensorflow: the installed build is tensorflow-cpu, which has no GPU support; "
                    "tensorflow[and-cuda] is requirements-tensorflow-gpu.txt (make setup GPU=1 builds it)")
        return super().not_applicable(mode, precision, device)
