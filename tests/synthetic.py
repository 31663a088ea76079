"""Synthetic result records with known values, for statistics and report tests (no framework runs)."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np

from bench.adapters import ADAPTERS
from bench.config import RunConfig, make_config
from bench.results.record import (
    Distributed,
    Flag,
    Interference,
    Manifest,
    Memory,
    ModelInfo,
    Peak,
    Phases,
    Rank,
    Record,
    Samples,
    Startup,
    Summary,
)
from bench.results.store import write_record


@functools.lru_cache(maxsize=1)
def _manifest() -> Manifest:
    return Manifest.collect(ADAPTERS.get("null").info())  # this machine's, as a null run would record it


def _flags(flags: list[Flag | dict] | None) -> list[Flag]:
    return [f if isinstance(f, Flag) else Flag.from_json(f) for f in flags or []]


def _record(config: RunConfig, repeat: int = 0, ips: float = 10.0, jitter: float = 0.01, n: int = 12, seed: int = 0,
            flags: list[Flag | dict] | None = None, other_cpu_share: float = 0.0, created: str | None = None,
            host: str = "test-host", sweep_id: str | None = None, flops: float | None = None,
            peak: float | None = None) -> Record:
    batch_size = config.batch_size
    rng = np.random.default_rng(seed)
    lat = np.abs(batch_size / ips * (1 + jitter * rng.standard_normal(n)))
    r = Record.new(config, repeat=repeat, sweep={"id": sweep_id, "order_index": repeat} if sweep_id else None)
    r.host, r.flags = host, _flags(flags)
    r.created = created or f"2026-01-01T00:00:{repeat:02d}.{seed:06d}Z"
    r.interference = Interference(judged=True, other_cpu_share=other_cpu_share, steal_share=0.0)
    r.samples = Samples(warmup_s=[float(lat[0])], timed_s=[float(x) for x in lat], warmup_stop="fixed count",
                        timed_stop="fixed count")
    median = float(np.median(lat))
    r.summary = Summary(n=n, images_per_sec_median=batch_size / median,
                        images_per_sec_ci_low=batch_size / float(lat.max()),
                        images_per_sec_ci_high=batch_size / float(lat.min()),
                        latency_ms_median=median * 1e3, latency_ms_p50=median * 1e3,
                        latency_ms_p90=float(np.percentile(lat, 90)) * 1e3,
                        latency_ms_p99=float(np.percentile(lat, 99)) * 1e3, cv=float(lat.std(ddof=1) / lat.mean()))
    r.settings = {"note": "synthetic"}
    r.model = ModelInfo(params=1000, flops_per_image=flops)
    r.peak = Peak(flops_per_sec=peak) if peak else None
    r.utilisation = flops * r.summary.images_per_sec_median / peak if flops and peak else None
    r.memory = Memory(peak_bytes=1 << 28, kind="synthetic")
    r.startup = Startup(prepare_s=0.01, first_iteration_s=float(lat[0]))
    r.manifest = _manifest()
    r.duration_s = float(lat.sum())
    return r


def record(framework: str = "torch", model: str = "resnet50", mode: str = "inference", batch_size: int = 8,
           repeat: int = 0, ips: float = 10.0, jitter: float = 0.01, n: int = 12, seed: int = 0,
           flags: list[dict] | None = None, other_cpu_share: float = 0.0, created: str | None = None,
           host: str = "test-host", sweep_id: str | None = None, flops: float | None = None,
           peak: float | None = None, engine: str | None = None, precision: str = "fp32") -> dict:
    """A valid `ok` record of one process whose median throughput is about `ips` images/s (its JSON, which
    tests edit before writing it)."""
    config = make_config(framework=framework, model=model, mode=mode, batch_size=batch_size, protocol="seed",
                         image_size=32 if model == "tiny_cnn" else None, **({"engine": engine} if engine else {}),
                         **({"precision": precision} if precision != "fp32" else {}))
    return _record(config, repeat, ips, jitter, n, seed, flags, other_cpu_share, created, host, sweep_id, flops,
                   peak).to_json()


def write(records: list[dict], results: Path) -> Path:
    for r in records:
        write_record(r, results)
    return results


def dist_record(strategy: str, workers: int, step_ms: float, repeat: int = 0, framework: str = "torch",
                worker_batch: int = 16, comm_ms: float = 0.0, overlap: float | None = None,
                flags: list[dict] | None = None, accuracy: list[dict] | None = None, model: str = "resnet18",
                image_size: int = 32) -> dict:
    """A valid distributed `ok` record whose global step takes about `step_ms` (tiny jitter per repeat)."""
    config = make_config(framework=framework, model=model, mode="training", batch_size=worker_batch,
                         image_size=image_size, strategy=strategy, workers=workers, warmup=3, iterations=12)
    r = _record(config, repeat, ips=worker_batch * workers / (step_ms / 1e3), seed=repeat, flags=flags)
    step = step_ms * (1 + 0.01 * (repeat - 1))
    r.summary.images_per_sec_median = worker_batch * workers / (step / 1e3)
    r.summary.latency_ms_median = step
    phases = {"forward": step * 0.3, "backward": step * 0.5, "update": step * 0.1, "exposed_comm": comm_ms,
              "other": 0.0}
    r.phases = Phases(iterations=12, method="synthetic", median_ms=phases)
    r.distributed = Distributed(
        strategy=strategy, workers=workers, nodes=1, scaling="weak", worker_batch=worker_batch,
        global_batch=worker_batch * workers, link={"kind": "loopback", "fallback": None},
        ranks=[Rank(rank=i, role="worker", node=0, samples=worker_batch * 12, phases_median_ms=phases,
                    peak_rss_bytes=1 << 28) for i in range(workers)],
        overlap_share=overlap, grad_bytes=44_700_000, params=11_170_000, accuracy=accuracy, servers=[])
    return r.to_json()


# The default profile's single-process configs (profiles/quick.yaml): (framework, engine or None, model, mode, batch).
_DEFAULT_SHAPE = (
    [(fw, None, "resnet50", "inference", b) for fw in ("torch", "tensorflow") for b in (1, 4, 32)]
    + [(fw, None, "resnet50", "inference", 32) for fw in ("jax", "mxnet", "onnxruntime", "openvino")]
    + [(fw, None, "resnet50", "training", 4) for fw in ("torch", "tensorflow", "jax", "mxnet")]
    + [(fw, None, "vgg16", "inference", 4) for fw in ("torch", "tensorflow")]
    + [(fw, e, "resnet50", "inference", 32) for fw in ("torch", "tensorflow", "mxnet", "onnxruntime", "openvino")
       for e in ADAPTERS.get(fw).engines[1:]])


def default_profile_records(disturbed_every: int = 0, repeats: int = 3) -> list[dict]:
    """Records shaped like the default profile's sweep (every framework, engine, model, mode and batch of
    profiles/quick.yaml, `repeats` processes each, plus its distributed section), with plausible throughputs.
    Every `disturbed_every`-th process (0: none) is disturbed, as on a busy machine."""
    out, k = [], 0
    speed = {"torch": 1.0, "tensorflow": 1.1, "jax": 0.9, "mxnet": 0.8, "onnxruntime": 1.3, "openvino": 1.4}
    for i, (fw, engine, model, mode, batch) in enumerate(_DEFAULT_SHAPE):
        base = speed[fw] * (10.0 if model == "resnet50" else 3.0) * (0.35 if mode == "training" else 1.0)
        base *= 1 - 0.3 / batch  # larger batches a little faster
        for rep in range(repeats):
            k += 1
            busy = bool(disturbed_every) and k % disturbed_every == 0
            out.append(record(framework=fw, engine=engine, model=model, mode=mode, batch_size=batch, repeat=rep,
                              seed=100 * i + rep, ips=base * (1 + 0.02 * rep), flops=4.1e9, peak=1.5e11,
                              other_cpu_share=0.45 if busy else 0.0,
                              flags=[{"name": "disturbed", "reason": "other processes used 45% of the CPUs"}]
                              if busy else None))
    for fw in ("torch", "tensorflow"):
        ps = "ps_sync" if fw == "torch" else "ps_async"
        for strategy, workers, step in (("independent", 1, 400.0), ("independent", 2, 700.0),
                                        ("allreduce", 2, 900.0), (ps, 2, 1100.0)):
            for rep in range(repeats):
                out.append(dist_record(strategy, workers, step, repeat=rep, framework=fw,
                                       comm_ms=0.0 if strategy == "independent" else 150.0))
    return out


def with_energy(rec: dict, images_per_joule: float | None, reason: str | None = None,
                meter: str = "RAPL package counters") -> dict:
    """`rec` (a record's JSON) with an energy reading of `images_per_joule` over its timed images, or, with None,
    energy not measured for `reason`."""
    if images_per_joule is None:
        return {**rec, "energy": {"available": False, "reason": reason}}
    images = rec["config"]["batch_size"] * len(rec["samples"]["timed_s"])
    if rec.get("distributed"):
        images = rec["distributed"]["global_batch"] * len(rec["samples"]["timed_s"])
    joules = images / images_per_joule
    return {**rec, "energy": {"available": True, "meter": meter, "joules": joules,
                              "joules_per_image": joules / images, "images_per_joule": images_per_joule}}


def config_key_of(config: dict) -> str:
    """The key of a record's config JSON edited in a test (as RunConfig.key hashes it)."""
    return hashlib.sha1(json.dumps({k: v for k, v in config.items() if k != "extra"}, sort_keys=True).encode()
                        ).hexdigest()[:16]


def on_gpus(rec: dict, gpu: str, gpus: int, interconnect: str, precision: str) -> dict:
    """A distributed record's JSON moved onto `gpus` GPUs named `gpu` (this machine has none to build such a config):
    its device, precision, hardware, ranks' devices and link, and a config key of its own."""
    config = {**rec["config"], "device": "cuda:0", "precision": precision}
    ranks = [{**r, "device": f"cuda:{r['rank'] % gpus}"} for r in rec["distributed"]["ranks"]]
    link = {**rec["distributed"]["link"], "gpus": gpus, "interconnect": interconnect}
    return {**rec, "config": config, "config_key": config_key_of(config), "hardware": gpu,
            "label": rec["label"].replace(" cpu ", " cuda:0 ").replace(" fp32 ", f" {precision} "),
            "distributed": {**rec["distributed"], "ranks": ranks, "link": link}}
