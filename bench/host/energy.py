"""Energy per run from the CPU package power meter (Linux RAPL powercap), when the machine exposes one."""

from __future__ import annotations

from pathlib import Path

RAPL = Path("/sys/class/powercap")


def _counters() -> list[Path]:
    return sorted(p for p in RAPL.glob("intel-rapl:*/energy_uj") if p.parent.name.count(":") == 1)


class EnergyMeter:
    """Reads package energy counters around a block; `result()` says why when nothing is readable."""

    def __init__(self) -> None:
        self.paths = [p for p in _counters() if _readable(p)]
        self.start: list[int] = []
        self.end: list[int] = []

    def __enter__(self) -> EnergyMeter:
        self.start = [int(p.read_text()) for p in self.paths]
        return self

    def __exit__(self, *exc) -> None:
        self.end = [int(p.read_text()) for p in self.paths]

    def result(self, images: int) -> dict:
        if not self.paths:
            return {"available": False, "reason": "no readable RAPL power meter (/sys/class/powercap)"}
        ranges = [int((p.parent / "max_energy_range_uj").read_text()) for p in self.paths]
        joules = sum(((e - s) % r) / 1e6 for s, e, r in zip(self.start, self.end, ranges))
        return {"available": True, "meter": "RAPL package counters", "joules": joules,
                "joules_per_image": joules / images if images else None}


def _readable(path: Path) -> bool:
    try:
        int(path.read_text())
        return True
    except (OSError, ValueError):
        return False
