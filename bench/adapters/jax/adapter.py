"""JAX adapter: the catalogue's Keras 3 models on Keras's JAX backend (in their own process), run through
stateless_call inside jax.jit: inference, and a training step of loss, gradient and SGD-momentum update
written in JAX (the same recipe as the other frameworks: torch's SGD momentum form, cross-entropy)."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from ...host.devices import is_gpu
from ...models import family_of, get_model
from ...models.inputs import layout, synthetic_batch
from ...models.transformers import attention_dropout
from .. import keras_backend
from ..base import LEARNING_RATE, MOMENTUM, OPTIMIZER, Adapter, Workload, register, subtractive_phases
from ..compile_cache import configure_xla
from ..distributed_runs import DistributedRuns
from ..keras_models import build_keras_model, keras_attention, keras_batch
from ..launch import LOCAL_DEVICES, LaunchPlan, local_device_plan
from ..ranks import RankGroup
from . import doctor, worker
from .training import (
    COMPILER_OPTIONS,
    LOSS,
    POLICIES,
    build_model,
    compiler_options,
    import_jax,
    make_loss,
    set_matmul_precision,
    sgd_momentum,
)

if TYPE_CHECKING:
    from ...config import RunConfig


class JaxWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        import numpy as np

        jax, keras = import_jax(config.threads)
        self.jax, self.config = jax, config
        set_matmul_precision(jax, config.precision)
        watch = configure_xla(jax)  # XLA compiles at the first step: its outcome is read after the loop
        self.compile_caches = {"xla": watch.outcome} if watch else {}
        self.training = config.mode == "training"
        model = build_model(keras, config)
        self.params = int(sum(np.prod(v.shape) for v in model.trainable_weights))
        gpu = is_gpu(config.device)
        device = jax.devices("gpu")[int(config.device.split(":")[1])] if gpu else jax.devices("cpu")[0]
        self.device = device
        n = config.batch_size
        rng = np.random.default_rng(config.seed)
        self.host_x = keras_batch(synthetic_batch(config.model, n, config.input_size, rng))
        put = lambda a: jax.device_put(a, device)
        self.x = put(self.host_x)
        self.y = put(rng.integers(0, get_model(config.model).num_classes, n).astype(np.int32))
        self.keras_model = model  # the output check calls it op by op (the timed functions below are jitted)
        self.trainable = [put(v.value) for v in model.trainable_variables]
        self.non_trainable = [put(v.value) for v in model.non_trainable_variables]
        self.velocity = [jax.numpy.zeros_like(p) for p in self.trainable]
        if config.data == "files":
            self.feed = files_feed(config)

        self.loss = loss = make_loss(jax, model)  # a data-parallel strategy runs it on every replica's shard
        grad = jax.value_and_grad(loss, has_aux=True)

        def train(trainable, non_trainable, velocity, x, y):
            (_, updated), grads = grad(trainable, non_trainable, x, y)
            trainable, velocity = sgd_momentum(trainable, grads, velocity)
            return trainable, updated, velocity

        options = compiler_options(config.engine)
        jit = functools.partial(jax.jit, compiler_options=options or None)
        self._infer = jit(lambda t, nt, x: model.stateless_call(t, nt, x, training=False)[0])
        self._train = jit(train, donate_argnums=(0, 1, 2))
        self._loss = jit(lambda t, nt, x, y: loss(t, nt, x, y)[0])
        self._grad = jit(lambda t, nt, x, y: grad(t, nt, x, y)[1])
        self.out = None
        affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        self.settings = {
            "intra_op_threads": len(affinity) if affinity else None,
            "threads_how": "XLA's CPU pool follows the process's CPU affinity (read back)",
            "layout": layout(config.model, "NHWC (Keras default)", "int32"),
            "engine": "jax.jit of Keras stateless_call" + (" + value_and_grad + SGD-momentum" if self.training else ""),
            "xla_compiler_options": options,  # the engine's XLA compile options ({}: XLA's defaults)
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "keras_backend": keras.backend.backend(),
            "device": str(device),
            "data_placement": config.data,
            "inside_timer": self._inside_timer(),
            "dtype_policy": POLICIES[config.precision],
            "optimizer": OPTIMIZER if self.training else None,
            "loss": LOSS if self.training else None,
            "timer": "time.perf_counter after jax.block_until_ready",
            "autograd_in_inference": False if not self.training else None,  # no jax.grad in the inference path
        }
        if family_of(config.model).attention:
            self.settings["attention"] = keras_attention("jax", gpu, attention_dropout(config.model, self.training))

    def _inside_timer(self) -> str:
        h2d = {"host": "jax.device_put of the batch + ",
               "files": "the tf.data iterator's next batch + jax.device_put of it + "}.get(self.config.data, "")
        if self.training:
            return h2d + "one jitted call: forward + cross-entropy + value_and_grad + SGD-momentum update"
        return h2d + "one jitted forward (training=False)"

    def _input(self):
        if self.feed is not None:  # the batch and its labels as read from the files, onto the device
            x, y = self.feed.next()
            self.y = self.jax.device_put(y.numpy(), self.device)
            return self.jax.device_put(x.numpy(), self.device)
        return self.x if self.config.data == "device" else self.jax.device_put(self.host_x, self.device)

    def _location(self, batch) -> str:
        return "cpu" if next(iter(batch.devices())).platform == "cpu" else "gpu"

    def logits(self, x):
        """The Keras model's stateless call on the initial weights, op by op (jitting it would compile before the
        timing's own compile)."""
        return self._outputs(lambda t, nt, batch: self.keras_model.stateless_call(t, nt, batch, training=False)[0], x)

    def compiled_logits(self, x):
        """The jitted forward the timed loop ran, on a batch of its shape; whether it compiled again is read from the
        function's own cache of programs."""
        if self.training:
            return None
        programs = self._infer._cache_size()
        out = self._outputs(self._infer, x)
        return out, self._infer._cache_size() > programs

    def _outputs(self, forward, x):
        import numpy as np

        out = forward(self.trainable, self.non_trainable, self.jax.device_put(keras_batch(x), self.device))
        return np.asarray(out, dtype=np.float32)

    def step(self) -> None:
        x = self._input()
        if not self.training:
            self.out = self._infer(self.trainable, self.non_trainable, x)
            return
        self.trainable, self.non_trainable, self.velocity = self._train(
            self.trainable, self.non_trainable, self.velocity, x, self.y)
        self.out = self.trainable

    def sync(self) -> None:
        if self.out is not None:
            self.jax.block_until_ready(self.out)

    subtractive = True

    def phases(self, iterations: int, step_s=()) -> dict[str, list[float]]:
        t, nt = self.trainable, self.non_trainable
        if not self.training:
            return subtractive_phases(self.sync, iterations, forward=lambda: self._keep(self._infer(t, nt, self.x)))
        return subtractive_phases(
            self.sync, iterations,
            forward=lambda: self._keep(self._loss(self.trainable, self.non_trainable, self.x, self.y)),
            forward_backward=lambda: self._keep(self._grad(self.trainable, self.non_trainable, self.x, self.y)),
            step=self.step, step_s=step_s)

    def _keep(self, out) -> None:
        self.out = out

    def weights_checksum(self) -> float | None:
        if not self.training:
            return None
        import numpy as np

        return float(sum(np.abs(np.asarray(p, dtype=np.float64)).sum() for p in self.trainable))


def files_feed(config: RunConfig):
    """JAX has no input pipeline of its own, and this environment has no JAX loader (grain is not installed): JAX
    users commonly feed it with tf.data, as the Flax and JAX examples do, so its `files` runs read through TensorFlow's
    pipeline (bench/adapters/tensorflow/input_files.py) on the host, TensorFlow kept off any GPU."""
    import tensorflow as tf

    from ..tensorflow.input_files import tf_feed

    tf.config.set_visible_devices([], "GPU")
    return tf_feed(tf, config.data_dir, config.data_images, config.batch_size, config.image_size,
                   " (JAX has no loader of its own: tf.data, as the Flax examples feed it) + jax.device_put")


class JaxDistributed(DistributedRuns):
    """Data parallel over one process's devices (a 1-D mesh): the workers are its replicas
    (bench/adapters/jax/worker.py)."""

    strategies = ("independent", "allreduce")
    launch = LOCAL_DEVICES
    own_collectives = "XLA's all-reduce between one process's devices"

    def rank_group(self, config: RunConfig, spec: dict) -> RankGroup:
        return worker.MeshRanks(self.adapter, config)

    def launch_plan(self, config: RunConfig, module: str, env: dict, nodes, cluster) -> LaunchPlan:
        return local_device_plan(config, module, env, nodes, cluster)

    def gpu_layout_refusal(self, strategy: str, ranks_here: int, nodes: int, gpu_count: int) -> str | None:
        return worker.gpu_refusal(ranks_here, gpu_count)


@register
class JaxAdapter(Adapter):
    name = "jax"
    display_name = "JAX"
    colour = "#2ca02c"
    oom_markers = ("resourceexhausted", "outofmemory", "memoryerror", "badalloc")  # RESOURCE_EXHAUSTED
    environment_variables = ("XLA_FLAGS", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                             "XLA_PYTHON_CLIENT_ALLOCATOR", "JAX_PLATFORMS", "JAX_ENABLE_X64",
                             "JAX_DEFAULT_MATMUL_PRECISION", "KERAS_BACKEND")
    engines = tuple(COMPILER_OPTIONS)
    engine_notes = {"jit_eigen": "every convolution through Eigen, YNNPACK off (XLA:CPU compile option "
                                 "xla_cpu_experimental_ynn_fusion_type empty; jit: XLA's default, most through "
                                 "YNNPACK)"}
    module = "jax"
    distribution = "jax"
    precisions = ("fp32", "tf32", "bf16")
    no_int8_because = ("JAX ships no post-training int8 quantisation, and XLA's CPU backend has no int8 convolution "
                       "path to lower one to (int8 libraries for JAX, such as AQT, target matmuls on TPUs and GPUs)")
    libraries = ("jaxlib", "keras")
    requires = ("keras",)  # the models are Keras 3's, run on its JAX backend
    distributed_runs = JaxDistributed

    def doctor(self) -> dict:
        return doctor.gpu_facts()

    def info(self) -> dict:
        import jax

        return {"version": jax.__version__, "backend": jax.default_backend(),
                "devices": [str(d) for d in jax.devices()]}

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):
        keras_backend.choose("jax")
        import jax
        import numpy as np

        model = build_keras_model(c.model, c.input_size, c.mode == "training")
        params = [v.value for v in model.trainable_variables]
        state = [v.value for v in model.non_trainable_variables]
        batch = synthetic_batch(c.model, c.batch_size, c.input_size, np.random.default_rng())
        x = jax.numpy.asarray(keras_batch(batch))
        y = jax.numpy.asarray(np.random.randint(0, get_model(c.model).num_classes, c.batch_size))

        jit = functools.partial(jax.jit, compiler_options=compiler_options(c.engine) or None)

        @jit
        def infer(params, state, x):
            return model.stateless_call(params, state, x, training=False)[0]

        @jit
        def train(params, state, velocity, x, y):
            def loss(params):
                logits, new_state = model.stateless_call(params, state, x, training=True)
                onehot = jax.nn.one_hot(y, logits.shape[-1])
                return -(onehot * jax.nn.log_softmax(logits)).sum(-1).mean(), new_state
            (_, new_state), grads = jax.value_and_grad(loss, has_aux=True)(params)
            velocity = [MOMENTUM * v + g for v, g in zip(velocity, grads)]
            return [p - LEARNING_RATE * v for p, v in zip(params, velocity)], new_state, velocity

        if c.mode == "inference":
            return lambda: infer(params, state, x).block_until_ready()
        carry = [params, state, [jax.numpy.zeros_like(p) for p in params]]

        def step():
            carry[:] = train(*carry, x, y)
            jax.block_until_ready(carry[0])

        return step

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        return JaxWorkload(config)
