"""Each environment (interpreter) that produced runs, per host: its runs, frameworks, machine and software."""

from __future__ import annotations

from collections import Counter
from pathlib import PurePath
from typing import TYPE_CHECKING

import pandas as pd

from ...adapters import ADAPTERS
from ...host.manifest import mask_text
from ..coverage import successful_runs_text
from ..hosts import doctor_said
from .base import Section, Table, Text, all_records, heading

INTRO = ("Each environment (interpreter) that produced runs, per host: its successful runs of every kind "
         "(single-process on synthetic data, on real files, distributed), counted as the methodology counts them, so "
         "the columns add up to its total; the frameworks they ran; and the machine and software its newest run "
         "recorded.")

if TYPE_CHECKING:
    from ...results.record import Record


def environment_name(interpreter: str | None) -> str:
    """'main', or the folder of a framework's own environment (declared by its adapter), from sys.prefix."""
    if not interpreter:
        return "not recorded"
    own = {a.environment for a in (ADAPTERS.get(n) for n in ADAPTERS) if a.environment}
    folder = PurePath(interpreter).name
    return folder if folder in own else "main"


def environment_folders(interpreters: list[str | None]) -> dict[str | None, str]:
    """Each interpreter (sys.prefix) as its folder ('.venv', 'mxnet-env'), not the absolute path of one machine's
    checkout; where two share a folder name (two checkouts), with as many parent folders as tell them apart. A home
    folder is masked first (it names its user)."""
    parts = {i: PurePath(mask_text(i)).parts if i else () for i in interpreters}
    shown: dict[str | None, str] = {}
    for i in interpreters:
        depth = 1
        while depth < len(parts[i]) and any(j != i and parts[j][-depth:] == parts[i][-depth:] for j in interpreters):
            depth += 1
        shown[i] = str(PurePath(*parts[i][-depth:])) if i else "not recorded"
    return shown


def environment_table(records: list[Record]) -> pd.DataFrame:
    """One column per host and environment (interpreter) that produced runs: the runs and frameworks it covers,
    and the machine and software of its newest record. A framework with an environment of its own (other
    library versions, other variables) is never described by another environment's values."""
    groups: dict[tuple[str, str | None], list[Record]] = {}
    for r in sorted(records, key=lambda r: r.created):
        if r.manifest is not None:
            groups.setdefault((r.host, r.manifest.interpreter), []).append(r)
    cols = {}
    folders = {host: environment_folders([i for h, i in groups if h == host]) for host, _ in groups}
    for (host, interpreter), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        m = rs[-1].manifest
        cpu = m.cpu
        # the report's one count of runs (bench/report/coverage.py): successful ones, split by kind
        frameworks = Counter(r.config.framework for r in rs if r.status == "ok")
        name = f"{host}: {environment_name(interpreter)}"
        shown = folders[host][interpreter]
        if name in cols:  # two main environments on one host (two checkouts): the interpreter tells them apart
            name += f" ({shown})"
        cols[name] = {
            "environment (interpreter)": shown,
            "runs": successful_runs_text(rs),
            "frameworks (runs)": ", ".join(f"{f} ({n})" for f, n in sorted(frameworks.items())),
            "CPU": cpu.model,
            "physical cores / logical CPUs": f"{cpu.physical_cores} / {cpu.logical_cpus}",
            "CPU flags (vector/matrix)": " ".join(cpu.flags),
            "memory (GiB)": f"{m.memory_bytes / 2**30:.1f}",
            "GPUs": ", ".join(f"{g.name} (driver {g.driver})" for g in m.gpus) or "none",
            "Python": m.python,
            "platform": m.platform,
            "CPU clock (advertised)": (f"{cpu.mhz_advertised:.0f} MHz" if isinstance(cpu.mhz_advertised, int | float)
                                       else cpu.mhz_advertised or "unknown"),
            "SMT / virtual machine": f"{cpu.smt} / {cpu.virtual_machine}",
            **{lib: version for lib, version in sorted(m.libraries.items())},
            "git commit": (m.git.commit or "unknown")[:12] + (" (dirty)" if m.git.dirty else ""),
            "recorded env vars": ", ".join(f"{k}={v}" for k, v in m.env.items()) or "none",
        }
    # Libraries one environment lacks stay blank in its column rather than borrowing another's version.
    return pd.DataFrame(cols).fillna("")


def doctor_blocks(results_dir) -> list[Text]:
    """What `bench doctor` found on each host where it ran (`make report` asks it first on a GPU host)."""
    return [Text(f"**`bench doctor` on {host}**: what each framework's environment can run there (its build, the CUDA "
                 f"libraries it loads, the GPUs it sees), the driver, NVML and the device peaks.\n\n```\n{text}\n```")
            for host, text in doctor_said(results_dir).items()]


def render(d) -> Section:
    return Section([heading("Environment", INTRO),
                    Table(environment_table(all_records(d)).reset_index(names="") if d.records else None,
                          "no results"),
                    *doctor_blocks(d.results_dir)])
