"""Command-line interface: run one config, list models/frameworks, print the environment."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

from .adapters import ADAPTERS, process_environment, reference_adapter
from .commands import EXIT_BAD_INPUT, EXIT_INTERRUPTED, MAXBATCH_FLAGS
from .config import FIELD_TYPES, check_value, option_help
from .errors import ConfigError, Terminated, terminations_unwind
from .host import devices
from .host.manifest import host_name
from .measurement.fresh_process import bench_environ
from .measurement.peak import matrix_side
from .models import get_model
from .paths import PROJECT_ROOT, checked_dir

# Each command's handler, loaded only when it is the command given: the report's commands import pandas and
# matplotlib, which `bench run` must not need (it also runs in a framework's own lean environment).
COMMANDS = {"run": "measure:run_one", "list": "measure:listing", "env": "measure:env", "peak": "measure:peak",
            "flops": "measure:flops", "outputs": "measure:reference_outputs", "fidelity": "measure:fidelity_check",
            "maxbatch": "measure:largest_batch", "sweep": "sweep:sweep", "report": "report:report",
            "compare": "report:compare", "doctor": "doctor:doctor", "gpucheck": "gpucheck:gpucheck",
            "noise": "noise:noise_command"}

# CLI flag -> RunConfig field, every one, with its type from RunConfig (choices are validated by RunConfig
# itself, so the CLI, notebooks and tests all get the same messages).
_RUN_FLAGS = FIELD_TYPES


def _yes_no(text: str) -> bool:
    """A switch's value: `--oversubscribe` alone means true; `--oversubscribe false` (as a probe passes it) too."""
    if text.lower() not in ("true", "false", "yes", "no", "1", "0"):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; valid choices: true, false")
    return text.lower() in ("true", "yes", "1")


def positive_minutes(text: str) -> float:
    """gpucheck's --minutes: a finite number above 0 (nan, inf, 0 and negatives name themselves and are refused)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; valid choices: a finite number of minutes above 0")
    return value


RESULTS_HELP = "the results folder (default: results/ in the project, or BENCH_RESULTS)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure one configuration and write its record")
    for name, typ in _RUN_FLAGS.items():
        switch = dict(type=_yes_no, nargs="?", const=True) if typ is bool else dict(type=typ)
        run.add_argument("--" + name.replace("_", "-"), dest=name, required=name in ("framework", "model"),
                         help=option_help(name), **switch)
    run.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    run.add_argument("--json", action="store_true", help="print the whole record")
    real = run.add_argument_group("real machines (--cluster host0,host1,... or slurm): run this machine's ranks; "
                                  "node 0 writes the record")
    real.add_argument("--node-rank", type=int, default=None, help="this machine's index in --cluster's host list")
    real.add_argument("--master-port", type=int, default=None,
                      help="torchrun's master / c10d port, TF tasks' first port (default 29500; Slurm: MASTER_PORT "
                           "or drawn from the job id)")
    real.add_argument("--master-addr", default=None, help="torchrun's static rendezvous without --cluster: node 0's "
                                                          "address, reachable from every machine")
    real.add_argument("--measure-link", action="store_true",
                      help="first measure the link between the machines (alpha-beta fit, stored by node 0)")
    ls = sub.add_parser("list", help="list models or frameworks")
    ls.add_argument("what", choices=["models", "frameworks"], help="what to list: models or frameworks")
    ls.add_argument("pattern", nargs="?", default="*", help="a shell-style name pattern (default: *, every one)")
    sub.add_parser("env", help="print this machine's environment manifest as JSON")
    doc = sub.add_parser("doctor", epilog="exit status: 0 whatever it finds (what cannot run is in the table, with "
                                          "the reason); 2 bad input",
                         help="what this machine can run: per framework its build, CUDA libraries and GPUs; "
                              "the driver, NVML, the device peak")
    doc.add_argument("--framework", default=None, choices=list(ADAPTERS), help="only this framework's facts, as JSON")
    doc.add_argument("--json", action="store_true", help="print the facts as JSON instead of a table")
    doc.add_argument("--results-dir", default=None, help="where results/<host>/doctor.json is kept for the report")
    chk = sub.add_parser("gpucheck", epilog="exit status: 0 every step ran or was skipped/not applicable with its "
                                            "reason; 1 a step failed, or no GPU here; 2 bad input (nothing ran)",
                         help="verify a GPU machine in minutes with this interpreter and the frameworks it "
                                          "has (no venv, no Jupyter): runs of each, DDP, data parallel, NVML, largest "
                                          "batch, ResNet-50 bf16/fp16 training; records in results/<host>/")
    chk.add_argument("--device", default=None, help="default: cuda:0 where there is a GPU")
    chk.add_argument("--tiny", action="store_true", help="a tiny model and few steps: the plumbing, on a CPU too")
    chk.add_argument("--dry-run", action="store_true", help="print the steps (after the doctor's table), run none")
    chk.add_argument("--frameworks", default=None, help="comma-separated (default: every framework present)")
    chk.add_argument("--minutes", type=positive_minutes, default=9.0,
                     help="every step, the largest-batch search too, ends within this many minutes (default 9; a "
                          "finite number above 0)")
    chk.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    nz = sub.add_parser("noise", epilog="exit status: 0 every arm of every framework got 2 or more processes; 1 one "
                                        "did not (its failures are in the table); 2 bad input (nothing ran)",
                        help="how much each framework's speed moves between fresh processes here, run as a sweep runs "
                             "them, interleaved; --arm tests a setting against the machine as it is (not part of "
                             "make report)")
    nz.add_argument("--frameworks", default=None, help="comma-separated (default: every framework that runs here)")
    nz.add_argument("--processes", type=int, default=8, help="fresh processes per framework and arm (default 8)")
    nz.add_argument("--model", default="resnet50", help=option_help("model") + " (default resnet50)")
    nz.add_argument("--mode", default="inference", help="inference (default) or training")
    nz.add_argument("--batch-size", type=int, default=16, help="default 16")
    nz.add_argument("--arm", action="append", metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                    help="a setting to test: its kernels start with these environment variables (repeatable; "
                         "'plain', the machine as it is, is always an arm unless one is named so)")
    nz.add_argument("--seed", type=int, default=2019, help="the order's seed (default 2019)")
    nz.add_argument("--out", default=None, help="a new folder for its records (default: results-noise/<time>)")
    peak = sub.add_parser("peak", help="measure the device's matmul peak (prints JSON)")
    peak.add_argument("--device", default="cpu", help=option_help("device"))
    peak.add_argument("--precision", default="fp32", help=option_help("precision"))
    peak.add_argument("--threads", type=int, required=True, help="threads of the matrix product (required)")
    sw = sub.add_parser("sweep", help="run every config of a profile (one papermill notebook each), resumably")
    sw.add_argument("--profile", default="quick", help="a name in profiles/ or a path to a YAML file")
    sw.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    sw.add_argument("--force", action="store_true", help="redo every repetition, even those already recorded")
    sw.add_argument("--repeats", type=int, default=None,
                    help="fresh processes per config (default: the profile's `repeats`)")
    sw.add_argument("--list", action="store_true",
                    help="print the planned runs in order, what is done, what is over budget, and the estimate")
    sw.add_argument("--shard", default=None, metavar="K/N",
                    help="run only this machine's share (K of N machines) of the plan: comparison groups dealt "
                         "round robin; copy the N results/<host>/ folders together to merge")
    sw.add_argument("--executor", default="local", choices=["local", "slurm"],
                    help="local: every run here, one after the other (default); slurm: each run a Slurm job "
                         "(submitit), in the planned order")
    slurm = sw.add_argument_group("Slurm jobs (--executor slurm; override the profile's `slurm` block)")
    slurm.add_argument("--partition", default=None, help="the Slurm partition (default: the cluster's default)")
    slurm.add_argument("--time-limit", dest="time_limit", default=None,
                       help="per job: minutes, or H:MM:SS / D-HH:MM:SS (default 60 minutes)")
    slurm.add_argument("--cpus-per-task", dest="cpus_per_task", type=int, default=None,
                       help="CPUs per job (default: the node's, with --exclusive)")
    slurm.add_argument("--gpus-per-task", dest="gpus_per_task", type=int, default=None,
                       help="GPUs per job (default: those the config's device needs)")
    slurm.add_argument("--exclusive", action=argparse.BooleanOptionalAction, default=None,
                       help="whole nodes, nothing beside a benchmark (default: on)")
    slurm.add_argument("--constraint", default=None, help="node features, as sbatch --constraint")
    slurm.add_argument("--parallel", type=int, default=None,
                       help="jobs at once, at most one per node (default 1: the local order exactly); needs exclusive")
    rep = sub.add_parser("report", help="execute the report notebook over all results and export HTML + PDF")
    rep.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    rep.add_argument("--out", default=None, help="the folder the report is written to (default: report/ in the "
                                                  "project)")
    rep.add_argument("--no-pdf", action="store_true", help="write the HTML only (no Chromium needed)")
    fid = sub.add_parser("fidelity", help="harness images/s vs a minimal hand-written loop (a benchmark)")
    for name in ("framework", "model", "mode", "batch_size", "threads"):
        fid.add_argument("--" + name.replace("_", "-"), dest=name, type=_RUN_FLAGS[name], help=option_help(name))
    fid.add_argument("--rounds", type=int, default=2, help="rounds of harness and loop, alternated (default 2)")
    fid.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    fid.add_argument("--baseline-only", action="store_true", help="run only the hand-written loop, here")
    mb = sub.add_parser("maxbatch", help="the largest batch that fits (within a memory cap on a CPU), and peak "
                                         "memory against batch size: one fresh-process probe per batch size")
    for name in MAXBATCH_FLAGS:
        mb.add_argument("--" + name.replace("_", "-"), dest=name, type=_RUN_FLAGS[name],
                        required=name in ("framework", "model"), help=option_help(name))
    mb.add_argument("--memory-cap-gb", type=float, default=None, help="CPU: stop a probe whose resident memory "
                    "passes this (default: half of this machine's memory)")
    mb.add_argument("--max-batch", type=int, default=256, help="the largest batch probed (default 256)")
    mb.add_argument("--results-dir", default=None, help=RESULTS_HELP)
    cmp = sub.add_parser("compare", help="two result folders side by side: B/A per config with a verdict")
    cmp.add_argument("a", help="results folder A (the baseline)")
    cmp.add_argument("b", help="results folder B")
    cmp.add_argument("--csv", default=None, help="also write the table to this CSV file")
    flops = sub.add_parser("flops", help="count a model's forward FLOPs per image (prints JSON)")
    flops.add_argument("--model", required=True, help=option_help("model"))
    flops.add_argument("--input-size", type=int, required=True,
                       help="the images' side in pixels, or a token model's sequence length (required)")
    outputs = sub.add_parser("outputs", help="the reference framework's logits for a transformer's probe batch, the "
                                            "output check's reference (prints JSON)")
    outputs.add_argument("--model", required=True, help=option_help("model"))
    outputs.add_argument("--input-size", type=int, required=True,
                         help="the images' side in pixels, or a token model's sequence length (required)")
    outputs.add_argument("--batch-size", type=int, required=True, help="the probe batch's size (required)")
    return p


def _check_inputs(args: argparse.Namespace) -> None:
    """Folders and the internal subcommands' values, checked before any work (ConfigError: exit 2)."""
    host_name()  # BENCH_HOST must name one safe folder
    matrix_side("cpu")  # BENCH_PEAK_N, which every command that measures a peak reads: checked as a value here
    if hasattr(args, "results_dir"):
        args.results_dir = str(checked_dir(args.results_dir))
    if getattr(args, "csv", None) is not None:
        if Path(args.csv).is_dir():
            raise ConfigError(f"--csv {args.csv!r} is a folder; give a file name")
        folder = Path(args.csv).parent
        if not folder.is_dir():
            raise ConfigError(f"--csv {args.csv!r}: its folder {str(folder)!r} does not exist; valid: a file in an "
                              "existing folder (create the folder first)")
        checked_dir(folder, "folder of --csv")
    if getattr(args, "out", None) is not None or args.command == "report":
        args.out = str(checked_dir(args.out, "output folder", PROJECT_ROOT / "report"))
    if args.command in ("peak", "flops", "outputs"):
        if args.command == "peak":
            check_value("device", args.device)  # a GPU this machine lacks is refused here, as `run` refuses it
            check_value("precision", args.precision)
            args.device = devices.normalise_device(args.device)
            if not 1 <= args.threads <= 1024:
                raise ConfigError(f"invalid --threads {args.threads}; it must be an integer from 1 to 1024")
            # the peak is the reference framework's GEMM: a precision its runs refuse here has no peak either
            reason = reference_adapter().cannot_run("inference", args.precision, args.device)
            if reason:
                raise ConfigError(f"invalid --precision {args.precision} on {args.device}: {reason}")
        else:
            spec = get_model(args.model)
            if args.command == "outputs":
                check_value("batch_size", args.batch_size)
            low, high = spec.input_sizes
            if not low <= args.input_size <= high:
                raise ConfigError(f"invalid --input-size {args.input_size} for {args.model}; it must be from "
                                  f"{low} to {high}")


def _framework_interpreter(args: argparse.Namespace):
    """For `run` and `fidelity` of a framework with an environment of its own (MXNet), or of a GPU config of one with
    a GPU environment of its own (TensorFlow's CUDA build), that environment's interpreter when this process is not
    it; else None."""
    if args.command not in ("run", "fidelity"):
        return None
    adapter = ADAPTERS.get(args.framework or reference_adapter().name)
    gpu = adapter.gpu_interpreter() if devices.is_gpu(getattr(args, "device", None) or "cpu") else None
    if gpu and Path(sys.prefix).resolve() != gpu.parent.parent.resolve():
        return gpu
    return adapter.interpreter() if adapter.environment and not adapter.runs_here() else None


_python_format = warnings.formatwarning


def _plain_warning(message, category, filename, lineno, line=None) -> str:
    """The package's own warnings (a record set aside, a file skipped) as the sentence they are, without Python's
    source file and line; a library's warnings keep Python's form (its source is the context a reader needs)."""
    if str(filename).startswith(str(Path(__file__).parent)):
        return f"{message}\n"
    return _python_format(message, category, filename, lineno, line)


def _at_start_settings(args: argparse.Namespace) -> dict[str, str]:
    """For `run` and `fidelity`: the framework's documented process settings that only a process's start reads (an
    allocator preload) and this process lacks; {} where none (bench/adapters/process_environment.py)."""
    if args.command not in ("run", "fidelity"):
        return {}
    adapter = ADAPTERS.get(args.framework or reference_adapter().name)
    return process_environment.restart_with(adapter.process_environment, os.environ)


def _same_command(python, argv: list[str] | None) -> list[str]:
    """This bench command line, run by `python`."""
    return [str(python), "-m", "bench", *(sys.argv[1:] if argv is None else argv)]


def _start_again(argv: list[str] | None, env: dict[str, str]) -> int:
    """The same command in a process started with `env`: from the command line this process becomes it (exec: the
    same pid, so a signal sent to it, Ctrl-C or a scheduler's SIGTERM, reaches the run and its cleanup); called as a
    function (`main(argv)`), a child process, its exit status returned."""
    command = _same_command(sys.executable, argv)
    if argv is None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, command, env)
    return subprocess.call(command, env=env)


def main(argv: list[str] | None = None) -> int:
    warnings.formatwarning = _plain_warning
    args = _parser().parse_args(argv)
    try:
        _check_inputs(args)
        python = _framework_interpreter(args)
        if python:  # the framework lives in an environment of its own: the same command, run there
            return subprocess.call(_same_command(python, argv),
                                   env=bench_environ())
        if at_start := _at_start_settings(args):  # an allocator the framework's processes start with: start again
            importlib.import_module(f"{__package__}.commands.measure").validate(args)  # bad input refused here
            return _start_again(argv, {**bench_environ(), **at_start})
        module, handler = COMMANDS[args.command].split(":")
        with terminations_unwind():
            return getattr(importlib.import_module(f"{__package__}.commands.{module}"), handler)(args)
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
