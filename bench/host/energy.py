"""Energy over a timed loop: CPU package counters (Linux RAPL powercap) or NVIDIA GPUs' NVML energy counters."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .devices import energy_refusal, is_gpu, nvml_index

RAPL = Path("/sys/class/powercap")


def _counters() -> list[Path]:
    return sorted(p for p in RAPL.glob("intel-rapl:*/energy_uj") if p.parent.name.count(":") == 1)


def measured(meter: str, joules: float, images: int) -> dict:
    """An energy reading (an Energy section's fields): joules over the timed images, per image and images per joule
    (None where a count is zero: a counter that did not advance has no rate)."""
    return {"available": True, "meter": meter, "joules": joules,
            "joules_per_image": joules / images if images else None,
            "images_per_joule": images / joules if joules > 0 else None}


def not_measured(readings: list[dict]) -> str | None:
    """Why a set of readings gives no energy (None: every one was measured): each distinct reason, once."""
    reasons = dict.fromkeys(r.get("reason") or "no reason given" for r in readings if not r.get("available"))
    return "; ".join(reasons) or None


def total(readings: list[dict], images: int) -> dict:
    """One reading for a whole run from its processes' or GPUs' own (each of a different device, so they add up):
    unavailable, with every reason, if any of them is missing, since a partial sum would overstate images per
    joule."""
    if not readings:
        return {"available": False, "reason": "no rank measured energy"}
    reason = not_measured(readings)
    if reason:
        return {"available": False, "reason": reason}
    meters = "; ".join(dict.fromkeys(r["meter"] for r in readings))
    return measured(f"sum of {len(readings)} readings ({meters})", sum(r["joules"] for r in readings), images)


def rapl_unreadable_reason(found: list[Path], readable: list[Path]) -> str | None:
    """Why the CPU packages' energy cannot be read here (None: it can): no RAPL interface at all (typical of a virtual
    machine, whose hypervisor does not pass the counters through), or counters readable by root only (Linux made
    energy_uj root-only in 5.10 after the PLATYPUS power side channel, CVE-2020-8694)."""
    if readable:
        return None
    if not found:
        return f"no RAPL power meter ({RAPL} has no package counters: a virtual machine, or not an Intel/AMD CPU)"
    return (f"RAPL counters exist but are readable by root only ({found[0]}; Linux >= 5.10, CVE-2020-8694): "
            "run as root, or make them readable, to measure CPU energy")


class MarkedCounters:
    """What both meters share: counter readings at the measurement loop's marks (around each iteration), so a reading
    can span the timed iterations only, the warm-up being decided after the loop. A meter sets `reason` when it cannot
    read, and reads its counters with `_read`."""

    reason: str | None
    start: list[int]
    end: list[int]
    marks: list[list[int]]

    def _read(self) -> list[int]:
        raise NotImplementedError

    def mark(self) -> None:
        """Read the counters now (the measurement loop calls it around each iteration)."""
        if not self.reason:
            self.marks.append(self._read())

    def span(self, from_mark: int | None) -> tuple[list[int], list[int]]:
        """The counters at the start and end of what a reading covers: the block, or marks `from_mark` to the last."""
        if from_mark is None or not self.marks:
            return self.start, self.end
        return self.marks[from_mark], self.marks[-1]


class EnergyMeter(MarkedCounters):
    """Reads package energy counters around a block; `result()` says why when nothing is readable."""

    def __init__(self) -> None:
        found = _counters()
        self.paths = [p for p in found if _readable(p)]
        self.reason = rapl_unreadable_reason(found, self.paths)
        self.start: list[int] = []
        self.end: list[int] = []
        self.marks: list[list[int]] = []

    def _read(self) -> list[int]:
        return [int(p.read_text()) for p in self.paths]

    def __enter__(self) -> EnergyMeter:
        self.start = self._read()
        return self

    def __exit__(self, *exc) -> None:
        self.end = self._read()

    def result(self, images: int, from_mark: int | None = None) -> dict:
        """The energy of `images`: over the block, or from mark `from_mark` (the end of the warm-up) to the last."""
        if self.reason:
            return {"available": False, "reason": self.reason}
        ranges = [int((p.parent / "max_energy_range_uj").read_text()) for p in self.paths]
        start, end = self.span(from_mark)
        joules = sum(((e - s) % r) / 1e6 for s, e, r in zip(start, end, ranges))
        return measured("RAPL package counters", joules, images)


def _readable(path: Path) -> bool:
    try:
        int(path.read_text())
        return True
    except (OSError, ValueError):
        return False


class NvmlEnergyMeter(MarkedCounters):
    """Energy of the GPUs `indices` (NVML's numbering, nvidia-smi's) over a block, from NVML's total-energy counters
    (millijoules since the driver loaded; Volta or newer); `result()` says why when they cannot be read."""

    def __init__(self, indices: Sequence[int | None], refused: str | None = None) -> None:
        self.indices = list(indices)
        self.nvml, self.handles, self.reason = None, [], refused
        self.start: list[int] = []
        self.end: list[int] = []
        self.marks: list[list[int]] = []
        if refused:
            return
        if None in self.indices:
            self.reason = "the NVML number of a GPU is unknown (bench.host.devices.energy_refusal says why)"
            return
        if not self.indices:
            self.reason = "no GPU to measure"
            return
        try:  # lazily: pynvml (nvidia-ml-py) is only needed, and only installed, where there are GPUs
            import pynvml
        except ImportError:
            self.reason = "pynvml is not installed (pip install nvidia-ml-py): no NVML energy counters"
            return
        try:
            pynvml.nvmlInit()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in self.indices]
            for h in self.handles:  # older GPUs (before Volta) answer NotSupported: say so before the loop
                pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        except pynvml.NVMLError as exc:
            self.reason = f"NVML total energy not readable on GPU {self.indices}: {exc} (needs Volta or newer)"
            _shutdown(pynvml)
            return
        self.nvml = pynvml

    def _read(self) -> list[int]:
        return [int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self.handles]

    def __enter__(self) -> NvmlEnergyMeter:
        if self.nvml:
            self.start = self._read()
        return self

    def __exit__(self, *exc) -> None:
        if self.nvml:
            self.end = self._read()
            _shutdown(self.nvml)

    def result(self, images: int, from_mark: int | None = None) -> dict:
        """The energy of `images`: over the block, or from mark `from_mark` (the end of the warm-up) to the last."""
        if self.reason:
            return {"available": False, "reason": self.reason}
        start, end = self.span(from_mark)
        joules = sum(e - s for s, e in zip(start, end)) / 1e3
        return measured(f"NVML total energy, GPU {', '.join(map(str, self.indices))}", joules, images)


def _shutdown(pynvml) -> None:
    try:
        pynvml.nvmlShutdown()
    except pynvml.NVMLError:  # shutting down is tidying up: its failure changes no reading
        pass


def energy_meter(device: str) -> EnergyMeter | NvmlEnergyMeter:
    """The meter of a run on `device`: its GPU's NVML counter, or the CPU packages' RAPL counters."""
    if not is_gpu(device):
        return EnergyMeter()
    return NvmlEnergyMeter([nvml_index(device)], refused=energy_refusal(device))
