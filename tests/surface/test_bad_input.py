"""Bad input of every kind, on the command line, in a profile and in the Makefile, is refused before any work: one
line naming the bad value and the valid choices, exit 2, nothing written."""

import subprocess
from pathlib import Path

import pytest

from bench.adapters import ADAPTERS
from bench.cli import EXIT_BAD_INPUT, main
from bench.errors import ConfigError
from bench.host import devices
from bench.host.links import netem_unavailable
from bench.sweep.profiles import load_profile
from tests.conftest import ROOT, bench_cli

TOO_MANY = devices.usable_cpus() + 1  # more workers than this machine has cores for

NO_FP16 = ADAPTERS.get("torch").not_applicable("inference", "fp16", "cpu") is not None

HAS_GPU = bool(devices.gpus())

DIST = ("--mode", "training", "--strategy", "allreduce")

RUN = ("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32")

MAXBATCH = ("maxbatch", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32")

# (command line, text the one-line error must contain); each: exit 2, nothing written
CLI = [
    (RUN + DIST + ("--workers", "202", "--nodes", "202"), "nodes 202"),
    (RUN + DIST + ("--workers", str(TOO_MANY)), f"workers {TOO_MANY}"),
    (RUN + DIST + ("--workers", "2", "--nodes", "2", "--link-delay-ms", "5"), "link_delay_ms 5"),
    (RUN + ("--precision", "fp64"), "fp64"),
    (RUN + ("--engine", "jit"), "jit"),
    (RUN + DIST + ("--strategy", "allreduc", "--workers", "2"), "allreduc"),
    (RUN + DIST + ("--workers", "2", "--oversubscribe", "maybe"), "maybe"),
    (RUN + ("--warmup", "2.5"), "2.5"),
    (("maxbatch", "--framework", "onnxruntime", "--model", "tiny_cnn", "--mode", "training"), "has no training"),
    (MAXBATCH + ("--precision", "fp16"), "fp16"),
    (MAXBATCH + ("--memory-cap-gb", "50000"), "--memory-cap-gb 50000"),
    (MAXBATCH + ("--engine", "jit"), "jit"),
    (("peak", "--device", "cuda", "--threads", "1"), "no GPU"),
]

CLI_SKIPS = {"link_delay_ms 5": netem_unavailable() is None, "fp16": not NO_FP16, "no GPU": HAS_GPU}

# (block, key, YAML of the bad value, text naming the value) for every block that has the key
BLOCKS = {"top level": "", "also block 1": "also:\n  - {{{kv}}}\n",
          "distributed block 1": "distributed:\n  - {{models: [tiny_cnn], {kv}}}\n",
          "memory block 1": "memory:\n  - {{{kv}}}\n"}

VALUES = [
    ("precisions", "precisions: [fp64]", "'fp64'", ("top level", "also block 1", "memory block 1")),
    ("modes", "modes: [sleeping]", "'sleeping'", ("top level", "also block 1", "memory block 1")),
    ("devices", "devices: [tpu]", "'tpu'", ("top level", "also block 1", "memory block 1")),
    ("frameworks", "frameworks: [caffe2]", "'caffe2'", tuple(BLOCKS)),
    ("models", "models: [resnet9000]", "'resnet9000'", tuple(BLOCKS)),
    ("batch_sizes", "batch_sizes: [0]", "batch_size 0", ("top level", "also block 1", "distributed block 1")),
    ("engines", "frameworks: [torch], engines: [jit]", "'jit'", ("top level", "also block 1", "memory block 1")),
    ("strategies", "strategies: [allreduc]", "'allreduc'", ("distributed block 1",)),
    ("strategies", "strategies: ['']", "''", ("distributed block 1",)),
    ("workers", "workers: [0]", "workers 0", ("distributed block 1",)),
    ("bucket_mbs", "bucket_mbs: [-1]", "bucket_mb -1", ("distributed block 1",)),
    ("settings", "settings: {strategy: ps_sync}", "strategy", ("top level", "distributed block 1")),
    ("settings", "settings: {workers: 4}", "workers", ("top level", "distributed block 1")),
    ("settings", "settings: {bucket_mb: 4}", "bucket_mb", ("top level", "distributed block 1")),
    ("settings: warmup", "settings: {warmup: -1}", "warmup -1", ("top level", "distributed block 1")),
    ("settings: link_gbit", "settings: {link_gbit: .nan}", "link_gbit nan", ("top level", "distributed block 1")),
    ("memory_cap_gb", "memory_cap_gb: 50000", "memory_cap_gb 50000", ("memory block 1",)),
    ("max_batch", "max_batch: 0", "max_batch 0", ("memory block 1",)),
    ("", "workers: [202], settings: {nodes: 202}", "nodes 202", ("distributed block 1",)),
    ("", f"workers: [{TOO_MANY}]", f"workers {TOO_MANY}", ("distributed block 1",)),
    ("", "workers: [2], settings: {nodes: 2, link_delay_ms: 5}", "link_delay_ms 5", ("distributed block 1",)),
]

PROFILE_ROWS = [(block, key, kv, value) for key, kv, value, blocks in VALUES for block in blocks]


def _profile_text(block: str, kv: str) -> str:
    if block == "top level":  # the whole profile as one flow mapping
        return f"{{{kv}}}\n" if "models:" in kv else f"{{models: [tiny_cnn], {kv}}}\n"
    return "models: [tiny_cnn]\n" + BLOCKS[block].format(kv=kv)


@pytest.mark.parametrize("argv, needle", CLI, ids=[n for _, n in CLI])
def test_bad_command_lines_are_refused_before_any_work(argv, needle, tmp_path, capsys):
    if CLI_SKIPS.get(needle):
        pytest.skip(f"this machine can run it ({needle})")
    results = tmp_path / "results"
    try:
        code = main([*argv, "--results-dir", str(results)] if argv[0] != "peak" else list(argv))
    except SystemExit as exc:  # argparse's own refusal (a switch's value): exit 2 as well
        code = exc.code
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and needle in err, err
    assert "Traceback" not in err
    assert not results.exists()


@pytest.mark.parametrize("block, key, kv, value", PROFILE_ROWS, ids=[f"{b}: {kv}" for b, _, kv, _ in PROFILE_ROWS])
def test_a_bad_value_in_any_block_is_refused_naming_block_key_and_value(block, key, kv, value, tmp_path, capsys):
    if "link_delay_ms" in value and netem_unavailable() is None:
        pytest.skip("this kernel has netem: a link delay can be emulated")
    profile = tmp_path / "p.yaml"
    profile.write_text(_profile_text(block, kv))
    with pytest.raises(ConfigError) as exc:
        load_profile(str(profile))
    message = str(exc.value)
    assert block in message and value in message and f"'{key}'" * bool(key) in message, message
    results = tmp_path / "results"
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and block in err and value in err and len(err.strip().splitlines()) == 1, err
    assert not results.exists()


def test_oversubscription_is_an_explicit_choice(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(f"models: [tiny_cnn]\ndistributed:\n  - {{models: [tiny_cnn], workers: [{TOO_MANY}], "
                       "settings: {oversubscribe: true}}\n")
    (dist,) = [c for c in load_profile(str(profile)).configs if c.distributed]
    assert dist.workers == TOO_MANY and dist.oversubscribe and dist.threads == 1


PIPELINE = ["run", "--framework", "torch", "--model", "resnet18", "--mode", "training", "--strategy", "gpipe",
            "--workers", "2", "--micro-batches", "2", "--image-size", "32"]


@pytest.mark.parametrize("length", [300, 5000])
def test_a_data_dir_longer_than_the_file_system_allows_is_refused(length, tmp_path, capsys):
    results = tmp_path / "r"
    code = main(["run", "--framework", "torch", "--model", "tiny_cnn", "--data", "files", "--data-dir",
                 "/tmp/" + "a" * length, "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "invalid data_dir" in err and "longer than the file system allows" in err
    assert "valid:" in err and len(err) < 600 and not results.exists()
    profile = tmp_path / "p.yaml"
    profile.write_text(f"models: [tiny_cnn]\nsettings: {{data: files, data_dir: /tmp/{'b' * length}}}\n")
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(results)])
    assert code == EXIT_BAD_INPUT and "data_dir" in capsys.readouterr().err and not results.exists()


@pytest.mark.parametrize("cut", ["99", "0", "2,1", "3,3"])
def test_a_pipeline_cut_out_of_range_is_refused_before_any_rank_starts(cut, tmp_path, capsys):
    results = tmp_path / "r"
    code = main([*PIPELINE, "--pipeline-cut", cut, "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and f"pipeline_cut {cut!r} does not cut 15 units into 2 stages" in err
    assert "valid: 1 increasing unit indices from 1 to 14" in err and not results.exists()


@pytest.mark.parametrize("value", ["1", "1.5", "true"])
def test_a_pipeline_cut_that_is_not_text_in_a_profile_is_refused(value, tmp_path, capsys):
    profile = tmp_path / "p.yaml"
    profile.write_text("models: [tiny_cnn]\ndistributed:\n  - {models: [resnet18], strategies: [gpipe], workers: [2], "
                       f"settings: {{micro_batches: 2, pipeline_cut: {value}}}}}\n")
    results = tmp_path / "r"
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "invalid pipeline_cut" in err and "valid choices" in err and "quote" in err
    assert not results.exists()


@pytest.mark.parametrize("value", ["sytem", "System", "conda"])
def test_make_refuses_a_python_env_it_does_not_know(value):
    done = subprocess.run(["make", "-n", "report", f"PYTHON_ENV={value}"], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 2 and f"invalid PYTHON_ENV '{value}'" in done.stderr and "valid choices" in done.stderr


def test_a_node_rank_out_of_range_says_so(tmp_path):
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--mode", "training", "--strategy",
                     "allreduce", "--workers", "2", "--nodes", "2", "--cluster", "h0,h1", "--node-rank", "2",
                     results=tmp_path / "r", timeout=120)
    assert done.returncode == EXIT_BAD_INPUT
    assert "invalid --node-rank 2: out of range for 2 machines (numbered 0..1)" in done.stderr, done.stderr
    assert not (tmp_path / "r").exists()


NULL_RUN = ("run", "--framework", "null", "--model", "tiny_cnn", "--protocol", "seed")


def _file(tmp_path: Path) -> str:
    f = tmp_path / "a-file"
    f.write_text("x")
    return str(f)

# (arguments, text the one-line error must contain); every row: exit 2, no traceback, nothing written
BAD = [
    (NULL_RUN + ("--batch-size", "0"), "batch_size 0"),
    (NULL_RUN + ("--time-budget-s", "nan"), "nan"),
    (NULL_RUN + ("--ci-target", "inf"), "inf"),
    (NULL_RUN + ("--seed", "99999999999"), "99999999999"),
    (NULL_RUN + ("--warmup", "-1"), "-1"),
    (NULL_RUN + ("--phase-iterations", "-2"), "-2"),
    (NULL_RUN + ("--image-size", "0"), "image_size 0"),
    (NULL_RUN + ("--precision", "fp8"), "fp8"),
    (NULL_RUN + ("--device", "tpu"), "tpu"),
    (NULL_RUN + ("--data", "disk"), "disk"),
    (NULL_RUN + ("--engine", "turbo"), "turbo"),
    (NULL_RUN + ("--results-dir", ""), "''"),
    (NULL_RUN + ("--results-dir", "{file}"), "is a file"),
    (NULL_RUN + ("--results-dir", "{file}/sub"), "cannot be created"),
    (("sweep", "--profile", "nosuch"), "nosuch"),
    (("sweep", "--profile", "tiny", "--repeats", "0"), "--repeats 0"),
    (("sweep", "--profile", "tiny", "--results-dir", "{file}"), "is a file"),
    (("report", "--results-dir", "{empty}"), "no results in"),
    (("report", "--results-dir", "{empty}", "--out", "{file}"), "is a file"),
    (("peak", "--threads", "0"), "--threads 0"),
    (("peak", "--threads", "2", "--device", "gpu9"), "gpu9"),
    (("peak", "--threads", "2", "--precision", "fp64"), "fp64"),
    (("flops", "--model", "resnet9000", "--input-size", "224"), "resnet9000"),
    (("flops", "--model", "resnet50", "--input-size", "0"), "--input-size 0"),
    (("flops", "--model", "bert_base", "--input-size", "513"), "--input-size 513"),
    (("fidelity", "--framework", "null", "--model", "tiny_cnn"), "no hand-written loop"),
    (("fidelity", "--framework", "torch", "--model", "tiny_cnn", "--rounds", "0"), "--rounds 0"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    empty = tmp_path / "empty"
    empty.mkdir()
    results = tmp_path / "results"
    subs = {"{file}": _file(tmp_path), "{empty}": str(empty)}
    args = [subs.get(a, a.replace("{file}", subs["{file}"])) for a in args]
    proc = bench_cli(*args, results=results)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not results.exists() and not any(empty.iterdir())


@pytest.mark.parametrize("host", ["..", ".", "a" * 65, "bob:s3cret@h", "a/b", "a b"])
def test_unsafe_host_names_are_refused(tmp_path, host):
    proc = bench_cli(*NULL_RUN, "--results-dir", str(tmp_path / "r"), env={"BENCH_HOST": host})
    assert proc.returncode == 2 and "BENCH_HOST" in proc.stderr and "Traceback" not in proc.stderr
    assert "s3cret" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
