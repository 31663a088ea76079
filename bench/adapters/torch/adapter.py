"""PyTorch adapter: torchvision models, channels_last, inference_mode, SGD-momentum training."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import UnsupportedError
from ...host.devices import is_gpu
from ...models import family_of, get_model
from ...models.inputs import layout, synthetic_batch
from ...models.transformers import attention_dropout, attention_shape
from ...ranks.stages import PIPELINE_CHUNKS, given_cut
from ..allocator import torch_cpu_settings
from ..base import LEARNING_RATE, MOMENTUM, OPTIMIZER, Adapter, Workload, dist_version, register, timed_phases
from ..compile_cache import configure_inductor
from ..distributed_runs import DistributedRuns
from ..launch import LaunchPlan
from ..precision import INT8, tf32_unavailable
from ..ranks import RankGroup
from . import doctor, launch, pipeline, pipeline_smoke, quantize, sandblaster, worker
from .models import build_torch_model

if TYPE_CHECKING:
    from ...config import RunConfig


def set_torch_threads(torch, threads: int) -> dict:
    """Set intra- and inter-op threads to `threads` and read back what took effect."""
    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != threads:
        with contextlib.suppress(RuntimeError):  # only settable before first parallel work
            torch.set_num_interop_threads(threads)
    return {"intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": torch.get_num_interop_threads()}


def select_gpu(torch, device, precision: str) -> None:
    """Make `device` the current GPU and set cuDNN for `precision`. Current: a CUDA event records on the current
    device's stream, so on cuda:N (N > 0) without this the clock would time GPU 0. Autotuned: cuDNN benchmarks its
    convolution algorithms for the shapes it meets (TensorFlow and XLA autotune by default, PyTorch does not). fp32
    means fp32: PyTorch's default lets cuDNN convolutions use TF32 tensor cores."""
    torch.cuda.set_device(device)
    if precision == "tf32":
        reason = tf32_unavailable(torch.cuda.get_device_capability(device))
        if reason:
            raise UnsupportedError(reason)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True


def sdpa_attention(torch, config: RunConfig, device, dtype) -> dict:
    """How a transformer runs its attention here (the record's `attention` section): nn.MultiheadAttention (in
    torchvision's ViT and in the encoder layers of our BERT) with need_weights=False calls
    scaled_dot_product_attention, whose backend torch picks per call for the shapes, dtype and device (asked here for
    the run's: torch._fused_sdp_choice, with the attention dropout the model trains with); in inference without
    autograd the module takes its fast path (its native kernels), whose attention is the same call."""
    from torch.nn.attention import SDPBackend

    heads, tokens, width = attention_shape(config.model, config.input_size)
    q = torch.empty(config.batch_size, heads, tokens, width, device=device, dtype=dtype)
    names = {int(getattr(SDPBackend, n)): n for n in dir(SDPBackend) if n.isupper()}
    training = config.mode == "training"
    dropout = attention_dropout(config.model, training)
    backend = names.get(int(torch._fused_sdp_choice(q, q, q, dropout_p=dropout)), "unknown")
    fast = not training and torch.backends.mha.get_fastpath_enabled()
    path = ", inference fast path (nn.MultiheadAttention's native kernels)" if fast else ""
    return {"implementation": "nn.MultiheadAttention (need_weights=False) -> "
                              "F.scaled_dot_product_attention" + path,
            "fused": backend not in ("MATH", "ERROR", "unknown"),
            "evidence": f"scaled_dot_product_attention backend for these shapes: {backend} (torch._fused_sdp_choice)"}


class TorchWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        import numpy as np
        import torch

        self.torch = torch
        self.config = config
        self.device = torch.device(config.device)
        self.gpu = is_gpu(config.device)
        threads = set_torch_threads(torch, config.threads)
        torch.manual_seed(config.seed)
        if self.gpu:
            select_gpu(torch, self.device, config.precision)
        # "eager" (the default, the faster layout for CNNs on oneDNN and tensor cores) keeps activations
        # channels_last; "eager_nchw" keeps PyTorch's contiguous NCHW (the best layout can differ per mode).
        fmt = self.fmt = torch.contiguous_format if config.engine == "eager_nchw" else torch.channels_last
        model = build_torch_model(config.model).to(self.device, memory_format=fmt)
        self.params = sum(p.numel() for p in model.parameters())
        self.training = config.mode == "training"
        model.train(self.training)
        self.module = model  # what trains: a strategy wraps it (`wrap`), the checksum reads its weights
        if config.precision == INT8:  # the pt2e int8 graph, compiled (bench/adapters/torch/quantize.py)
            self.model, self.quantised = quantize.quantise(model, config.batch_size, config.model, config.input_size,
                                                           fmt)
        else:
            self.model = self._engine(model)
        n, s = config.batch_size, config.image_size
        num_classes = get_model(config.model).num_classes
        rng = np.random.default_rng(config.data_seed)
        self.host_x = synthetic_batch(config.model, n, config.input_size, rng)
        self.x = self._placed(torch.from_numpy(self.host_x))
        self.y = torch.from_numpy(rng.integers(0, num_classes, n)).to(self.device)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config.precision)
        self.autocast = (lambda: torch.autocast(self.device.type, dtype=dtype)) if dtype else contextlib.nullcontext
        self.scaler = torch.amp.GradScaler(self.device.type) if config.precision == "fp16" else None
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.feed = None
        if config.data == "files":  # the framework's own DataLoader (lazily: torchvision's decoders)
            from .input_files import torch_feed

            self.feed = torch_feed(config.data_dir, config.data_images, n, s, pin=self.gpu, layout="NCHW")
        self.opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        self.settings = {
            **threads,
            "layout": layout(config.model, "NCHW logical, " + ("contiguous NCHW memory format"
                                                                if fmt == torch.contiguous_format
                                                                else "channels_last memory format")),
            "engine": config.engine,
            "data_placement": config.data,
            "inside_timer": self._inside_timer(),
            "autocast_dtype": str(dtype) if dtype else None,
            "tf32_tensor_cores": bool(self.gpu and torch.backends.cudnn.allow_tf32),
            "cudnn_benchmark": bool(self.gpu and torch.backends.cudnn.benchmark),
            "optimizer": OPTIMIZER if self.training else None,
            "loss": "CrossEntropyLoss" if self.training else None,
            "timer": "CUDA events" if self.gpu else "time.perf_counter",
        }
        if self.quantised is not None:
            self.settings["int8"] = self.quantised.describe()
        if family_of(config.model).attention:
            self.settings["attention"] = sdpa_attention(torch, config, self.device, dtype or torch.float32)
        if not self.training:
            with torch.inference_mode(), self.autocast():
                out = self.model(self.autograd_probe(model))
            self.settings["autograd_in_inference"] = bool(out.requires_grad)

    def autograd_probe(self, module):
        """The batch that shows whether inference builds a gradient graph: one image of the run's batch through an
        eager model (the answer does not depend on the batch size, and the whole batch cost a step before the loop,
        ~2 s for ResNet-50 at batch 32 here); the whole batch through a compiled one (Inductor, int8), which another
        shape would recompile for dynamic shapes: a different program from the one the loop times."""
        return self.x[:1] if self.model is module else self.x

    def _engine(self, module):
        """The module the forward calls: `module` itself, or compiled (engine "compile")."""
        if self.config.engine != "compile":
            return module
        watch = configure_inductor()  # Inductor compiles at the first step: its outcome is read after the loop
        self.compile_caches = {"inductor": watch.outcome} if watch else {}
        return self.torch.compile(module)

    def _inside_timer(self) -> str:
        h2d = {"host": "host->device copy of the batch + ",
               "files": "the DataLoader's next batch (decoded and augmented by its workers) + its copy to the "
                        "device + "}.get(self.config.data, "")
        if self.training:
            return h2d + "zero_grad + forward + cross-entropy + backward + SGD-momentum step"
        return h2d + "forward under torch.inference_mode()"

    def _input(self):
        if self.config.data == "device":
            return self.x
        if self.feed is not None:  # the batch and its labels, as read from the files
            x, y = self.feed.next()
            self.y = y.to(self.device, non_blocking=True)
            return x.to(self.device, non_blocking=True).contiguous(memory_format=self.fmt)
        # host-fed: a fresh copy of the NumPy batch into a device tensor, every iteration
        return self._placed(self.torch.tensor(self.host_x))

    def _placed(self, batch):
        """`batch` on the run's device, an image batch in the run's memory format (token ids have none)."""
        batch = batch.to(self.device)
        return batch.contiguous(memory_format=self.fmt) if batch.dim() == 4 else batch

    def _location(self, batch) -> str:
        return "cpu" if batch.device.type == "cpu" else "gpu"

    def logits(self, x):
        """The eager module's outputs in eval mode (a compiled engine would compile again for the check, before its
        own timing; int8: the quantised graph's)."""
        model = self.model if self.quantised is not None else self.module
        model.eval()  # a training run's model too: its dropout off, as the reference computes them
        try:
            return self._outputs(model, x, self.torch.no_grad)
        finally:
            model.train(self.training)

    def compiled_logits(self, x):
        """The compiled module's outputs, called as the timed loop calls it (inference_mode, autocast, the loop's
        layout); whether Dynamo compiled a frame again is read from its counters."""
        if self.training or self.model is self.module:
            return None
        from torch._dynamo.utils import counters

        frames = counters["frames"]["ok"]
        out = self._outputs(self.model, x, self.torch.inference_mode)
        return out, counters["frames"]["ok"] > frames

    def _outputs(self, model, x, grad_mode):
        batch = self._placed(self.torch.from_numpy(x))  # made outside inference_mode, as the loop's batch is: an
        with grad_mode(), self.autocast():  # inference tensor would fail Dynamo's guards and compile again
            out = model(batch)
        return out.float().cpu().numpy()

    def _forward(self, x):
        with self.autocast():
            out = self.model(x)
            return self.loss_fn(out, self.y) if self.training else out

    def _backward(self, loss) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def _update(self) -> None:
        if self.scaler:
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()

    def step(self) -> None:
        x = self._input()
        if not self.training:
            with self.torch.inference_mode():
                self._forward(x)
            return
        self.opt.zero_grad(set_to_none=True)
        self._backward(self._forward(x))
        self._update()

    # The training step's parts, for a distributed strategy that puts its communication between them
    # (bench/adapters/torch/worker.py); `step` above is the single-process step.
    def wrap(self, wrapper: Callable) -> None:
        """Train through `wrapper(module)` (a data-parallel wrapper such as DDP) from now on."""
        self.model = self._engine(wrapper(self.module))

    def zero_grad(self) -> None:
        """Zero the gradients in place: a strategy's gradients may be views of one flat buffer that must stay."""
        self.opt.zero_grad(set_to_none=False)

    def forward(self):
        """The batch (host-fed: its copy) through the model and the loss; returns the loss."""
        return self._forward(self._input())

    def backward(self, loss) -> None:
        self._backward(loss)

    def update(self) -> None:
        """The optimizer's step (a parameter-server strategy runs it on the server only)."""
        self._update()

    def sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize(self.device)

    def timed_iteration(self) -> float:
        if not self.gpu:
            return super().timed_iteration()
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        stream = cuda.current_stream(self.device)  # this run's GPU's stream, whichever device is current
        self.sync()
        start.record(stream)
        self.step()
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def phases(self, iterations: int, step_s=()) -> dict[str, list[float]]:
        state: dict = {}
        names, fns = [], []
        if self.config.data != "device":
            names.append("h2d" if self.config.data == "host" else "data")
            fns.append(lambda: state.update(x=self._input()))
        x = lambda: state.get("x", self.x)
        if not self.training:
            def fwd():
                with self.torch.inference_mode():
                    self._forward(x())
            return timed_phases(names + ["forward"], self.sync, fns + [fwd], iterations)

        def fwd():
            self.opt.zero_grad(set_to_none=True)
            state["loss"] = self._forward(x())

        names += ["forward", "backward", "update"]
        fns += [fwd, lambda: self._backward(state["loss"]), self._update]
        return timed_phases(names, self.sync, fns, iterations)

    def weights_checksum(self) -> float | None:
        if not self.training:
            return None
        with self.torch.no_grad():
            return float(sum(p.double().abs().sum() for p in self.module.parameters()))

    def reset_memory(self) -> None:
        if self.gpu:
            self.torch.cuda.reset_peak_memory_stats(self.device)

    def memory(self) -> dict:
        if not self.gpu:
            return super().memory()
        return {"peak_bytes": int(self.torch.cuda.max_memory_allocated(self.device)),
                "kind": "CUDA caching allocator peak (max_memory_allocated)"}


class TorchDistributed(DistributedRuns):
    """torchrun ranks over gloo or NCCL: data parallel (DDP), a parameter server, the pipeline schedules and
    Sandblaster; on real machines too."""

    strategies = ("independent", "allreduce", "allreduce_nosync", "ps_sync", *pipeline.SCHEDULES, sandblaster.STRATEGY)
    launch = launch.TORCHRUN
    rendezvous_kinds = ("static", "c10d")
    chooses_backend = True
    link_probe_worker = "bench.adapters.torch.netbench_worker"
    multi_machine = True
    bucketed_allreduce = True

    def pipeline_cut_refusal(self, config: RunConfig) -> str | None:
        try:
            given_cut(config.pipeline_cut, pipeline.unit_count(config.model), pipeline.stage_count(config))
        except ValueError as exc:
            return str(exc)
        return None

    def rank_group(self, config: RunConfig, spec: dict) -> RankGroup:
        if config.strategy in pipeline.SCHEDULES:
            return pipeline.PipelineRanks(self.adapter, config, spec)
        if config.strategy == sandblaster.STRATEGY:
            return sandblaster.SandblasterRanks(self.adapter, config, spec)
        return worker.TorchRanks(self.adapter, config, spec)

    def launch_plan(self, config: RunConfig, module: str, env: dict, nodes, cluster) -> LaunchPlan:
        return launch.launch_plan(config, module, env, nodes, cluster)

    def pipeline_smoke(self, config: RunConfig, cache_dir) -> dict | None:
        # over NCCL the schedules run as upstream tests them; over gloo only once their smoke test passed here
        if config.strategy not in PIPELINE_CHUNKS or is_gpu(config.device):
            return None
        return pipeline_smoke.cached(pipeline.SCHEDULES[config.strategy], f"torch {self.adapter.version()}", cache_dir)


@register
class TorchAdapter(Adapter):
    name = "torch"
    display_name = "PyTorch"
    colour = "#d62728"
    aliases = ("pytorch",)
    oom_markers = ("outofmemory", "memoryerror", "badalloc")  # torch.cuda.OutOfMemoryError, "CUDA out of memory"
    environment_variables = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "TORCHINDUCTOR_FREEZING",
                             "TORCHINDUCTOR_MAX_AUTOTUNE", "TORCH_CUDNN_V8_API_DISABLED", "THP_MEM_ALLOC_ENABLE")
    # tcmalloc and PyTorch's huge pages, where tcmalloc is installed: 1.31x, and a third of the spread between
    # processes, in an interleaved A/B (bench/adapters/allocator.py)
    process_environment = torch_cpu_settings()
    reference = True
    engines = ("eager", "compile", "eager_nchw")
    precisions = ("fp32", "tf32", "bf16", "fp16", INT8)
    module = "torch"
    distribution = "torch"
    libraries = ("torchvision",)
    requires = ("torchvision",)  # the catalogue's models
    distributed_runs = TorchDistributed

    def doctor(self) -> dict:
        return doctor.gpu_facts()

    def info(self) -> dict:
        import torch

        config = torch.__config__.show()
        keep = ("BLAS_INFO", "LAPACK_INFO", "CPU capability", "MKL", "oneDNN", "OpenMP", "CUDA Runtime", "CuDNN")
        return {
            "version": self.version() or torch.__version__,  # the wheel's version, as every record names it
            "build_version": torch.__version__,  # with its local part (+cu130): the build
            "torchvision": dist_version("torchvision"),
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "mkldnn_enabled": torch.backends.mkldnn.is_available(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "build_config": [ln.strip() for ln in config.splitlines() if any(k in ln for k in keep)],
        }

    has_hand_loop = True

    def hand_loop(self, c: RunConfig):
        import numpy as np
        import torch

        torch.set_num_threads(c.threads)
        model = build_torch_model(c.model).to(memory_format=torch.channels_last).train(c.mode == "training")
        x = torch.from_numpy(synthetic_batch(c.model, c.batch_size, c.input_size, np.random.default_rng(c.seed)))
        if x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, get_model(c.model).num_classes, (c.batch_size,))
        opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            if c.mode == "inference":
                with torch.inference_mode():
                    model(x)
            else:
                opt.zero_grad(set_to_none=True)
                loss_fn(model(x), y).backward()
                opt.step()

        return step

    def engines_for(self, mode: str, precision: str) -> tuple[str, ...]:
        # int8 runs the pt2e graph compiled by Inductor (eager would run its reference, dequantise-requantise ops)
        return ("compile",) if precision == INT8 else self.engines

    def not_applicable(self, mode: str, precision: str, device: str) -> str | None:
        if precision == "fp16" and mode == "training" and not is_gpu(device):
            return "torch: fp16 training with a gradient scaler needs a GPU"
        return super().not_applicable(mode, precision, device)

    def prepare(self, config: RunConfig) -> Workload:
        self.check_available()
        return TorchWorkload(config)

    def gemm_label(self, device: str, precision: str) -> str | None:
        return "torch.mm"

    def gemm(self, device: str, precision: str, threads: int, n: int):
        import torch

        torch.set_num_threads(threads)
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        if is_gpu(device):  # the same rule as the runs: fp32 strict, TF32 tensor cores only for "tf32"
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)

        def run() -> None:
            torch.mm(a, b)
            if is_gpu(device):
                torch.cuda.synchronize(device)
        return run

    def count_forward_flops(self, model: str, input_size: int) -> float | None:
        """Counted with FlopCounterMode on meta tensors (no memory, no arithmetic): 1 MAC = 2 FLOPs."""
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        family = family_of(model)
        with torch.device("meta"):
            net = build_torch_model(model).eval()
            x = torch.zeros(family.batch_shape(model, 1, input_size), dtype=torch.long if family.tokens else None)
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            net(x)
        return float(counter.get_total_flops())
