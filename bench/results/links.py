"""The fitted links the network micro-benchmark cached per host (results/<host>/network.json, keyed by the link):
reading them needs no launcher, so a run's record can use the link its ranks talked over."""

from __future__ import annotations

import json
from pathlib import Path

from . import link_model as model
from .store import host_dir

NETWORK_FILE = "network.json"
# The link probe's two operations, as the network file keys them (collective benchmarks, not strategies), and how the
# report names them.
RING, P2P = "allreduce", "p2p"
OPERATIONS = {RING: "ring all-reduce", P2P: "point to point"}
# The message sizes the network micro-benchmark times (bench/runs/distributed/network.py), bytes.
SIZES = (1_024, 4_096, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 50_331_648)


def link_key(workers: int, nodes: int, gbit: float, delay_ms: float, cluster: str = "") -> str:
    """The link a run used: loopback, emulated nodes (rate, delay), or real machines (their `cluster` setting)."""
    if cluster:
        return f"{nodes} machines x{workers} {cluster}"
    if nodes == 1:
        return f"loopback x{workers}"
    return f"{nodes} nodes x{workers} {gbit:g}gbit {delay_ms:g}ms"


def read_cache(results_dir: Path, host: str | None = None) -> dict:
    path = host_dir(results_dir, host) / NETWORK_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def with_fits(entry: dict) -> dict:
    """The entry with alpha-beta fitted from its raw points (refitted on every read, so a better fit
    applies to links measured earlier)."""
    ar = model.fit_allreduce([p["bytes"] for p in entry["allreduce"]], [p["median_s"] for p in entry["allreduce"]],
                             entry["workers"])
    p2p = model.fit_p2p([p["bytes"] for p in entry["p2p"]], [p["median_s"] for p in entry["p2p"]])
    return {**entry, "fit_allreduce": {"alpha_s": ar.alpha_s, "bandwidth_Bps": ar.bandwidth_Bps, "r2": ar.r2},
            "fit_p2p": {"alpha_s": p2p.alpha_s, "bandwidth_Bps": p2p.bandwidth_Bps, "r2": p2p.r2},
            "fit_method": "slope: least squares over all sizes; latency: median excess over the slope among "
                          "latency-dominated messages (bandwidth term at most half their time)"}


def p2p_link(results_dir: Path | str, key: str) -> model.Link | None:
    """The point-to-point fit of the cached link `key` on this host (None: not measured here)."""
    entry = read_cache(Path(results_dir)).get(key)
    if not entry:
        return None
    fit = with_fits(entry)["fit_p2p"]
    return model.Link(fit["alpha_s"], fit["bandwidth_Bps"], fit["r2"], key)


def fitted(results_dir: Path | str, host: str | None = None) -> dict[str, dict]:
    """Every link measured on `host` (default: this one): key -> entry with its fits."""
    return {k: with_fits(e) for k, e in read_cache(Path(results_dir), host).items()}
