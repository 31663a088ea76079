"""OpenVINO adapter (inference, CPU): the same exported ONNX graph as ONNX Runtime, compiled by OpenVINO's
CPU plugin. Engines are its performance hints; the thread count is read back from the compiled model."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ...models import family_of
from ...models.inputs import layout, synthetic_batch
from ..base import Adapter, InferenceRuntimeWorkload, Workload, register
from ..compile_cache import openvino_cache
from ..onnx_export import export_onnx
from ..precision import INT8
from . import quantize

if TYPE_CHECKING:
    from ...config import RunConfig

HINTS = {"latency": "LATENCY", "throughput": "THROUGHPUT"}
# int8: the quantised layers run in int8, the rest in f32 (as the fp32 run), not bf16 on a CPU that has it
_PRECISION = {"fp32": "f32", "bf16": "bf16", INT8: "f32"}


def compile_exported(path: str, engine: str, precision: str, threads: int, **options: str):
    import openvino as ov

    core = ov.Core()
    return core.compile_model(core.read_model(path), "CPU", {
        "PERFORMANCE_HINT": HINTS[engine], "INFERENCE_NUM_THREADS": threads,
        "INFERENCE_PRECISION_HINT": _PRECISION[precision], **options})


def runtime_attention(compiled) -> dict:
    """How the CPU plugin runs a transformer's attention, read from its runtime model's layers: a separate Softmax or
    MatMul layer left means attention is not fused; none left, it runs inside fused subgraphs (Snippets' MHA) or an
    SDPA node."""
    def kind(op) -> str:
        info = op.get_rt_info()
        return info["layerType"].astype(str) if "layerType" in info else op.get_type_name()

    layers = Counter(map(kind, compiled.get_runtime_model().get_ordered_ops()))
    softmax = layers["Softmax"] + layers["SoftMax"]
    counted = {k: layers[k] for k in ("ScaledDotProductAttention", "Subgraph", "MatMul", "Softmax")}
    return {"implementation": "OpenVINO CPU plugin on the exported graph", "fused": softmax == 0,
            "evidence": "runtime layers: " + ", ".join(f"{k} {v}" for k, v in counted.items())}


def _read_back(prop, name: str):
    """A compiled model's property as it reports it, or None where this device or version has none."""
    try:
        value = prop(name)
    except RuntimeError:
        return None
    return value if isinstance(value, bool | int | float) else str(value)


class OpenVINOWorkload(InferenceRuntimeWorkload):
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        exported = export_onnx(config.model, config.batch_size, config.input_size, config.seed, config.threads)
        self.params = exported.params
        path = str(exported.path)
        if config.precision == INT8:  # NNCF's int8 IR of the same export (bench/adapters/int8.py)
            model = {"model": config.model, "seed": config.seed, "input_size": config.input_size}
            quantised_path, self.quantised = quantize.quantise(exported.path, model, config.batch_size, lambda p: (
                compile_exported(p, config.engine, "fp32", config.threads)))
            path = str(quantised_path)
        cache_options, watch = openvino_cache()  # its compiled blob, keyed by OpenVINO by the model and the options
        self.compiled = compile_exported(path, config.engine, config.precision, config.threads, **cache_options)
        caches = {"onnx_export": exported.cache, "openvino": watch.outcome() if watch else None}
        self.compile_caches = {name: outcome for name, outcome in caches.items() if outcome}
        exported.folder.cleanup()
        self.request = self.compiled.create_infer_request()
        self.host_x = exported.x
        self._open_feed()
        prop = self.compiled.get_property
        self.settings = {
            "intra_op_threads": int(prop("INFERENCE_NUM_THREADS")),
            "streams": int(prop("NUM_STREAMS")),
            "cpu_pinning": _read_back(prop, "ENABLE_CPU_PINNING"),  # its threads bound to cores (default on)
            "layout": layout(config.model, "NCHW (the exported PyTorch graph)", "int64"),
            "engine": f"PERFORMANCE_HINT={HINTS[config.engine]}",
            "inference_precision": str(prop("INFERENCE_PRECISION_HINT")),
            "export": exported.method,
            "data_placement": config.data,
            "inside_timer": self._inside_timer("InferRequest.infer on the batch (synchronous)"),
            "autograd_in_inference": False,  # an inference-only runtime: no gradient graph exists
            "optimizer": None, "loss": None, "timer": "time.perf_counter",
        }
        if self.quantised is not None:
            self.settings["int8"] = self.quantised.describe()
        if family_of(config.model).attention:
            self.settings["attention"] = runtime_attention(self.compiled)

    def step(self) -> None:
        self.request.infer({0: self._input()})

    def logits(self, x):
        return self.request.infer({0: x})[0].copy()


@register
class OpenVINOAdapter(Adapter):
    name = "openvino"
    display_name = "OpenVINO"
    colour = "#17becf"
    oom_markers = ("cannotallocate", "badalloc", "memoryerror")  # "Cannot allocate memory", std::bad_alloc
    engines = tuple(HINTS)
    module = "openvino"
    distribution = "openvino"
    modes = ("inference",)
    precisions = ("fp32", "bf16", INT8)
    libraries = ("onnx",)
    engine_notes = {"throughput": "the harness sends one synchronous request per step, so the throughput hint's "
                                  "parallel streams are not all fed: this is the hint at one request in flight, "
                                  "not its multi-request use"}

    def info(self) -> dict:
        import openvino as ov

        return {"version": ov.get_version(), "devices": ov.Core().available_devices}

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        if device != "cpu":
            return f"openvino runs on the CPU here (its GPU plugin targets Intel GPUs), not {device}"
        return super().not_applicable(mode, precision, device)

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):
        import numpy as np
        import openvino as ov

        exported = export_onnx(c.model, c.batch_size, c.input_size, c.seed, c.threads)
        compiled = ov.Core().compile_model(str(exported.path), "CPU", {"INFERENCE_NUM_THREADS": c.threads})
        x = synthetic_batch(c.model, c.batch_size, c.input_size, np.random.default_rng())
        return lambda: compiled(x)

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        return OpenVINOWorkload(config)

    def gemm_label(self, device: str, precision: str) -> str | None:
        return "openvino MatMul (oneDNN)" if device == "cpu" and precision == "fp32" else None

    def gemm(self, device: str, precision: str, threads: int, n: int):
        import numpy as np
        import openvino as ov
        import openvino.opset13 as ops

        x = ops.parameter([n, n], np.float32)
        w = ops.constant(np.random.default_rng(1).standard_normal((n, n), dtype=np.float32))
        model = ov.Model([ops.matmul(x, w, False, False)], [x])
        compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                          "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        return lambda: request.infer({0: a})
