"""The memory allocator PyTorch's CPU processes start with, chosen by an interleaved A/B of fresh processes
(`bench noise --arm`, 16 a side, 2026-12-07; docs/methodology.md, "Where the noise comes from").

On a 2-core VM, ResNet-50 inference at batch 16: gperftools' tcmalloc preloaded, with PyTorch's own
THP_MEM_ALLOC_ENABLE=1, ran 1.31x [1.28-1.34] faster than glibc's malloc (medians and means alike), with processes
spread 1.5% instead of 4.1% and a within-process CV of 0.9% instead of 1.5%; glibc faulted in about 164,000 pages
per iteration (each step's large tensors mapped and unmapped again), tcmalloc about 360. Transparent huge pages
alone gained 1.15x but raised the within-process CV to 7.3%, and jemalloc with Intel's decay settings lost 0.68x:
neither is a default. The library is found by the dynamic loader's own search (`ldconfig -p`), so the name works on
any architecture; `make system-deps` installs it (Debian's libgoogle-perftools4).

Where it is missing, glibc's malloc is told to keep its memory instead (GLIBC_TUNABLES: no allocation by mmap, no
trimming of the heap), which removes the same mapping and unmapping: in a second A/B (16 a side, the same session, an
Intel Xeon VM) it ran 1.28x faster than glibc as it is (27.42 against 21.41 img/s, medians and means alike), with
processes spread 2.5% instead of 4.0%, a within-process CV of 1.3% instead of 1.7% and 1,715 page faults per
iteration instead of 149,632; tcmalloc with huge pages stays the first choice (glibc so tuned ran 0.94x [0.93-0.96]
of it).
"""

from __future__ import annotations

import ctypes.util
import functools

TCMALLOC = "tcmalloc"
# gperftools reports every allocation above this size on stderr (default 1 GiB): a large model's weights would fill
# a run's log, so the report threshold is set far above any allocation a benchmark makes
QUIET_LARGE_ALLOCATIONS = {"TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": str(1 << 40)}
# glibc's malloc keeping its memory: nothing allocated by mmap (so nothing unmapped after each step), the heap's top
# never given back (trim threshold 64 GiB)
GLIBC_KEEPS_MEMORY = {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"}


@functools.cache
def found(library: str = TCMALLOC) -> str | None:
    """The loader's name for the library ('libtcmalloc.so.4') where it finds one, else None (read once)."""
    return ctypes.util.find_library(library)


def torch_cpu_settings() -> dict[str, str]:
    """PyTorch's declared process settings: tcmalloc preloaded with its own huge pages on, or without tcmalloc glibc's
    malloc keeping its memory (huge pages alone raised the within-process spread: not a default)."""
    name = found(TCMALLOC)
    if not name:
        return dict(GLIBC_KEEPS_MEMORY)
    return {"LD_PRELOAD": name, "THP_MEM_ALLOC_ENABLE": "1", **QUIET_LARGE_ALLOCATIONS}
