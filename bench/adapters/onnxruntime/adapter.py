"""ONNX Runtime adapter (inference): the PyTorch model exported to ONNX, run by ORT's CPU provider (CUDA
provider where installed). Engines are ORT's graph-optimisation levels. Caffe2's deployment role lives on
as PyTorch's ONNX path, and this is it."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ...host.devices import is_gpu
from ...models import family_of
from ...models.inputs import layout, synthetic_batch
from ..base import Adapter, InferenceRuntimeWorkload, Workload, register
from ..onnx_export import export_onnx, input_name
from ..precision import INT8
from . import doctor, quantize

if TYPE_CHECKING:
    from ...config import RunConfig

LEVELS = {"all": "ORT_ENABLE_ALL", "extended": "ORT_ENABLE_EXTENDED", "basic": "ORT_ENABLE_BASIC",
          "disabled": "ORT_DISABLE_ALL"}


SPINNING = "session.intra_op.allow_spinning"


def session_options(ort, engine: str, threads: int):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry(SPINNING, "1")  # ORT's default, given explicitly so that the record can say it
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[engine])
    return so


def provider_options(device: str, precision: str) -> dict:
    """The execution provider's options for a run: on a GPU its device and TF32 off unless the run asks for tf32 (the
    CUDA provider enables TF32 by default, while PyTorch, TensorFlow and JAX are held to strict fp32); on the CPU
    none. ONNX Runtime takes provider options as strings."""
    if not is_gpu(device):
        return {}
    return {"device_id": str(int(device.split(":")[1])), "use_tf32": "1" if precision == "tf32" else "0"}


def checked_tf32(session, provider: str, options: dict) -> str | None:
    """The TF32 setting the session reports for its CUDA provider (read back, not assumed); an error where it is not
    the one asked for (an fp32 run computing in TF32 is not like for like)."""
    if provider != "CUDAExecutionProvider":
        return None
    got = str(session.get_provider_options().get(provider, {}).get("use_tf32", "1"))
    if got != options["use_tf32"]:
        raise RuntimeError(f"onnxruntime: the CUDA provider reports use_tf32={got}, not the {options['use_tf32']} "
                           "this run asked for")
    return got


def open_session(ort, path, so, provider: str, options: dict):
    """An InferenceSession on `provider`, or an error saying it did not load. The CUDA provider library
    (onnxruntime-gpu) has no RUNPATH to the CUDA 13 and cuDNN wheels it needs: it finds them only where another library
    (torch) loaded them first, else ORT falls back to the CPU without raising. `preload_dlls` loads them from the
    nvidia-* wheels first, and the session's first provider is checked, so a CPU fallback is never timed as a GPU."""
    if provider != "CPUExecutionProvider" and hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    session = ort.InferenceSession(str(path), so, providers=[(provider, options)])
    if session.get_providers()[0] != provider:
        raise RuntimeError(f"onnxruntime: the session runs on {session.get_providers()[0]}, not {provider} "
                           f"(the provider did not load: its CUDA/cuDNN libraries were not found)")
    return session


def optimised_attention(path: str) -> dict:
    """How ONNX Runtime runs a transformer's attention, read from the graph its optimiser wrote: fused
    (com.microsoft Attention / MultiHeadAttention nodes) or MatMul and Softmax nodes as exported."""
    import onnx

    ops = Counter(node.op_type for node in onnx.load(path, load_external_data=False).graph.node)
    fused = ops["Attention"] + ops["MultiHeadAttention"]
    counted = {k: ops[k] for k in ("Attention", "MultiHeadAttention", "MatMul", "FusedMatMul", "Softmax")}
    return {"implementation": "ONNX Runtime's graph optimiser on the exported graph", "fused": fused > 0,
            "evidence": "optimised graph: " + ", ".join(f"{k} {v}" for k, v in counted.items())}


class ORTWorkload(InferenceRuntimeWorkload):
    def __init__(self, config: RunConfig) -> None:
        import onnxruntime as ort

        self.config = config
        exported = export_onnx(config.model, config.batch_size, config.input_size, config.seed, config.threads)
        self.input = input_name(config.model)
        self.params = exported.params
        self.compile_caches = {"onnx_export": exported.cache} if exported.cache else {}
        self.gpu = is_gpu(config.device)
        provider = "CUDAExecutionProvider" if self.gpu else "CPUExecutionProvider"
        options = provider_options(config.device, config.precision)
        so = session_options(ort, config.engine, config.threads)
        path = exported.path
        if config.precision == INT8:  # the int8 graph of the same export, calibrated here (bench/adapters/int8.py)
            model = {"model": config.model, "seed": config.seed, "input_size": config.input_size}
            path, self.quantised = quantize.quantise(path, model, config.batch_size, lambda p: (
                open_session(ort, p, so, provider, options)))
        attention, scratch = None, None
        if family_of(config.model).attention:  # the optimised graph ORT runs, written to a folder of its own
            scratch = tempfile.TemporaryDirectory(prefix="bench-ort-optimised-")
            so.optimized_model_filepath = str(Path(scratch.name) / "optimised.onnx")
        self.session = open_session(ort, path, so, provider, options)
        use_tf32 = checked_tf32(self.session, provider, options)
        if scratch is not None:
            attention = optimised_attention(so.optimized_model_filepath)
            scratch.cleanup()
        exported.folder.cleanup()  # the session holds the model; the file is no longer needed
        self.host_x = exported.x
        self._open_feed()
        self.binding = None
        if self.gpu and config.data == "device":  # the batch stays on the GPU: bind it once
            self.binding = self.session.io_binding()
            self.bound_x = ort.OrtValue.ortvalue_from_numpy(self.host_x, "cuda", int(options["device_id"]))
            self.binding.bind_ortvalue_input(self.input, self.bound_x)
            self.binding.bind_output(self.session.get_outputs()[0].name, "cuda", int(options["device_id"]))
        self.settings = {
            "intra_op_threads": so.intra_op_num_threads,  # ORT has no read-back: the value it was given
            "inter_op_threads": so.inter_op_num_threads,
            # whether its intra-op threads spin waiting for work (set to ORT's default, on, so that it is said)
            "intra_op_spinning": so.get_session_config_entry(SPINNING) == "1",
            "layout": layout(config.model, "NCHW (the exported PyTorch graph)", "int64"),
            "engine": f"graph_optimization_level={LEVELS[config.engine]}",
            "providers": self.session.get_providers(),
            **({"cuda_use_tf32": use_tf32} if use_tf32 is not None else {}),  # read back from the session
            "export": exported.method,
            "data_placement": config.data,
            "inside_timer": self._inside_timer("InferenceSession.run on the batch"
                                               + (" (bound on the GPU)" if self.binding else "")),
            "autograd_in_inference": False,  # an inference-only runtime: no gradient graph exists
            "optimizer": None, "loss": None, "timer": "time.perf_counter",
        }
        if self.quantised is not None:
            self.settings["int8"] = self.quantised.describe()
        if attention is not None:
            self.settings["attention"] = attention

    def _input(self):
        return self.bound_x if self.binding is not None else super()._input()

    def _location(self, batch) -> str:
        if self.binding is None:
            return super()._location(batch)
        return "cpu" if batch.device_name().lower() == "cpu" else "gpu"  # the OrtValue bound on the device

    def step(self) -> None:
        x = self._input()
        if self.binding is not None:
            self.session.run_with_iobinding(self.binding)
        else:
            self.session.run(None, {self.input: x})

    def logits(self, x):
        return self.session.run(None, {self.input: x})[0]


@register
class ORTAdapter(Adapter):
    name = "onnxruntime"
    display_name = "ONNX Runtime"
    colour = "#9467bd"
    aliases = ("ort",)
    oom_markers = ("failedtoallocate", "badalloc", "memoryerror")  # "Failed to allocate memory", std::bad_alloc
    engines = tuple(LEVELS)
    module = "onnxruntime"
    distribution = "onnxruntime"
    other_distributions = ("onnxruntime-gpu",)  # the GPU build: the same `onnxruntime` module
    modes = ("inference",)
    precisions = ("fp32", "int8")
    libraries = ("onnx",)

    def doctor(self) -> dict:
        return doctor.gpu_facts()

    def info(self) -> dict:
        import onnxruntime as ort

        return {"version": ort.__version__, "providers": ort.get_available_providers(),
                "device": ort.get_device()}

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        reason = super().not_applicable(mode, precision, device)
        if reason or not is_gpu(device) or not self.version():
            return reason
        import onnxruntime as ort

        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return "onnxruntime: this build has no CUDAExecutionProvider (install onnxruntime-gpu)"
        return None

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):
        import numpy as np
        import onnxruntime as ort

        exported = export_onnx(c.model, c.batch_size, c.input_size, c.seed, c.threads)
        so = ort.SessionOptions()
        so.intra_op_num_threads = c.threads
        session = ort.InferenceSession(str(exported.path), so, providers=["CPUExecutionProvider"])
        x = synthetic_batch(c.model, c.batch_size, c.input_size, np.random.default_rng())
        name = session.get_inputs()[0].name
        return lambda: session.run(None, {name: x})

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        return ORTWorkload(config)
