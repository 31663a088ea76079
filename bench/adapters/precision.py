"""Which reduced precisions a CPU can run natively (fp16 without hardware support is not measured)."""

from __future__ import annotations

from ..devices import is_gpu
from ..errors import UnsupportedError


def check_precision(framework: str, device: str, precision: str) -> None:
    """Raise UnsupportedError when `precision` has no native arithmetic on `device`."""
    if precision != "fp16" or is_gpu(device):
        return
    from ..manifest import cpu_flags

    if not {"avx512_fp16", "amx_fp16"} & set(cpu_flags()):
        raise UnsupportedError(
            f"{framework}: fp16 on this CPU would be emulated (no avx512_fp16/amx_fp16); "
            "use bf16 or fp32 on the CPU")
