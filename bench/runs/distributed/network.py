"""Measure a link (loopback or emulated nodes) with the communication micro-benchmark and fit
alpha-beta; results are cached per host in results/<host>/network.json, keyed by the link."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

from ...adapters import reference_adapter
from ...config import make_config
from ...results import link_model as model
from ...results.links import NETWORK_FILE, SIZES, link_key, read_cache, with_fits
from ...results.store import host_dir
from ...strategies import ALL_REDUCE
from .cluster import Machines
from .run import NotLeadNode, launch, work_dir

WARMUP = 3
PROBE_PORT_OFFSET = 97  # the probe's rendezvous port on real machines: beside the run's, never the same store


def repeats(nbytes: int) -> int:
    """Timed repetitions per size: many for small messages (cheap, and noisy on shared cores)."""
    return 40 if nbytes <= model.SMALL_BYTES else 10


def measure(results_dir: Path | str, workers: int = 2, nodes: int = 1, gbit: float = 0.0,
            delay_ms: float = 0.0, force: bool = False, machines: Machines | None = None) -> dict | None:
    """The fitted link for this topology (measured now unless cached); raises LaunchError on failure.

    Between real `machines` every machine runs this at the same time (the probe's ranks span them) and is measured
    every time (no machine can know another's cache); node 0 stores the fit, the others return None."""
    results_dir = Path(results_dir)
    key = link_key(workers, nodes, gbit, delay_ms, machines.name if machines else "")
    cache = read_cache(results_dir)
    if key in cache and not force and not machines:
        return cache[key]
    probe = reference_adapter()
    real = {"cluster": machines.name if machines.source != "master" else ""} if machines else {}
    config = make_config(framework=probe.name, model="tiny_cnn", mode="training", strategy=ALL_REDUCE,
                         workers=workers, nodes=nodes, link_gbit=gbit, link_delay_ms=delay_ms, threads=1, **real)
    if machines:  # torchrun's static rendezvous beside the run's port: node 0 writes the probe's result
        config = dataclasses.replace(config, extra={**config.extra, "real_cluster": True})
        machines = dataclasses.replace(machines, rendezvous="static", port=machines.port + PROBE_PORT_OFFSET)
    try:
        with work_dir() as work:
            ranks, _, link, _, _ = launch(config, work, module=probe.distributed.link_probe_worker, cluster=machines,
                                          extra_spec={"sizes": list(SIZES), "repeats": [repeats(b) for b in SIZES],
                                                      "warmup": WARMUP})
    except NotLeadNode:
        return None
    r = ranks[0]
    entry = {"key": key, "workers": workers, "nodes": nodes, "gbit": gbit or None, "delay_ms": delay_ms or None,
             "link": link, "measured": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "backend": model.FIT_BACKEND,
             "method": f"{model.FIT_BACKEND} all_reduce and send/recv ping-pong between barriers, {WARMUP} warm-up + "
                       f"{repeats(SIZES[0])} timed per size up to {model.SMALL_BYTES >> 20} MB, "
                       f"{repeats(SIZES[-1])} above; median per size",
             "allreduce": r["allreduce"], "p2p": r["p2p"]}
    for point in entry["allreduce"] + entry["p2p"]:
        point.pop("samples_s", None)
    entry = with_fits(entry)
    cache = read_cache(results_dir)
    cache[key] = entry
    path = host_dir(results_dir) / NETWORK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(path)
    return entry

