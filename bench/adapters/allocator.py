"""The memory allocator PyTorch's CPU processes start with, chosen by an interleaved A/B of fresh processes
(`bench noise --arm`, 16 a side, 2026-12-07; docs/methodology.md, "Where the noise comes from").

On a 2-core VM, ResNet-50 inference at batch 16: gperftools' tcmalloc preloaded, with PyTorch's own
THP_MEM_ALLOC_ENABLE=1, ran 1.31x [1.28-1.34] faster than glibc's malloc (medians and means alike), with processes
spread 1.5% instead of 4.1% and a within-process CV of 0.9% instead of 1.5%; glibc faulted in about 164,000 pages
per iteration (each step's large tensors mapped and unmapped again), tcmalloc about 360. Transparent huge pages
alone gained 1.15x but raised the within-process CV to 7.3%, and jemalloc with Intel's decay settings lost 0.68x:
neither is a default. The library is found by the dynamic loader's own search (`ldconfig -p`), so the name works on
any architecture; `make system-deps` installs it (Debian's libgoogle-perftools4). Where it is missing nothing is
declared, and the record says the allocator was left as it was.
"""

from __future__ import annotations

import ctypes.util
import functools

TCMALLOC = "tcmalloc"
# gperftools reports every allocation above this size on stderr (default 1 GiB): a large model's weights would fill
# a run's log, so the report threshold is set far above any allocation a benchmark makes
QUIET_LARGE_ALLOCATIONS = {"TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": str(1 << 40)}


@functools.cache
def found(library: str = TCMALLOC) -> str | None:
    """The loader's name for the library ('libtcmalloc.so.4') where it finds one, else None (read once)."""
    return ctypes.util.find_library(library)


def torch_cpu_settings() -> dict[str, str]:
    """PyTorch's declared process settings: tcmalloc preloaded with its own huge pages on, or {} without tcmalloc
    (huge pages alone raised the within-process spread: not a default)."""
    name = found(TCMALLOC)
    if not name:
        return {}
    return {"LD_PRELOAD": name, "THP_MEM_ALLOC_ENABLE": "1", **QUIET_LARGE_ALLOCATIONS}
