"""What a sweep on this machine measures beside its runs: the device peaks its utilisations are a share of (at
its start and end), the links its distributed configs use, and the profile's largest-batch searches."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from ..adapters import ADAPTERS, measures_a_framework
from ..adapters.precision import has_gemm_peak
from ..errors import ConfigError
from ..host.manifest import mask_text
from ..measurement.peak import measure_peak, peak_key
from ..measurement.utilisation import peak_threads
from ..runs import maxbatch
from ..runs.distributed import network
from ..runs.distributed.cluster import resolve
from ..runs.distributed.launcher import LaunchError
from .profiles import Profile


def measure_peaks(profile: Profile, announce: Callable[[str], None] | None = None) -> dict[str, dict | None]:
    """The peak of every (device, precision, threads) the profile's framework runs are judged against. A peak that
    cannot be measured (the reference framework cannot reach a GPU, a precision its build lacks) is None, said once,
    and the sweep goes on: its runs then have no utilisation, and the other devices' runs are untouched."""
    keys = {(c.device, c.precision, peak_threads(c))
            for c in profile.configs if measures_a_framework(c.framework) and has_gemm_peak(c.precision)}
    out: dict[str, dict | None] = {}
    for k in sorted(keys):
        try:
            out[peak_key(*k)] = measure_peak(*k)
        except (RuntimeError, ConfigError, OSError) as exc:
            out[peak_key(*k)] = None
            (announce or _warn)(f"device peak {peak_key(*k)} not measured (its runs get no utilisation): "
                                f"{mask_text(str(exc)).splitlines()[0] if str(exc) else type(exc).__name__}")
    return out


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


def measure_networks(profile: Profile, results_dir: Path, force: bool,
                     announce: Callable[[str], None]) -> list[str]:
    """Fit alpha-beta for every link the profile's distributed configs use (cached per host)."""

    links = sorted({(c.workers, c.nodes, c.link_gbit, c.link_delay_ms, c.cluster) for c in profile.configs
                    if c.distributed and c.workers > 1}, key=str)
    examples = {(c.workers, c.nodes, c.cluster): c for c in profile.configs if c.cluster}
    done = []
    for workers, nodes, gbit, delay, cluster in links:
        try:  # real machines: every machine's sweep measures their link together (node 0 stores it)
            machines = resolve(examples[workers, nodes, cluster], env=os.environ) if cluster else None
            entry = network.measure(results_dir, workers, nodes, gbit, delay, force=force, machines=machines)
            done += [entry["key"]] if entry else []
        except (LaunchError, ConfigError, OSError) as exc:  # the model is extra: say so, go on
            announce(f"network micro-benchmark for {network.link_key(workers, nodes, gbit, delay, cluster)} "
                     f"failed: {mask_text(str(exc))}")
    return done


def measure_memory(profile: Profile, results_dir: Path, announce: Callable[[str], None]) -> list[str]:
    """The profile's largest-batch searches (bench/runs/maxbatch.py), each stored once per host and reused."""

    done = []
    for config, cap, max_batch in profile.memory_searches:
        cap = cap or maxbatch.default_cap_bytes(config.device)
        what = f"{config.framework}/{config.engine} {config.model} {config.mode} {config.precision} {config.device}"
        reason = ADAPTERS.get(config.framework).cannot_run(config.mode, config.precision, config.device, config.model)
        if reason:  # what a run would skip (the profile already left out what the framework cannot do)
            announce(f"largest batch for {what}: skipped ({reason})")
            continue
        announce(f"largest batch for {what} ({maxbatch.cap_text(cap)}, at most {max_batch})")
        try:
            found = maxbatch.execute(config, results_dir, cap, max_batch)
        except (OSError, ValueError) as exc:  # an extra section: say so and go on (nothing is stored for it)
            announce(f"  largest batch for {what} failed: {mask_text(str(exc))}")
            continue
        announce(f"  largest batch {found['largest_batch']} (limited by {found['limited_by']}), "
                 f"{len(found['probes'])} probes in {found['seconds']:.0f} s")
        done.append(what)
    return done
