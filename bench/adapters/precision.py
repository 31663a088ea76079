"""Which reduced precisions a device can run natively (fp16 without hardware support is not measured), and where
int8 (static post-training quantisation, an inference path on the CPU) applies."""

from __future__ import annotations

from ..host.devices import cpu_flags, is_gpu

# A reduced precision is measured on a CPU only where it has native arithmetic for it.
NATIVE_CPU_FLAGS = {"fp16": ("avx512_fp16", "amx_fp16"), "bf16": ("avx512_bf16", "amx_bf16")}
INT8 = "int8"


def has_gemm_peak(precision: str) -> bool:
    """Whether a run at `precision` is judged against a measured GEMM peak: int8 is not (no framework here offers a
    comparable int8 matrix product, and an int8 engine's speed-up is the answer, not a utilisation)."""
    return precision != INT8


def int8_refusal(framework: str, precisions: tuple[str, ...], mode: str, device: str,
                 why_not: str | None = None) -> str | None:
    """Why a run of `framework` at int8 cannot be configured (None: it can): int8 is an inference path on the
    CPU, through the framework's own post-training quantisation, which some frameworks do not have (`why_not`)."""
    if INT8 not in precisions:
        why = f" ({why_not})" if why_not else ""
        return f"{framework} has no int8 path{why}; valid precisions for {framework}: {', '.join(precisions)}"
    if mode != "inference":
        return "int8 is post-training quantisation for inference; valid modes at int8: inference"
    if is_gpu(device):
        return f"{framework}: int8 is measured on the CPU here; valid devices at int8: cpu"
    return None


def precision_unsupported(framework: str, device: str, precision: str) -> str | None:
    """Why `precision` has no native arithmetic on `device` (None when it has)."""
    if precision == "tf32" and not is_gpu(device):
        return f"{framework}: tf32 is a GPU tensor-core mode (NVIDIA Ampere or newer); valid on a CPU: fp32"
    if precision not in NATIVE_CPU_FLAGS or is_gpu(device):
        return None
    flags = NATIVE_CPU_FLAGS[precision]
    if not set(flags) & set(cpu_flags()):
        return (f"{framework}: {precision} on this CPU would be emulated (no {'/'.join(flags)}); "
                f"valid here: fp32")
    return None


def tf32_unavailable(capability: tuple[int, int]) -> str | None:
    """tf32 needs tensor cores with TF32 (compute capability 8.0, Ampere, or newer)."""
    if tuple(capability) < (8, 0):
        major, minor = capability
        return f"tf32 needs an NVIDIA GPU of compute capability 8.0 or newer; this one is {major}.{minor}"
    return None

