"""Which compute devices this machine has, found without importing any framework."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import psutil

# While a plan is made for other machines (a Slurm job's GPUs, not the login node's): the GPUs they will have.
_planned: list[tuple[dict[str, str], ...]] = []
PLANNED_GPU = "a GPU of the job"


def gpus() -> tuple[dict[str, str], ...]:
    """NVIDIA GPUs as this process's frameworks number them (empty when there is no driver or no GPU): nvidia-smi's
    list narrowed and renumbered by CUDA_VISIBLE_DEVICES, each with its NVML (nvidia-smi) index beside; inside
    `planned_gpus`, the GPUs planned for."""
    return _planned[-1] if _planned else smi_gpus()


@contextlib.contextmanager
def planned_gpus(count: int):
    """Plan for machines that will have `count` GPUs (of a model unknown here) instead of this one's: a scheduler
    gives a job GPUs numbered cuda:0 up, whatever the node it is sent to. Each run checks its device again there."""
    _planned.append(tuple({"index": str(i), "name": PLANNED_GPU, "driver": "", "memory": "", "nvml_index": str(i)}
                          for i in range(count)))
    try:
        yield
    finally:
        _planned.pop()


@functools.lru_cache(maxsize=1)
def smi_gpus() -> tuple[dict[str, str], ...]:
    """This machine's GPUs from nvidia-smi, as `gpus` describes them."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ()
    query = "--query-gpu=index,name,driver_version,memory.total,uuid"
    try:
        out = subprocess.run([exe, query, "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        migs = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20, check=True).stdout \
            if visible and "MIG-" in visible else ""
    except (OSError, subprocess.SubprocessError):
        return ()
    return visible_gpus(out, visible, os.environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST"), migs)


# CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi and NVML always in PCI bus order:
# the project sets PCI_BUS_ID for its processes (bench/__init__.py), so cuda:N and nvidia-smi's rows agree.
PCI_ORDER = "PCI_BUS_ID"


def visible_gpus(listing: str, visible: str | None, order: str = PCI_ORDER,
                 mig_listing: str = "") -> tuple[dict[str, str], ...]:
    """nvidia-smi's CSV rows (index, name, driver, memory, uuid) as CUDA numbers them under CUDA_VISIBLE_DEVICES
    `visible` (None: unset, every GPU): the listed GPUs (by index, UUID prefix or a MIG instance's UUID, found in
    `nvidia-smi -L`'s `mig_listing`) in the listed order, cuda:0 first; as CUDA does, the list ends at the first
    entry that names no GPU. Under CUDA's default order (`order` not PCI_BUS_ID) GPUs of different models are
    numbered fastest first, which nvidia-smi cannot tell: their NVML index is then unknown (None), never guessed."""
    rows = [[c.strip() for c in line.split(",")] for line in listing.strip().splitlines() if line]
    found = [dict(index=r[0], name=r[1], driver=r[2], memory=r[3], uuid=r[4]) for r in rows if len(r) == 5]
    migs = mig_instances(mig_listing, found)
    if visible is not None:
        chosen = []
        for item in (i.strip() for i in visible.split(",")):
            match = migs.get(item) if item.startswith("MIG-") else next(
                (g for g in found if item and (item == g["index"] or
                                               (item.startswith("GPU-") and g["uuid"].startswith(item)))), None)
            if match is None or match in chosen:
                break
            chosen.append(match)
        found = chosen
    known = order == PCI_ORDER or len({g["name"] for g in found}) <= 1
    # the UUID only matched the list: records keep the model, not the serial number of the part
    return tuple({**{k: v for k, v in g.items() if k != "uuid"}, "index": str(i),
                  "nvml_index": g["index"] if known else None} for i, g in enumerate(found))


def mig_instances(listing: str, found: list[dict]) -> dict[str, dict]:
    """MIG UUID -> the instance as a GPU row (its parent's, named with its profile, `mig` set), from `nvidia-smi -L`:
    'GPU 0: NVIDIA A100 ... (UUID: GPU-...)' then '  MIG 1g.10gb Device 0: (UUID: MIG-...)' lines."""
    out, parent = {}, None
    for line in listing.splitlines():
        gpu = re.match(r"GPU (\d+):", line.strip())
        if gpu:
            parent = next((g for g in found if g["index"] == gpu.group(1)), None)
        mig = re.match(r"MIG (\S+)\s+Device\s+\d+: \(UUID: (MIG-[^)]+)\)", line.strip())
        if mig and parent:
            out[mig.group(2)] = {**parent, "name": f"{parent['name']} MIG {mig.group(1)}", "mig": mig.group(1),
                                 "uuid": mig.group(2)}
    return out


def _row(device: str) -> dict:
    """This process's GPU row of `device` (cuda:N), or {} where none is listed."""
    return next((g for g in gpus() if g["index"] == device.split(":")[1]), {})


def nvml_index(device: str) -> int | None:
    """NVML's (and nvidia-smi's) number of the GPU a framework calls `device` (cuda:N): under CUDA_VISIBLE_DEVICES
    the two differ; None where it cannot be known (mixed models in CUDA's fastest-first order)."""
    index = _row(device).get("nvml_index", device.split(":")[1])
    return None if index is None else int(index)


def energy_refusal(device: str) -> str | None:
    """Why NVML cannot give `device`'s own energy: a MIG instance (the counter is the whole GPU's, every instance
    on it), or an NVML number that cannot be known; None where it can."""
    g = _row(device)
    if g.get("mig"):
        return f"{device} is a MIG instance ({g['mig']}): NVML's energy counter is the whole GPU's, not the instance's"
    if "nvml_index" in g and g["nvml_index"] is None:
        return (f"which NVML GPU is {device} is unknown: CUDA numbers these mixed GPUs fastest first "
                "(CUDA_DEVICE_ORDER is not PCI_BUS_ID), nvidia-smi in bus order")
    return None


@functools.lru_cache(maxsize=1)
def driver_cuda_version() -> str | None:
    """The newest CUDA the installed driver supports, from nvidia-smi's banner ("CUDA Version: 13.0"), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return m.group(1) if m else None


def default_threads() -> int:
    """Physical cores available to this process: the CPU thread count every framework gets."""
    physical = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    return max(1, min(physical, len(os.sched_getaffinity(0))))


def usable_cpus() -> int:
    """Logical CPUs this process may run on: how many processes can each have a core of their own."""
    return max(1, len(os.sched_getaffinity(0)))


def normalise_device(device: str) -> str:
    """'cpu' stays; 'cuda' becomes 'cuda:0'; anything else raises ValueError."""
    if device == "cpu":
        return device
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not m:
        raise ValueError(device)
    return f"cuda:{m.group(1) or 0}"


def is_gpu(device: str) -> bool:
    return device.startswith("cuda")


def device_label(device: str) -> str:
    """Human name of a device, used as the hardware column of the report."""
    if is_gpu(device):
        index = device.split(":")[1]
        for g in gpus():
            if g["index"] == index:
                return g["name"]
        return device
    return cpu_brand()


# A sweep reads the CPU's description once and hands it to its kernels here: py-cpuinfo takes about 1.5 s (it
# starts a process to run CPUID), once in every fresh process otherwise, and none of it is measurement.
CPU_INFO_ENV = "BENCH_CPU_INFO"


@functools.lru_cache(maxsize=1)
def cpu_info() -> dict:
    """py-cpuinfo's description of this CPU (read once per process, or passed down by the sweep)."""
    passed = os.environ.get(CPU_INFO_ENV)
    if passed:
        with contextlib.suppress(ValueError):  # a malformed value: read the CPU itself
            info = json.loads(passed)
            if isinstance(info, dict) and info:
                return info
    try:
        import cpuinfo
    except ImportError:  # a bare GPU image: the standard library reads what the manifest needs
        return proc_cpuinfo()
    return cpuinfo.get_cpu_info()


def proc_cpuinfo(path: str = "/proc/cpuinfo") -> dict:
    """The CPU's brand and flags from /proc/cpuinfo (Linux), in py-cpuinfo's keys, where py-cpuinfo is not installed:
    the manifest of every record needs them, and docs/gpus.md promises a run with the standard library, psutil, numpy
    and one framework."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path(path).read_text(errors="replace").splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() not in fields:
                fields[name.strip()] = value.strip()
    return {"brand_raw": fields.get("model name") or platform.processor() or "unknown CPU",
            "flags": (fields.get("flags") or fields.get("Features") or "").split(), "arch": platform.machine(),
            "source": "/proc/cpuinfo (py-cpuinfo is not installed)"}


def cpu_brand() -> str:
    return cpu_info().get("brand_raw") or platform.processor() or "unknown CPU"


def cpu_flags() -> list[str]:
    return list(cpu_info().get("flags", []))


def current_cpu_mhz() -> float | None:
    """The current clock of CPU 0 where the kernel exposes it (cpufreq, else /proc/cpuinfo; often neither in a VM)."""
    try:
        return int(Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").read_text()) / 1000
    except (OSError, ValueError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):  # the first CPU's line
                return float(line.split(":")[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


# Collective backends of a distributed run; "auto" picks NCCL when every rank has a GPU of its own, gloo on CPUs.
BACKENDS = ("auto", "gloo", "nccl")


def rank_placement(device: str, local_rank: int, ranks_here: int, gpu_count: int,
                   backend: str = "auto") -> tuple[str, str]:
    """(device, collective backend) of the rank `local_rank` of the `ranks_here` ranks on this machine.

    CPU ranks stay on the CPU over gloo. GPU ranks take one GPU each (`cuda:<local_rank>`, NCCL unless gloo is
    asked for) when the machine has as many GPUs as ranks; more ranks than GPUs share the configured GPU over gloo
    with CUDA tensors, asked for explicitly (the only multi-rank run a one-GPU machine has). ValueError, with the
    reason, for what cannot run: NCCL on CPUs, a GPU run without a GPU, NCCL with two ranks on one GPU."""
    if backend not in BACKENDS:
        raise ValueError(f"invalid backend {backend!r}; valid choices: {', '.join(BACKENDS)}")
    if not is_gpu(device):
        if backend == "nccl":
            raise ValueError("backend 'nccl' needs GPU ranks; CPU ranks use gloo: valid choices: auto, gloo")
        return device, "gloo"
    if gpu_count < 1:
        raise ValueError(f"device {device!r} asked for, but this machine has no GPU; valid choices: cpu")
    if ranks_here <= gpu_count:  # one GPU per rank, whatever index the config named: the rank's own
        return f"cuda:{local_rank}", "nccl" if backend == "auto" else backend
    if backend == "gloo":
        return device, "gloo"
    # NCCL keys its communicators by device: two ranks on one GPU fail at the first collective ("Duplicate GPU").
    raise ValueError(f"{ranks_here} ranks on this machine but it has {gpu_count} GPU(s): NCCL cannot run two ranks "
                     f"on one GPU; valid here: workers per machine 1 to {gpu_count}, or backend gloo to share "
                     f"{device} over gloo with CUDA tensors")


# nvidia-smi topo -m's link kinds between two GPUs, from the closest to the farthest
TOPOLOGY_LINKS = {"NV": "NVLink", "PIX": "PCIe (one switch)", "PXB": "PCIe (several switches)",
                  "PHB": "PCIe (host bridge)", "NODE": "PCIe (across host bridges in a NUMA node)",
                  "SYS": "PCIe + inter-socket link (SMP)"}


def interconnect_from_topology(matrix: str, indices: list[int]) -> str:
    """The link between the GPUs `indices` as `nvidia-smi topo -m` prints it ("NVLink", "PCIe (one switch)", ...):
    the farthest link of any pair, since a ring is as fast as its slowest hop. "unknown" when the matrix lacks them."""
    rows = {}
    for line in re.sub(r"\x1b\[[0-9;]*m", "", matrix).splitlines():
        cells = line.split()
        is_row = len(cells) > 1 and (cells[1] == "X" or cells[1].startswith(tuple(TOPOLOGY_LINKS)))
        if re.fullmatch(r"GPU\d+", cells[0] if cells else "") and is_row:  # not the header (GPU0 GPU1 ...)
            rows[int(cells[0][3:])] = cells[1:]
    kinds = []
    for a in indices:
        for b in indices:
            if a < b:
                cell = rows.get(a, [])[b] if b < len(rows.get(a, [])) else ""
                kind = next((k for k in TOPOLOGY_LINKS if cell.startswith(k)), None)
                if kind is None:
                    return "unknown"
                kinds.append(kind)
    order = list(TOPOLOGY_LINKS)
    worst = max(kinds, key=order.index)
    return TOPOLOGY_LINKS[worst]


def gpu_interconnect(indices: list[int]) -> str:
    """How the GPUs a run used talk to each other: "single GPU", or the link `nvidia-smi topo -m` reports."""
    indices = sorted({nvml_index(f"cuda:{i}") for i in indices})  # the topology matrix numbers GPUs as NVML does
    if len(indices) < 2:
        return "single GPU"
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "unknown (no nvidia-smi)"
    try:
        out = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown (nvidia-smi topo -m: {type(exc).__name__})"
    return interconnect_from_topology(out, indices)
