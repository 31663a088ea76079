"""A distributed run end to end: topology, launch of every rank, one record with a per-rank section."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path

import psutil

from ...adapters import ADAPTERS
from ...adapters.launch import EMULATED_NCCL, thread_env
from ...config import RunConfig
from ...errors import terminations_unwind
from ...host.devices import is_gpu
from ...host.interference import TreeSampler
from ...measurement.utilisation import apply_utilisation, utilisation
from ...paths import default_results_dir
from ...ranks.rankio import SPEC_ENV
from ...results.record import Manifest, ModelInfo, Record, SweepPlacement
from ...results.store import host_dir
from ..failures import describe_failure
from ..fill import fill
from . import pipeline, rank_main, sandblaster
from . import record as records
from .cluster import Machines, resolve
from .launcher import Launch, LaunchError
from .rank_loop import RankResult
from .topology import EmulationUnavailable, emulated_nodes, remove_stale, unavailable_reason

COLLECTIVE_TIMEOUT_S = 120  # a rank blocked this long in a collective fails (gloo / TF)
LAUNCH_TIMEOUT_S = 900  # the whole run, processes' start-up included


@contextlib.contextmanager
def topology(config: RunConfig, cluster: Machines | None = None):
    """Yield (nodes or None, link description); emulated nodes are always removed afterwards."""
    loopback = {"kind": "loopback", "gbit": None, "delay_ms": None, "fallback": None}
    if cluster:  # real machines: the network is what it is
        yield None, cluster.describe()
        return
    if config.nodes == 1:
        yield None, loopback
        return
    with contextlib.ExitStack() as stack:
        try:
            nodes = stack.enter_context(emulated_nodes(config.nodes, config.link_gbit, config.link_delay_ms))
        except EmulationUnavailable as exc:
            if config.link_delay_ms:  # a delay that is not there is no measurement of it: an error, never loopback
                raise
            yield None, {**loopback, "fallback": str(exc)}
            return
        yield nodes, {"kind": "emulated", "gbit": config.link_gbit or None,
                      "delay_ms": config.link_delay_ms or None, "fallback": None,
                      "namespaces": [n.netns for n in nodes], "addresses": [n.address for n in nodes],
                      "shaping": "tc tbf on each node's egress" if config.link_gbit else "none",
                      **({"nccl": EMULATED_NCCL} if is_gpu(config.device) else {})}


def _peak_rss(pid: int) -> int | None:
    """VmHWM of a live process (a server the launcher is about to stop)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class NotLeadNode(Exception):
    """This machine's ranks finished on a real cluster; node 0 assembles and writes the record."""


def launch(config: RunConfig, work: Path, module: str | None = None, extra_spec: dict | None = None,
           cluster: Machines | None = None) -> tuple[list[dict], list[dict], dict, dict, str]:
    """Run every rank of `config` (as `module`, default: the rank entry point, which runs its framework's rank); returns
    (rank results, servers, link, interference, launch kind)."""
    adapter = ADAPTERS.get(config.framework)
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps({"config": {k: v for k, v in config.to_dict().items() if k != "extra"},
                                     "out_dir": str(work), "timeout_s": COLLECTIVE_TIMEOUT_S,
                                     **(extra_spec or {})}))
    env = {SPEC_ENV: str(spec_path), **thread_env(config.threads)}
    servers: list[dict] = []
    with topology(config, cluster) as (nodes, link), TreeSampler() as sampler:
        plan = adapter.distributed.launch_plan(config, module or rank_main.__name__, env, nodes, cluster)
        tasks, kind = plan.tasks, plan.kind
        def read_servers(run: Launch) -> None:  # servers never exit by themselves: read them first
            servers.extend({"task": t.name, "peak_rss_bytes": _peak_rss(run.procs[t.name].pid)}
                           for t in tasks if t.daemon and t.name in run.procs)

        Launch(tasks, work / "logs", pipeline.hard_timeout_s(config, LAUNCH_TIMEOUT_S), before_stop=read_servers).run()
    ranks = [json.loads(p.read_text()) for p in sorted(work.glob("*.json")) if p.name != "spec.json"]
    if not ranks and cluster and (cluster.node_rank != 0 or cluster.rendezvous == "c10d"):
        lead = "the machine whose agent the c10d rendezvous made node 0" if cluster.rendezvous == "c10d" else "node 0"
        raise NotLeadNode(f"node {cluster.node_rank}'s ranks finished; {lead} writes the record")
    if not ranks:
        raise LaunchError("every process exited 0 but none wrote its result")
    ranks.sort(key=lambda r: (r["role"] != "chief", r["rank"]))
    windows = [r["window"] for r in ranks if r.get("window")]
    interference = sampler.result(min(w["start"] for w in windows), max(w["end"] for w in windows)) \
        if windows else {"judged": False, "note": "no timed window"}
    return ranks, servers, link, interference, kind


SCRATCH_PREFIX = "dlbench-dist-"


def remove_stale_scratch() -> list[str]:
    """Remove what launchers killed outright left (their scratch folders and namespaces carry their pid)."""
    stale = remove_stale() if unavailable_reason() is None else []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = folder.name.removeprefix(SCRATCH_PREFIX).split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)) and not os.environ.get("BENCH_KEEP_DIST"):
            shutil.rmtree(folder, ignore_errors=True)
            stale.append(str(folder))
    return stale


@contextlib.contextmanager
def work_dir():
    """Scratch folder for the spec, rank results and logs (kept when BENCH_KEEP_DIST is set); a killed launcher's
    are removed by the next run."""
    remove_stale_scratch()
    work = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        yield work
    finally:
        if not os.environ.get("BENCH_KEEP_DIST"):
            shutil.rmtree(work, ignore_errors=True)


def execute(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
            sweep: SweepPlacement | dict | None = None, cluster: Machines | None = None) -> Record:
    """Measure a distributed config; a failed rank becomes an `error` record (never raises for it).

    `cluster`: the real machines as this one sees them (bench/runs/distributed/cluster.py); for a config with a
    `cluster` setting it is resolved here when not given (Slurm's environment, or BENCH_NODE_RANK for a host list).
    Only the lead machine's record holds results (gathered from every machine's ranks); the others get a `skipped`
    record saying so (the CLI does not write it)."""
    results_dir = Path(results_dir or default_results_dir())
    started = time.perf_counter()
    record = Record.new(config, repeat, attempt, sweep)
    adapter = ADAPTERS.get(config.framework)
    reason = adapter.cannot_run(config.mode, config.precision, config.device, config.model)
    smoke = adapter.distributed.pipeline_smoke(config, host_dir(results_dir)) \
        if not reason and pipeline.is_pipeline(config) else None
    if smoke and not smoke["passed"]:  # a schedule that hung or failed its smoke test here is never run into a hang
        reason = (f"{config.strategy} refused on this {config.device}: its smoke test failed with "
                  f"{smoke.get('version', 'this version')} ({smoke['when']}): {smoke['reason']}")
    if reason:  # what no rank could run (a CPU-only build asked for GPUs): said before any process starts
        record.status, record.reason, record.duration_s = "skipped", reason, time.perf_counter() - started
        record.manifest = Manifest.collect({"version": adapter.version()})
        return record
    try:
        # The launcher owns the namespaces, the scratch folder and every rank: SIGTERM and SIGHUP unwind like Ctrl-C.
        with terminations_unwind(), work_dir() as work:
            if cluster is None and config.cluster:
                cluster = resolve(config, env=os.environ)
            results, servers, link, interference, kind = launch(config, work, cluster=cluster)
            ranks = [RankResult.from_json(r) for r in results]
            record.distributed = records.distributed_section(config, ranks, servers, link, kind)
            if pipeline.is_pipeline(config):
                record.distributed.pipeline = pipeline.section(config, ranks, results_dir)
                if smoke:
                    record.distributed.pipeline.smoke_test = smoke
            if config.strategy_of.batch_method_section:
                record.distributed.sandblaster = sandblaster.section(ranks)
            fill(record, config, records.measured(config, ranks, servers, interference),
                 lambda r: _utilisation(r, config, results_dir),
                 lambda r: records.distributed_flags(config, r.distributed.ranks, link["fallback"]))
    except NotLeadNode as exc:
        record.status, record.reason = "skipped", str(exc)
    except LaunchError as exc:
        record.status, record.reason = "error", f"distributed run failed: {exc}"
        record.traceback = traceback.format_exc()
    except Exception as exc:
        record.status, record.reason = "error", describe_failure(exc, config)
        record.traceback = traceback.format_exc()
    record.manifest = Manifest.collect({"version": ADAPTERS.get(config.framework).version()})
    record.duration_s = time.perf_counter() - started
    return record


def _utilisation(record: Record, config: RunConfig, results_dir: Path) -> None:
    """Share of the machine's measured peak (all workers' threads) that the whole run's training work used."""
    try:
        apply_utilisation(record, results_dir, config, record.distributed.params)
    except Exception as exc:  # utilisation is extra; its absence is said, never faked
        record.model = ModelInfo(flops_note=f"not computed: {type(exc).__name__}: {exc}")
        return
    gpu_utilisation(record)


def gpu_utilisation(record: Record) -> None:
    """GPU ranks, as single GPU runs: each rank's share of its GPU's measured peak (the record's peak is one GPU's),
    and the whole run's share of all its GPUs. CPU ranks share the machine's cores: the run's share stands alone."""
    gpus = {r.device for r in record.distributed.ranks if r.device and is_gpu(r.device)}
    flops, peak = record.model.flops_per_image, record.peak.flops_per_sec if record.peak else None
    if not gpus or not flops or not peak:
        return
    for rank in record.distributed.ranks:
        rank.utilisation = utilisation(flops, rank.images_per_sec, peak)
    if record.utilisation is not None:  # the GPUs of every machine (the link counts them by host and device)
        record.utilisation /= record.distributed.link.get("gpus") or len(gpus)
