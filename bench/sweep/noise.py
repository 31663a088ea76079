"""`bench noise`: how much a framework's speed moves between fresh processes on this machine, and what changes it.

Fresh processes of one small fixed config per framework run exactly as a sweep runs them (the benchmark notebook in a
fresh kernel, bench/sweep/task.py), interleaved across frameworks and arms in a new random order each round (RMIT,
Abedi & Brecht 2017), so a slow spell of the machine falls on every side alike. An arm is a set of environment
variables given to its kernels before any framework loads (a vendor's allocator or threading setting): with two
arms the command is an interleaved A/B test of that setting. Each arm's records go to a folder of their own, apart
from results/ (the report never reads them).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..adapters import ADAPTERS, process_environment
from ..config import RunConfig, make_config
from ..errors import ConfigError
from ..host.machine_state import machine_state
from ..results.record import Record
from ..results.store import atomic_write_json, host_dir, host_records
from ..stats.noise import arm_effect, decidable_ratio, spread, within
from ..stats.verdicts import DEFAULT_MARGIN
from .jupyter_kernels import kernel_environment
from .plan import Task
from .task import run_task

BASELINE = "plain"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
# The default profile's processes a config gets: its rounds, and at most this many with the extras (quick.yaml).
PROFILE_PROCESSES = (2, 6)
# The quick profile's settings for one process, so the noise measured is the sweep's own.
PROCESS_SETTINGS = dict(protocol="adaptive", warmup=20, iterations=10, time_budget_s=5.0, phase_iterations=0)


@dataclass(frozen=True)
class Arm:
    """A name and the environment variables its kernels start with (none: the baseline, the machine as it is)."""

    name: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name + (f" ({', '.join(f'{k}={v}' for k, v in self.env.items())})" if self.env else "")


def parse_arm(text: str) -> Arm:
    """'NAME:VAR=VALUE,VAR=VALUE' (or 'NAME' alone, no variables) -> Arm; a bad one names itself."""
    name, _, assignments = text.partition(":")
    if not _ARM_NAME.fullmatch(name):
        raise ConfigError(f"invalid --arm {text!r}: its name {name!r} must be letters, digits, '_', '.', '+' or '-'; "
                          "valid form: NAME or NAME:VAR=VALUE[,VAR=VALUE...]")
    env = {}
    # a comma starts the next variable only where VAR= follows: a value may hold commas (jemalloc's MALLOC_CONF)
    for part in filter(None, re.split(r",(?=[A-Za-z_][A-Za-z0-9_]*=)", assignments)):
        var, eq, value = part.partition("=")
        if not eq or not _VARIABLE.fullmatch(var):
            raise ConfigError(f"invalid --arm {text!r}: {part!r} is not VAR=VALUE; valid form: "
                              "NAME or NAME:VAR=VALUE[,VAR=VALUE...]")
        env[var] = value
    return Arm(name, env)


def arms_from(texts: Sequence[str]) -> list[Arm]:
    """The baseline first (unless an arm takes its name), then the arms given; names unique."""
    arms = [parse_arm(t) for t in texts]
    names = [a.name for a in arms]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ConfigError(f"invalid --arm: the name {duplicated[0]!r} is given twice; each arm needs its own name")
    return arms if BASELINE in names else [Arm(BASELINE), *arms]


def runnable(frameworks: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The frameworks to measure (asked for, or every framework here) and why each other one is left out."""
    known = [n for n in ADAPTERS if ADAPTERS.get(n).measures_a_framework]
    asked = list(frameworks) if frameworks else known
    bad = [f for f in asked if f not in known]
    if bad:
        raise ConfigError(f"invalid framework {bad[0]!r}; valid choices: {', '.join(known)}")
    left_out = {}
    for name in asked:
        reason = ADAPTERS.get(name).cannot_run("inference", "fp32", "cpu")
        if reason:
            left_out[name] = reason
    return [f for f in asked if f not in left_out], left_out


def configs(frameworks: Sequence[str], model: str, mode: str, batch_size: int) -> dict[str, RunConfig]:
    """One config per framework, at its default engine, on the CPU, with the quick profile's process settings."""
    out = {}
    for name in frameworks:
        reason = ADAPTERS.get(name).cannot_run(mode, "fp32", "cpu", model)
        if reason:
            raise ConfigError(f"invalid --frameworks: {name} cannot run {model} {mode} here: {reason}")
        out[name] = make_config(framework=name, model=model, mode=mode, batch_size=batch_size, device="cpu",
                                **PROCESS_SETTINGS)
    return out


def schedule(frameworks: Sequence[str], arms: Sequence[Arm], processes: int, seed: int) -> list[tuple[int, str, Arm]]:
    """(round, framework, arm) in the order they run: every pair once a round, in a new random order each round."""
    order = []
    for r in range(processes):
        pairs = [(f, a) for f in frameworks for a in arms]
        random.Random(f"{seed}:{r}").shuffle(pairs)
        order += [(r, f, a) for f, a in pairs]
    return order


def arm_dir(root: Path, arm: Arm) -> Path:
    return root / arm.name


def run(root: Path, frameworks: Sequence[str], arms: Sequence[Arm], processes: int, model: str, mode: str,
        batch_size: int, seed: int, progress=print) -> dict:
    """Run the schedule and return the summary (also written to root/noise.json)."""
    chosen = configs(frameworks, model, mode, batch_size)
    order = schedule(frameworks, arms, processes, seed)
    noise_id = "noise-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    state_before = machine_state()
    with kernel_environment(root / "kernels.log"):
        for i, (r, name, arm) in enumerate(order):
            info = {"id": noise_id, "profile": "noise", "order_index": i, "round": r, "planned_runs": len(order),
                    "order_seed": seed}
            with process_environment.environment(arm.env, mark=False):  # its kernel inherits the arm's variables
                run_task(Task(chosen[name], r, r), arm_dir(root, arm), info)
            latest = [x for x in host_records(arm_dir(root, arm), config_key=chosen[name].key) if x.repeat == r]
            rate = latest[-1].summary.images_per_sec_median if latest and latest[-1].ok else None
            progress(f"{i + 1:3d}/{len(order)}  round {r}  {name:12s} {arm.name:12s} "
                     + (f"{rate:8.2f}/s" if rate else (latest[-1].reason if latest else "no record")))
    summary = summarise(root, chosen, arms)
    summary.update(id=noise_id, seed=seed, processes=processes, machine_before=state_before,
                   machine_after=machine_state())
    write_summary(root, summary)
    return summary


def write_summary(root: Path, summary: dict) -> None:
    atomic_write_json(root / "noise.json", summary)


def _faults_per_iteration(record: Record) -> float | None:
    faults = record.interference.minor_faults if record.interference else None
    steps = len(record.samples.warmup_s) + len(record.samples.timed_s) if record.samples else 0
    return faults / steps if faults is not None and steps else None


def _side(records: Sequence[Record]) -> dict:
    """One framework and arm: per-process values and their spreads."""
    ok = [r for r in records if r.ok and r.summary]
    medians = [r.summary.images_per_sec_median for r in ok]
    means = [r.summary.images_per_sec_mean for r in ok if r.summary.images_per_sec_mean]
    cvs = [r.summary.cv for r in ok]
    faults = [f for f in map(_faults_per_iteration, ok) if f is not None]
    by_median, by_mean, inside = spread(medians), spread(means), within(cvs)
    steal = [r.interference.steal_share for r in ok if r.interference and r.interference.steal_share is not None]
    other = [r.interference.other_cpu_share for r in ok
             if r.interference and r.interference.other_cpu_share is not None]
    decidable = {n: decidable_ratio(by_median.sd_log, by_median.n - 1, n, DEFAULT_MARGIN) for n in PROFILE_PROCESSES}
    return {"processes": len(ok), "failed": len(records) - len(ok), "medians": medians, "means": means, "cvs": cvs,
            "median_rate": float(sorted(medians)[len(medians) // 2]) if medians else None,
            "between_medians": vars(by_median), "between_means": vars(by_mean), "within_cv": vars(inside),
            "faults_per_iteration": sorted(faults)[len(faults) // 2] if faults else None,
            "steal_max": max(steal, default=None), "other_cpu_max": max(other, default=None),
            "decidable_ratio": {str(k): v for k, v in decidable.items()},
            "sample_unit": ok[0].summary.sample_unit if ok else None}


def summarise(root: Path, chosen: dict[str, RunConfig], arms: Sequence[Arm]) -> dict:
    """Per framework and arm: the spreads; per framework and arm but the baseline: its effect on the baseline."""
    frameworks: dict[str, dict] = {}
    for name, config in chosen.items():
        sides = {a.name: _side(host_records(arm_dir(root, a), config_key=config.key)) for a in arms}
        base = sides[BASELINE]
        effects = {}
        for a in arms:
            if a.name == BASELINE:
                continue
            s = sides[a.name]
            effect = arm_effect(s["medians"], base["medians"], s["means"], base["means"], s["cvs"], base["cvs"])
            effects[a.name] = vars(effect) if effect else None
        frameworks[name] = {"config": config.label, "arms": sides, "effects": effects}
    declared = {name: ADAPTERS.get(name).process_environment for name in chosen}
    return {"arms": {a.name: a.env for a in arms}, "frameworks": frameworks,
            # what every arm starts with, as the sweep starts each framework (an arm's own variables win)
            "declared": {k: v for k, v in declared.items() if v},
            "margin": DEFAULT_MARGIN, "profile_processes": list(PROFILE_PROCESSES),
            "host_dir": str(host_dir(root))}
