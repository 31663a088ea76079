"""Which reduced precisions a device can run natively (fp16 without hardware support is not measured)."""

from __future__ import annotations

from ..devices import is_gpu

# A reduced precision is measured on a CPU only where it has native arithmetic for it.
NATIVE_CPU_FLAGS = {"fp16": ("avx512_fp16", "amx_fp16"), "bf16": ("avx512_bf16", "amx_bf16")}


def precision_unsupported(framework: str, device: str, precision: str) -> str | None:
    """Why `precision` has no native arithmetic on `device` (None when it has)."""
    if precision not in NATIVE_CPU_FLAGS or is_gpu(device):
        return None
    from ..manifest import cpu_flags

    flags = NATIVE_CPU_FLAGS[precision]
    if not set(flags) & set(cpu_flags()):
        return (f"{framework}: {precision} on this CPU would be emulated (no {'/'.join(flags)}); "
                f"valid here: fp32")
    return None

