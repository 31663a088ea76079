"""The commands that measure or describe one thing: run, list, env, peak, flops, fidelity, maxbatch."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys

from ..adapters import ADAPTERS, reference_adapter
from ..config import FIELD_TYPES, make_config
from ..errors import ConfigError
from ..host.machines import check_host, check_port, check_rank
from ..host.manifest import collect_manifest
from ..masking import mask_text
from ..measurement.flops import count_forward_flops
from ..measurement.outputs_check import compute_reference
from ..measurement.peak import matmul_peak
from ..models import MODELS, family_of
from ..paths import default_results_dir
from ..report.systems import status_rows
from ..results.store import write_record
from ..runs import fidelity, maxbatch
from ..runs.distributed import network
from ..runs.distributed.cluster import DEFAULT_PORT, Machines, resolve
from ..runs.distributed.run import execute, remove_stale_scratch
from ..runs.single import run
from ..sweep.jupyter_kernels import remove_stale as remove_stale_kernels
from . import EXIT_OK, EXIT_RUN_ERROR, MAXBATCH_FLAGS


def _cluster(args: argparse.Namespace, config) -> Machines | None:
    """This machine's place among real machines: --cluster (a host list with --node-rank, or slurm), or torchrun's
    static rendezvous from --master-addr/--node-rank; checked before any work, each value as a value first."""
    if args.master_port is not None:
        check_port(args.master_port, "--master-port")
    if args.master_addr is not None:
        check_host(args.master_addr, "--master-addr")
    if config.cluster:
        if args.master_addr is not None:
            raise ConfigError(f"--master-addr is node 0 of --cluster {config.cluster!r}: leave it out")
        return resolve(config, args.node_rank, args.master_port, os.environ)
    if args.master_addr is None and args.node_rank is None:
        for flag, given in (("--measure-link", args.measure_link), ("--master-port", args.master_port is not None)):
            if given:
                raise ConfigError(f"{flag} is for a run across real machines: give --cluster (or --master-addr)")
        return None
    adapter = ADAPTERS.get(config.framework)
    if not config.distributed or not adapter.distributed.rendezvous_kinds:
        raise ConfigError("--master-addr/--node-rank start this machine's torchrun agent of a run across machines; "
                          "valid choices: --strategy with a torchrun framework, or --cluster host0,host1,... "
                          "--node-rank k (every framework that runs on several machines)")
    if args.master_addr is None or args.node_rank is None:
        raise ConfigError(f"a real cluster needs --master-addr and --node-rank in 0..{config.nodes - 1} "
                          f"(--nodes {config.nodes} machines); got {args.master_addr!r}, {args.node_rank!r}")
    check_rank(args.node_rank, config.nodes, "--node-rank")
    if config.link_gbit or config.link_delay_ms:
        raise ConfigError("--link-gbit/--link-delay-ms shape emulated links; a real cluster's network is what it is: "
                          "leave them out with --master-addr")
    port = DEFAULT_PORT if args.master_port is None else args.master_port
    return Machines((args.master_addr,), args.node_rank, port, config.rendezvous, f"dlbench-{config.key}", "master")


def _print_json(value_of) -> None:
    """Print the JSON of `value_of()` alone on stdout: whatever the work prints meanwhile (a quantiser's progress bar,
    say) goes to stderr, so a caller reading stdout as JSON (a pipe, `fresh_process`) reads only it."""
    with contextlib.redirect_stdout(sys.stderr):
        value = value_of()
    print(json.dumps(value))


def validate(args: argparse.Namespace) -> None:
    """Refuse bad input of `run` or `fidelity` (ConfigError) without doing any work: before the command starts itself
    again with the framework's process settings (bench/cli.py), so the refusal is this process's, as it would be."""
    if args.command == "fidelity":
        make_config(framework=args.framework or reference_adapter().name, model=args.model or "resnet50",
                    mode=args.mode, batch_size=args.batch_size, threads=args.threads)
    else:
        _cluster(args, make_config(**{k: getattr(args, k) for k in FIELD_TYPES}))


def run_one(args: argparse.Namespace) -> int:
    if args.json:  # the record's JSON alone on stdout; the work's output and the summary lines on stderr
        with contextlib.redirect_stdout(sys.stderr):
            code, record = _run_one(args)
        print(json.dumps(record.to_json(), indent=1))
        return code
    return _run_one(args)[0]


def _run_one(args: argparse.Namespace):
    config = make_config(**{k: getattr(args, k) for k in FIELD_TYPES})
    cluster = _cluster(args, config)
    remove_stale_kernels()  # what a killed run or sweep left: connection files, scratch folders, namespaces
    remove_stale_scratch()
    if cluster:
        config = config if config.cluster else dataclasses.replace(config, extra={**config.extra,
                                                                                  "real_cluster": True})
        results_dir = args.results_dir or default_results_dir()
        if args.measure_link:  # every machine runs the probe; node 0 stores the fit
            entry = network.measure(results_dir, config.workers, config.nodes, machines=cluster)
            if entry:
                print(f"link {entry['key']}: all-reduce latency {entry['fit_allreduce']['alpha_s'] * 1e6:.0f} us, "
                      f"bandwidth {entry['fit_allreduce']['bandwidth_Bps'] / 1e6:.1f} MB/s")
        record = execute(config, args.results_dir, cluster=cluster)
        if record.status == "skipped":
            print(record.reason)
            return EXIT_OK, record
        path = write_record(record, results_dir)
    else:
        record, path = run(config, args.results_dir)
    s = record.summary
    label = mask_text(config.label)  # a data folder's path may hold a share's user and password: never printed
    if record.status == "ok":
        util = record.utilisation
        tokens = f" ({s.tokens_per_sec_median:.0f} tokens/s)" if s.tokens_per_sec_median else ""
        print(f"{label}: {s.images_per_sec_median:.2f} {family_of(config.model).rate_unit}{tokens} "
              f"[95% CI {s.images_per_sec_ci_low:.2f}-{s.images_per_sec_ci_high:.2f}], "
              f"median latency {s.latency_ms_median:.2f} ms over {s.n} iterations"
              + (f", utilisation {util:.1%}" if util is not None else ""))
    else:
        print(f"{label}: {record.status}: {record.reason}", file=sys.stderr)
    print(f"record: {path}")
    return (EXIT_RUN_ERROR if record.status == "error" else EXIT_OK), record


def listing(args: argparse.Namespace) -> int:
    if args.what == "models":
        for name in MODELS.names(args.pattern):
            spec = MODELS.get(name)
            if spec.published_gmacs_224:
                cost = f"{spec.published_gmacs_224} GMACs, {spec.published_params_millions} M params"
            else:
                cost = "test model" if spec.tiny else "no published cost in the reference data"
            print(f"{name:14s} {cost}")
    else:
        for name in ADAPTERS.names(args.pattern):
            a = ADAPTERS.get(name)
            print(f"{name:12s} engines: {', '.join(a.engines):22s} version: {a.version() or 'not installed'}")
            if a.distributed.strategies:
                strategies = ", ".join(a.distributed.strategies)
                print(f"{'':12s} distributed: {strategies} (started by {a.distributed.launch})")
        print("\nsystems compared by the source studies and by users today:")
        for row in status_rows():
            why = f" - {row['reason']}" if row["reason"] else ""
            succ = row["closest runnable successor"]
            print(f"  {row['framework']:13s} {row['status']}{why}" + (f" (successor: {succ})" if succ != "-" else ""))
    return EXIT_OK


def env(args: argparse.Namespace) -> int:
    print(json.dumps(collect_manifest(), indent=1))
    return EXIT_OK


def peak(args: argparse.Namespace) -> int:
    _print_json(lambda: matmul_peak(args.device, args.precision, args.threads))
    return EXIT_OK


def flops(args: argparse.Namespace) -> int:
    _print_json(lambda: count_forward_flops(args.model, args.input_size))
    return EXIT_OK


def reference_outputs(args: argparse.Namespace) -> int:
    _print_json(lambda: compute_reference(args.model, args.input_size, args.batch_size))
    return EXIT_OK


def fidelity_check(args: argparse.Namespace) -> int:
    config = make_config(framework=args.framework or reference_adapter().name, model=args.model or "resnet50",
                         mode=args.mode, batch_size=args.batch_size, threads=args.threads)
    if args.baseline_only:
        _print_json(lambda: {"images_per_sec": fidelity.baseline(config)})
    else:
        _print_json(lambda: fidelity.execute(config, args.results_dir, args.rounds))
    return EXIT_OK


def largest_batch(args: argparse.Namespace) -> int:
    config = make_config(**{k: getattr(args, k) for k in MAXBATCH_FLAGS if getattr(args, k) is not None},
                         batch_size=1)
    if args.memory_cap_gb is not None:
        maxbatch.check_limit("memory_cap_gb", args.memory_cap_gb, "--memory-cap-gb")
    maxbatch.check_limit("max_batch", args.max_batch, "--max-batch")
    # what `run` would skip: refused before the device peak or a probe
    reason = ADAPTERS.get(config.framework).cannot_run(config.mode, config.precision, config.device, config.model)
    if reason:
        raise ConfigError(f"no largest batch to search for {config.label}: {reason}")
    cap = maxbatch.host_cap(config.device, int(args.memory_cap_gb * 2**30) if args.memory_cap_gb
                            else maxbatch.default_cap_bytes(config.device))
    found = maxbatch.execute(config, args.results_dir or default_results_dir(), cap, args.max_batch)
    for p in found["probes"]:
        mem = f"{p['peak_bytes'] / 2**30:.2f} GiB" if p["peak_bytes"] else "-"
        state = {True: "fits", False: "does not fit", None: "error"}[p["fits"]]
        print(f"  batch {p['batch_size']:6d}: {state:12s} peak {mem:>10s}  {p['reason']}")
    print(f"{config.framework} {config.model} {config.mode} {config.precision} {config.device}: largest batch "
          f"{found['largest_batch'] or 'none'} (limited by {found['limited_by']}; {maxbatch.cap_text(cap)}, at most "
          f"{args.max_batch})")
    return EXIT_OK if found["limited_by"] != "error" else EXIT_RUN_ERROR
