"""Command-line interface: run one config, list models/frameworks, print the environment."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from .adapters import ADAPTERS, reference_adapter
from .config import FIELD_TYPES, check_value, make_config
from .errors import ConfigError, Terminated, terminations_unwind
from .host import devices
from .host.manifest import collect_manifest, host_name
from .measurement.flops import count_forward_flops
from .measurement.fresh_process import bench_environ
from .measurement.peak import matmul_peak
from .models import MODELS, get_model
from .paths import PROJECT_ROOT, checked_dir, default_results_dir
from .report.compare import compare_results, to_text, verdict_counts
from .report.export import ExportError, build_report
from .report.systems import status_rows
from .results.store import record_files, write_record
from .runs import fidelity, maxbatch
from .runs.distributed.run import execute, remove_stale_scratch
from .runs.single import run
from .sweep.jupyter_kernels import remove_stale as remove_stale_kernels
from .sweep.profiles import load_profile
from .sweep.runner import measure_peaks, plan, run_sweep

EXIT_OK, EXIT_RUN_ERROR, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

# CLI flag -> RunConfig field, every one, with its type from RunConfig (choices are validated by RunConfig
# itself, so the CLI, notebooks and tests all get the same messages).
_RUN_FLAGS = FIELD_TYPES
# What a largest-batch search is over (the batch size is what it searches)
_MAXBATCH_FLAGS = ("framework", "model", "mode", "engine", "device", "precision", "image_size", "threads")


def _yes_no(text: str) -> bool:
    """A switch's value: `--oversubscribe` alone means true; `--oversubscribe false` (as a probe passes it) too."""
    if text.lower() not in ("true", "false", "yes", "no", "1", "0"):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; valid choices: true, false")
    return text.lower() in ("true", "yes", "1")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure one configuration and write its record")
    for name, typ in _RUN_FLAGS.items():
        switch = dict(type=_yes_no, nargs="?", const=True) if typ is bool else dict(type=typ)
        run.add_argument("--" + name.replace("_", "-"), dest=name, required=name in ("framework", "model"), **switch)
    run.add_argument("--results-dir", default=None, help="default: results/ in the project (BENCH_RESULTS)")
    run.add_argument("--json", action="store_true", help="print the whole record")
    real = run.add_argument_group("real cluster (PyTorch): run this machine's ranks; node 0 writes the record")
    real.add_argument("--master-addr", default=None, help="node 0's address, reachable from every machine")
    real.add_argument("--master-port", type=int, default=29500)
    real.add_argument("--node-rank", type=int, default=None, help="this machine's index, 0..nodes-1")
    ls = sub.add_parser("list", help="list models or frameworks")
    ls.add_argument("what", choices=["models", "frameworks"])
    ls.add_argument("pattern", nargs="?", default="*")
    sub.add_parser("env", help="print this machine's environment manifest as JSON")
    peak = sub.add_parser("peak", help="measure the device's matmul peak (prints JSON)")
    peak.add_argument("--device", default="cpu")
    peak.add_argument("--precision", default="fp32")
    peak.add_argument("--threads", type=int, required=True)
    sw = sub.add_parser("sweep", help="run every config of a profile (one papermill notebook each), resumably")
    sw.add_argument("--profile", default="quick", help="a name in profiles/ or a path to a YAML file")
    sw.add_argument("--results-dir", default=None)
    sw.add_argument("--force", action="store_true", help="redo every repetition, even those already recorded")
    sw.add_argument("--repeats", type=int, default=None,
                    help="fresh processes per config (default: the profile's `repeats`)")
    sw.add_argument("--list", action="store_true",
                    help="print the planned runs in order, what is done, what is over budget, and the estimate")
    rep = sub.add_parser("report", help="execute the report notebook over all results and export HTML + PDF")
    rep.add_argument("--results-dir", default=None)
    rep.add_argument("--out", default=None, help="default: report/ in the project")
    rep.add_argument("--no-pdf", action="store_true")
    fid = sub.add_parser("fidelity", help="harness images/s vs a minimal hand-written loop (a benchmark)")
    for name in ("framework", "model", "mode", "batch_size", "threads"):
        fid.add_argument("--" + name.replace("_", "-"), dest=name, type=_RUN_FLAGS[name])
    fid.add_argument("--rounds", type=int, default=2)
    fid.add_argument("--results-dir", default=None)
    fid.add_argument("--baseline-only", action="store_true", help="run only the hand-written loop, here")
    mb = sub.add_parser("maxbatch", help="the largest batch that fits (within a memory cap on a CPU), and peak "
                                         "memory against batch size: one fresh-process probe per batch size")
    for name in _MAXBATCH_FLAGS:
        mb.add_argument("--" + name.replace("_", "-"), dest=name, type=_RUN_FLAGS[name],
                        required=name in ("framework", "model"))
    mb.add_argument("--memory-cap-gb", type=float, default=None, help="CPU: stop a probe whose resident memory "
                    "passes this (default: half of this machine's memory)")
    mb.add_argument("--max-batch", type=int, default=256)
    mb.add_argument("--results-dir", default=None)
    cmp = sub.add_parser("compare", help="two result folders side by side: B/A per config with a verdict")
    cmp.add_argument("a", help="results folder A (the baseline)")
    cmp.add_argument("b", help="results folder B")
    cmp.add_argument("--csv", default=None, help="also write the table to this CSV file")
    flops = sub.add_parser("flops", help="count a model's forward FLOPs per image (prints JSON)")
    flops.add_argument("--model", required=True)
    flops.add_argument("--image-size", type=int, required=True)
    return p


def _cluster(args: argparse.Namespace, config) -> dict | None:
    """The real-cluster rendezvous from --master-addr/--node-rank, checked before any work."""
    if args.master_addr is None and args.node_rank is None:
        return None
    adapter = ADAPTERS.get(config.framework)
    if not config.distributed or not adapter.multi_machine:
        able = [n for n in ADAPTERS if ADAPTERS.get(n).multi_machine]
        raise ConfigError(f"--master-addr/--node-rank start this machine's ranks of a distributed run across "
                          f"machines; valid choices: --framework {' or '.join(able)} with --strategy "
                          f"({', '.join(ADAPTERS.get(able[0]).distributed_strategies)})")
    if args.master_addr is None or args.node_rank is None or not 0 <= args.node_rank < config.nodes:
        raise ConfigError(f"a real cluster needs --master-addr and --node-rank in 0..{config.nodes - 1} "
                          f"(--nodes {config.nodes} machines); got {args.master_addr!r}, {args.node_rank!r}")
    if config.link_gbit or config.link_delay_ms:
        raise ConfigError("--link-gbit/--link-delay-ms shape emulated links; a real cluster's network is what it is: "
                          "leave them out with --master-addr")
    if not 0 < args.master_port < 65536:
        raise ConfigError(f"invalid --master-port {args.master_port}; it must be 1..65535")
    return {"master_addr": args.master_addr, "master_port": args.master_port, "node_rank": args.node_rank}


def _cmd_run(args: argparse.Namespace) -> int:

    config = make_config(**{k: getattr(args, k) for k in _RUN_FLAGS})
    cluster = _cluster(args, config)
    remove_stale_kernels()  # what a killed run or sweep left: connection files, scratch folders, namespaces
    remove_stale_scratch()
    if cluster:

        config = dataclasses.replace(config, extra={**config.extra, "real_cluster": True})
        record = execute(config, args.results_dir, cluster=cluster)
        if record.status == "skipped":
            print(record.reason)
            return EXIT_OK
        path = write_record(record, args.results_dir or default_results_dir())
    else:
        record, path = run(config, args.results_dir)
    if args.json:
        print(json.dumps(record.to_json(), indent=1))
    s = record.summary
    if record.status == "ok":
        util = record.utilisation
        print(f"{config.label}: {s.images_per_sec_median:.2f} img/s "
              f"[95% CI {s.images_per_sec_ci_low:.2f}-{s.images_per_sec_ci_high:.2f}], "
              f"median latency {s.latency_ms_median:.2f} ms over {s.n} iterations"
              + (f", utilisation {util:.1%}" if util is not None else ""))
    else:
        print(f"{config.label}: {record.status}: {record.reason}", file=sys.stderr)
    print(f"record: {path}")
    return EXIT_RUN_ERROR if record.status == "error" else EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
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
            if a.distributed_strategies:
                strategies = ", ".join(a.distributed_strategies)
                print(f"{'':12s} distributed: {strategies} (started by {a.distributed_launch})")
        print("\nsystems compared by the source studies and by users today:")
        for row in status_rows():
            why = f" - {row['reason']}" if row["reason"] else ""
            succ = row["closest runnable successor"]
            print(f"  {row['framework']:13s} {row['status']}{why}" + (f" (successor: {succ})" if succ != "-" else ""))
    return EXIT_OK


def _cmd_sweep(args: argparse.Namespace) -> int:


    profile = load_profile(args.profile)  # validates every config before anything runs
    if args.repeats is not None and not 1 <= args.repeats <= 100:
        raise ConfigError(f"invalid --repeats {args.repeats}; it must be an integer from 1 to 100")
    if args.list:

        p = plan(profile, Path(args.results_dir), args.force, args.repeats,
                 measure_peaks(profile))
        for i, t in enumerate(p["tasks"]):
            print(f"{i:4d}  todo  round {t.round}  {t.config.label}")
        for c in p["dropped"]:
            print(f"      not run: over budget  {c.label}")
        print(f"{len(p['tasks'])} runs to do, {len(p['done'])} already recorded, {len(p['dropped'])} configs over "
              f"budget; estimated {p['estimate_s'] / 60:.1f} min")
        return EXIT_OK
    result = run_sweep(profile, args.results_dir, force=args.force, repeats=args.repeats)
    n = len(result.ran)
    print(f"sweep {profile.name} ({result.sweep_id}): {n} runs, {len(result.already_done)} already recorded, "
          f"{len(result.retried)} retried after a disturbance, {len(result.still_disturbed)} still disturbed, "
          f"{len(result.dropped)} configs over budget, {len(result.failures)} not ok")
    if n:
        overhead = result.papermill_s - result.measured_s
        print(f"time: {result.papermill_s:.0f} s in papermill, of which {result.measured_s:.0f} s inside the "
              f"harness; per-config notebook overhead {overhead / n:.1f} s "
              f"({overhead / max(result.papermill_s, 1e-9):.0%} of the sweep)")
    for label, status, reason in result.failures:
        print(f"  {status}: {label}: {reason}")
    for line in result.still_disturbed:
        print(f"  disturbed (kept, flagged): {line}")
    return EXIT_OK


def _cmd_maxbatch(args: argparse.Namespace) -> int:


    config = make_config(**{k: getattr(args, k) for k in _MAXBATCH_FLAGS if getattr(args, k) is not None},
                         batch_size=1)
    if args.memory_cap_gb is not None:
        maxbatch.check_limit("memory_cap_gb", args.memory_cap_gb, "--memory-cap-gb")
    maxbatch.check_limit("max_batch", args.max_batch, "--max-batch")
    # what `run` would skip: refused before the device peak or a probe
    reason = ADAPTERS.get(config.framework).cannot_run(config.mode, config.precision, config.device)
    if reason:
        raise ConfigError(f"no largest batch to search for {config.label}: {reason}")
    cap = int(args.memory_cap_gb * 2**30) if args.memory_cap_gb else maxbatch.default_cap_bytes(config.device)
    found = maxbatch.run_search(config, args.results_dir or default_results_dir(), cap, args.max_batch)
    for p in found["probes"]:
        mem = f"{p['peak_bytes'] / 2**30:.2f} GiB" if p["peak_bytes"] else "-"
        state = {True: "fits", False: "does not fit", None: "error"}[p["fits"]]
        print(f"  batch {p['batch_size']:6d}: {state:12s} peak {mem:>10s}  {p['reason']}")
    print(f"{config.framework} {config.model} {config.mode} {config.precision} {config.device}: largest batch "
          f"{found['largest_batch'] or 'none'} (limited by {found['limited_by']}; {maxbatch.cap_text(cap)}, at most "
          f"{args.max_batch})")
    return EXIT_OK if found["limited_by"] != "error" else EXIT_RUN_ERROR


def _cmd_report(args: argparse.Namespace) -> int:

    if not record_files(args.results_dir):
        raise ConfigError(f"no results in {args.results_dir}: run `make sweep` (or `python -m bench sweep`) first")
    try:
        outputs = build_report(args.results_dir, args.out, pdf=not args.no_pdf)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_ERROR
    for path in outputs:
        print(f"wrote {path}")
    return EXIT_OK


def _cmd_fidelity(args: argparse.Namespace) -> int:

    config = make_config(framework=args.framework or reference_adapter().name, model=args.model or "resnet50",
                         mode=args.mode, batch_size=args.batch_size, threads=args.threads)
    if args.baseline_only:
        print(json.dumps({"images_per_sec": fidelity.baseline(config)}))
    else:
        print(json.dumps(fidelity.compare(config, args.rounds, args.results_dir)))
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:

    table = compare_results(args.a, args.b)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(to_text(table))
    print(verdict_counts(table))
    if args.csv:
        print(f"wrote {args.csv}")
    return EXIT_OK


def _check_inputs(args: argparse.Namespace) -> None:
    """Folders and the internal subcommands' values, checked before any work (ConfigError: exit 2)."""


    host_name()  # BENCH_HOST must name one safe folder
    if hasattr(args, "results_dir"):
        args.results_dir = str(checked_dir(args.results_dir))
    if getattr(args, "csv", None) is not None:
        if Path(args.csv).is_dir():
            raise ConfigError(f"--csv {args.csv!r} is a folder; give a file name")
        checked_dir(Path(args.csv).parent, "folder of --csv")
    if getattr(args, "out", None) is not None or args.command == "report":
        args.out = str(checked_dir(args.out, "output folder", PROJECT_ROOT / "report"))
    if args.command in ("peak", "flops"):

        if args.command == "peak":
            check_value("device", args.device)  # a GPU this machine lacks is refused here, as `run` refuses it
            check_value("precision", args.precision)
            args.device = devices.normalise_device(args.device)
            if not 1 <= args.threads <= 1024:
                raise ConfigError(f"invalid --threads {args.threads}; it must be an integer from 1 to 1024")
        else:
            spec = get_model(args.model)
            if not spec.min_image_size <= args.image_size <= spec.max_image_size:
                raise ConfigError(f"invalid --image-size {args.image_size} for {args.model}; it must be from "
                                  f"{spec.min_image_size} to {spec.max_image_size}")


def _framework_interpreter(args: argparse.Namespace):
    """For `run` and `fidelity` of a framework with an environment of its own (MXNet), that environment's
    interpreter when this process is not it; else None."""
    if args.command not in ("run", "fidelity"):
        return None
    adapter = ADAPTERS.get(args.framework or reference_adapter().name)
    return adapter.interpreter() if adapter.environment and not adapter.runs_here() else None


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "list":
        return _cmd_list(args)
    if args.command == "env":

        print(json.dumps(collect_manifest(), indent=1))
        return EXIT_OK
    if args.command == "peak":

        print(json.dumps(matmul_peak(args.device, args.precision, args.threads)))
        return EXIT_OK
    if args.command == "sweep":
        return _cmd_sweep(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "fidelity":
        return _cmd_fidelity(args)
    if args.command == "compare":
        return _cmd_compare(args)
    if args.command == "maxbatch":
        return _cmd_maxbatch(args)
    if args.command == "flops":

        print(json.dumps(count_forward_flops(args.model, args.image_size)))
        return EXIT_OK
    return EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check_inputs(args)
        python = _framework_interpreter(args)
        if python:  # the framework lives in an environment of its own: the same command, run there


            return subprocess.call([str(python), "-m", "bench", *(sys.argv[1:] if argv is None else argv)],
                                   env=bench_environ())
        with terminations_unwind():
            return _dispatch(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Terminated as exc:
        print(f"terminated by {exc}: what it started was stopped and removed, finished runs are kept; run the same "
              "command again to resume", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept and nothing is half-written; run the same command again "
              "to resume", file=sys.stderr)
        return EXIT_INTERRUPTED


def console() -> None:
    """The `bench` command installed by `pip install -e .` (pyproject.toml): the same as `python -m bench`."""
    sys.exit(main())
