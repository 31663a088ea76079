"""MXNet 1.9.1 adapter (Gluon): a source system of the HKBU study. MXNet is retired and needs numpy 1.23.5,
so its runs execute in an environment and Jupyter kernel of their own (`make setup-mxnet`); the main
environment only starts that kernel. Engines: "hybrid" (hybridize: Gluon's cached symbolic graph, MXNet's
documented fast path) and "imperative" (NDArray eager)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from ...host.devices import is_gpu
from ...models import get_model
from ..base import LEARNING_RATE, MOMENTUM, OPTIMIZER, Adapter, Workload, register, subtractive_phases
from ..precision import INT8

if TYPE_CHECKING:
    from ...config import RunConfig


def _import_mxnet(threads: int):
    """MXNet reads its OpenMP pool size when it loads: set it first (the kernel has not imported it)."""
    import sys

    if "mxnet" in sys.modules and os.environ.get("OMP_NUM_THREADS") != str(threads):
        raise UnsupportedError(f"mxnet: already loaded with OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
                               f"{threads} threads need a fresh process")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
    import mxnet as mx

    return mx


def _trainable(net) -> list:
    return [p for p in net.collect_params().values() if p.grad_req != "null"]


def _build(mx, config: RunConfig):
    """The catalogue model, initialised (deferred shapes resolved by one forward) and holding the catalogue's seeded
    weights where it has them, on the context."""
    from .models import build_gluon_model, load_cnn_weights

    mx.random.seed(config.seed)
    ctx = mx.gpu(int(config.device.split(":")[1])) if is_gpu(config.device) else mx.cpu()
    net = build_gluon_model(config.model)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net(mx.nd.zeros((1, 3, config.image_size, config.image_size), ctx=ctx))
    if get_model(config.model).shared_weights:
        load_cnn_weights(mx, net, ctx)
    return net, ctx


class MXNetWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        import numpy as np

        mx = _import_mxnet(config.threads)
        self.mx, self.config = mx, config
        self.training = config.mode == "training"
        self.net, self.ctx = _build(mx, config)
        if config.engine == "hybrid":
            self.net.hybridize(static_alloc=True, static_shape=True)
        self.params = int(sum(p.data().size for p in _trainable(self.net)))
        if config.precision == INT8:  # the oneDNN int8 SymbolBlock of the same network (bench/adapters/int8.py)
            from .quantize import quantise

            self.net, self.quantised = quantise(mx, self.net, config.batch_size, config.image_size, self.ctx)
        n, s = config.batch_size, config.image_size
        rng = np.random.default_rng(config.seed)
        self.host_x = rng.standard_normal((n, 3, s, s), dtype=np.float32)
        self.x = mx.nd.array(self.host_x, ctx=self.ctx)
        self.y = mx.nd.array(rng.integers(0, get_model(config.model).num_classes, n), ctx=self.ctx)
        if config.data == "files":  # gluon.data over the image files (lazily: its own module)
            from .input_files import mxnet_feed

            self.feed = mxnet_feed(config)
        self.loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()  # per sample; Trainer.step(n) takes the mean
        self.trainer = mx.gluon.Trainer(self.net.collect_params(), "sgd",
                                        {"learning_rate": LEARNING_RATE, "momentum": MOMENTUM}) \
            if self.training else None
        self.out = None
        features = mx.runtime.Features()
        self.settings = {
            "intra_op_threads": int(os.environ["OMP_NUM_THREADS"]),
            "threads_how": "OMP_NUM_THREADS set before mxnet loads (MXNet has no read-back)",
            "layout": "NCHW (MXNet default)",
            "engine": ("hybridize(static_alloc, static_shape): cached symbolic graph" if config.engine == "hybrid"
                       else "imperative NDArray (no hybridize)")
            + (", int8 SymbolBlock of contrib.quantization" if config.precision == INT8 else ""),
            "onednn": features.is_enabled("MKLDNN"),
            "device": str(self.ctx),
            "data_placement": config.data,
            "inside_timer": self._inside_timer(),
            "optimizer": OPTIMIZER if self.training else None,
            "optimizer_form": "MXNet SGD: v = m v - lr g; w += v (the same iterates as torch's at a fixed lr)"
            if self.training else None,
            "loss": "SoftmaxCrossEntropyLoss (mean over the batch via Trainer.step(batch))" if self.training else None,
            "timer": "time.perf_counter after mx.nd.waitall",
            "autograd_in_inference": False if not self.training else None,  # no autograd.record() in inference
        }
        if self.quantised is not None:
            self.settings["int8"] = self.quantised.describe()

    def _inside_timer(self) -> str:
        h2d = {"host": "mx.nd.array of the batch + ",
               "files": "the gluon DataLoader's next batch (decoded and augmented by its workers) + its copy to the "
                        "context + "}.get(self.config.data, "")
        if self.training:
            return h2d + "autograd.record: forward + cross-entropy; backward; Trainer.step (SGD momentum)"
        return h2d + "forward in predict mode (no autograd.record)"

    def _input(self):
        if self.feed is not None:  # the batch and its labels as read from the files
            x, y = self.feed.next()
            self.y = y.astype("float32").as_in_context(self.ctx)
            return x.as_in_context(self.ctx)
        return self.x if self.config.data == "device" else self.mx.nd.array(self.host_x, ctx=self.ctx)

    def _location(self, batch) -> str:
        return "cpu" if batch.context.device_type == "cpu" else "gpu"

    def _forward_loss(self, x):
        with self.mx.autograd.record():
            return self.loss_fn(self.net(x), self.y)

    def step(self) -> None:
        x = self._input()
        if not self.training:
            self.out = self.net(x)
            return
        loss = self._forward_loss(x)
        loss.backward()
        self.trainer.step(self.config.batch_size)
        self.out = loss

    def sync(self) -> None:
        self.mx.nd.waitall()

    subtractive = True

    def phases(self, iterations: int, step_s=()) -> dict[str, list[float]]:
        if not self.training:
            return subtractive_phases(self.sync, iterations, forward=lambda: self.net(self.x))

        def forward_backward():
            self._forward_loss(self.x).backward()

        return subtractive_phases(self.sync, iterations, forward=lambda: self._forward_loss(self.x),
                                  forward_backward=forward_backward, step=self.step, step_s=step_s)

    def weights_checksum(self) -> float | None:
        if not self.training:
            return None
        return float(sum(p.data().abs().sum().asscalar() for p in _trainable(self.net)))

    def logits(self, x):
        """The network's outputs in predict mode (no autograd.record: BatchNorm's running statistics, no dropout)."""
        return self.net(self.mx.nd.array(x, ctx=self.ctx)).asnumpy()


@register
class MXNetAdapter(Adapter):
    name = "mxnet"
    display_name = "MXNet"
    colour = "#bcbd22"
    oom_markers = ("badalloc", "outofmemory", "memoryerror")  # std::bad_alloc, "cudaMalloc ... out of memory"
    environment_variables = ("MXNET_ENGINE_TYPE", "MXNET_CPU_WORKER_NTHREADS", "MXNET_SUBGRAPH_BACKEND")
    engines = ("hybrid", "imperative")
    module = "mxnet"
    distribution = "mxnet"
    # bf16 in 1.9 is an experimental AMP pass for oneDNN CPUs only; int8: contrib.quantization (quantize.py)
    precisions = ("fp32", INT8)
    refused_families = dict.fromkeys(("vit", "bert"), "MXNet has no maintained transformer (GluonNLP and the model "
                                                      "zoo ended with MXNet itself in 2023)")
    kernel = "bench-mxnet"
    environment = ".venv-mxnet"

    def engines_for(self, mode: str, precision: str) -> tuple[str, ...]:
        # int8 is a quantised symbolic graph: hybridized (imperative would be no quantised network at all)
        return ("hybrid",) if precision == INT8 else self.engines

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        if is_gpu(device):
            return "mxnet: the environment installs the CPU wheel (mxnet-cu* wheels stop at CUDA 11.2)"
        return super().not_applicable(mode, precision, device)

    def info(self) -> dict:
        import mxnet as mx

        features = mx.runtime.Features()
        return {"version": mx.__version__, "onednn": features.is_enabled("MKLDNN"),
                "openmp": features.is_enabled("OPENMP"), "blas": next(
                    (f for f in ("BLAS_MKL", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_APPLE") if features.is_enabled(f)), None)}

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):
        """The Gluon tutorial's loop: hybridized net, autograd.record, backward, trainer.step."""
        import numpy as np

        mx = _import_mxnet(c.threads)
        net, ctx = _build(mx, c)
        net.hybridize()
        x = mx.nd.array(np.random.standard_normal((c.batch_size, 3, c.image_size, c.image_size)), ctx=ctx)
        if c.mode == "inference":
            return lambda: net(x).wait_to_read()
        y = mx.nd.array(np.random.randint(0, get_model(c.model).num_classes, c.batch_size), ctx=ctx)
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LEARNING_RATE,
                                                                  "momentum": MOMENTUM})

        def step():
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(c.batch_size)
            mx.nd.waitall()

        return step

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        return MXNetWorkload(config)
