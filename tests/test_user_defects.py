"""Defects found trying the surface as a new user would (issue 44): each refused before any work with exit 2 naming the
value and the valid choices, nothing written; a bad file named and left out; what is kept masked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.cli import main
from bench.commands import EXIT_BAD_INPUT

from .conftest import ROOT, bench_cli

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


def test_a_password_in_a_data_folder_is_masked_in_the_record(tmp_path):
    import dataclasses

    from bench.config import RunConfig
    from bench.results.record import InputPipeline, Record

    folder = "/mnt/bench:PW1234567@nas/password=PW1234567/imgs"
    record = Record.new(RunConfig(framework="null", model="tiny_cnn"))
    record.config = dataclasses.replace(record.config, data_dir=folder)  # as a files run's record is filled
    record.label = f"null tiny_cnn files ({folder})"
    record.input = InputPipeline.from_json({"root": folder})
    text = json.dumps(record.to_json())
    assert "PW1234567" not in text and text.count("<masked>") >= 3


def test_compare_into_a_missing_folder_is_refused(tmp_path, capsys):
    fixture = str(ROOT / "tests" / "fixtures" / "tiny_sweep")
    code = main(["compare", fixture, fixture, "--csv", str(tmp_path / "missing" / "folder" / "t.csv")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "does not exist" in err and "valid:" in err
    assert not (tmp_path / "missing").exists()


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


def _jpeg(seed: int) -> bytes:
    import io

    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray((np.random.default_rng(seed).random((40, 48, 3)) * 255).astype("uint8")).save(buf, "JPEG")
    return buf.getvalue()


def _bad_jpegs(folder) -> dict[str, str]:
    """A file with start and end markers and no image data, one whose header claims 65500 x 65500 px, and one whose
    scan header is followed by nothing: what each is refused for."""
    good = _jpeg(0)
    sof = good.index(b"\xff\xc0")
    huge = bytearray(good)
    huge[sof + 5:sof + 9] = (65500).to_bytes(2, "big") * 2
    sos = good.index(b"\xff\xda")
    scan_header = good[:sos + 2 + int.from_bytes(good[sos + 2:sos + 4], "big")]
    files = {"empty.jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9",
             "huge.jpg": bytes(huge), "noscan.jpg": scan_header + b"\xff\xd9"}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return {"empty.jpg": "no image data", "huge.jpg": "claims 65500 x 65500 px", "noscan.jpg": "no image data"}


def test_a_jpeg_without_image_data_or_with_a_huge_header_is_named_and_left_out(tmp_path):
    """Before: both passed the screen; the run failed with 'Caught RuntimeError in DataLoader worker process 0'
    (or tried to allocate 12.9 GB per worker) and named no file. Now the screen names them and the run reads the
    rest."""
    folder = tmp_path / "imgs" / "class0"
    folder.mkdir(parents=True)
    for k in range(4):
        (folder / f"ok{k}.jpg").write_bytes(_jpeg(k + 1))
    bad = _bad_jpegs(folder)
    from bench.images.files import scan

    found = scan(tmp_path / "imgs")
    assert sorted(found.paths) == [f"class0/ok{k}.jpg" for k in range(4)]
    reasons = {s["path"].split("/")[-1]: s["reason"] for s in found.skipped}
    assert set(reasons) == set(bad) and all(bad[n] in reasons[n] for n in bad), reasons


@pytest.mark.full
def test_a_run_over_a_folder_with_bad_jpegs_reads_the_rest(tmp_path):
    folder = tmp_path / "imgs" / "class0"
    folder.mkdir(parents=True)
    for k in range(4):
        (folder / f"ok{k}.jpg").write_bytes(_jpeg(k + 1))
    _bad_jpegs(folder)
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--batch-size", "2",
                     "--data", "files", "--data-dir", str(tmp_path / "imgs"), "--protocol", "seed", "--warmup", "1",
                     "--iterations", "2", "--phase-iterations", "0", results=tmp_path / "r", timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(next((tmp_path / "r").glob("*/records/*.json")).read_text())
    assert record["status"] == "ok" and record["input"]["skipped_count"] == 3


def test_a_folder_of_distributed_runs_only_renders_every_section(tmp_path):
    """Before: the details failed on an empty single-process frame (KeyError 'status' in the parity table) and no PDF
    was written; page 1 said 'No results yet'. Now every section renders, and page 1 says where the runs are."""
    import shutil

    from bench.report.context import load
    from bench.report.sections import REPORT, show_all
    from bench.report.sections.details import DETAILS

    source = ROOT / "tests" / "fixtures" / "tiny_sweep" / "test-host" / "records"
    target = tmp_path / "test-host" / "records"
    target.mkdir(parents=True)
    for path in source.glob("*.json"):
        if json.loads(path.read_text()).get("distributed"):
            shutil.copy(path, target / path.name)
    d = load(tmp_path)
    n = len(d.scaling.records)
    assert n >= 2 and d.runs.empty and f"this folder holds {n} distributed runs only" in d.only_distributed()
    show_all(REPORT, d, tmp_path / "figures")
    show_all(DETAILS, d, tmp_path / "figures")


def test_foreign_sweep_manifests_and_records_are_set_aside_and_said(tmp_path, capsys):
    fixture = next((ROOT / "tests" / "fixtures" / "tiny_sweep").glob("*/sweeps/*.json"))
    good = json.loads(fixture.read_text())
    other = tmp_path / "other" / "sweeps"
    other.mkdir(parents=True)
    bad = {"list.json": [1, 2], "text.json": "a sweep", "peaks.json": {**good, "peaks": [1, 2]},
           "started.json": {**good, "started": 12345}}
    for name, data in bad.items():
        (other / name).write_text(json.dumps(data))
    (tmp_path / "other" / "records").mkdir()
    (tmp_path / "other" / "records" / "20990101T000000_torn_r0a0_0123456789abcdef.json").write_text("{torn")
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\n")
    from bench.results.sweep_manifest import load_sweeps
    from bench.sweep.executors import _all_hosts

    assert load_sweeps(tmp_path) == []
    code = main(["sweep", "--profile", str(profile), "--list", "--results-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "todo" in out
    for name in bad:
        assert f"set aside an unreadable sweep manifest (the plan goes on without it): other/sweeps/{name}" in out
    assert "a JSON list, not a sweep manifest" in out and "data.peaks must be object" in out
    with pytest.warns(UserWarning, match="set aside unreadable record other/records/20990101T000000_torn"):
        assert _all_hosts(tmp_path) == []
    assert (tmp_path / "other" / "records" / "20990101T000000_torn_r0a0_0123456789abcdef.json").exists()


def test_repeats_above_an_adaptive_profiles_max_repeats_says_which_wins(tmp_path, capsys):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: adaptive\nmin_repeats: 2\nmax_repeats: 3\n"
                       "retries: 0\n")
    code = main(["sweep", "--profile", str(profile), "--list", "--repeats", "4", "--results-dir", str(tmp_path)])
    assert code == 0 and "--repeats 4 is above the profile's max_repeats 3: --repeats wins" in capsys.readouterr().out


LEAKY_SITE = '''import os, sys
if os.environ.get("LEAK_TEST"):
    sys.stderr.write(f"pid {os.getpid()} HF={os.environ.get('HF_TOKEN')} MA={os.environ.get('MASTER_ADDR')}\\n")
'''
SECRETS = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123456789", "AWS_SECRET_ACCESS_KEY": "SuperSecretAwsKey123",
           "MASTER_ADDR": "user:hunter22pw@node1", "LEAK_TEST": "1"}


def _leaky_env(tmp_path) -> dict:
    """Every Python process started with this environment prints the secrets to stderr as it starts (a
    sitecustomize on PYTHONPATH): the masker itself too, unless it starts isolated."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LEAKY_SITE)
    return {**os.environ, **SECRETS, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}


def test_the_slurm_jobs_masker_starts_isolated_so_nothing_prints_past_it(tmp_path):
    """Before: the masker (a Slurm job's interpreter) ran a sitecustomize on the PYTHONPATH before masking, and its
    stderr went straight to the job's log, secrets verbatim."""
    from bench.masking import masked_command

    done = subprocess.run(f"{masked_command()} -c 'print(42)'", shell=True, capture_output=True, text=True,
                          env=_leaky_env(tmp_path), timeout=60)
    text = done.stdout + done.stderr
    assert done.returncode == 0 and "42" in text and "<masked>" in text  # the child printed, masked
    assert not any(v in text for k, v in SECRETS.items() if k != "LEAK_TEST"), text


@pytest.mark.full
def test_slurm_job_logs_keep_no_secret(slurm_cluster, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\n"
                       "settings: {image_size: 32, warmup: 1, iterations: 2, protocol: seed}\n")
    env = {**_leaky_env(tmp_path), **slurm_cluster}
    done = subprocess.run([sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir",
                           str(tmp_path / "r"), "--executor", "slurm"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    logs = list((tmp_path / "r").glob("*/slurm-jobs/*/*_log.*"))
    text = "".join(p.read_text(errors="replace") for p in logs)
    assert logs and "<masked>" in text  # the job's processes printed, masked
    assert not any(v in text for k, v in SECRETS.items() if k != "LEAK_TEST")


def test_run_json_prints_the_record_alone_on_stdout(tmp_path):
    """`bench run --json | jq` must read one JSON document: the summary lines (and what a framework prints while it
    works, NNCF's progress bar for one) go to stderr. Until 2026-11-28 the summary followed the JSON on stdout."""
    import json

    from .conftest import bench_cli

    out = bench_cli("run", "--framework", "null", "--model", "tiny_cnn", "--image-size", "16", "--batch-size", "2",
                    "--protocol", "seed", "--warmup", "1", "--iterations", "2", "--json", results=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)  # raises on anything beside the one document
    assert record["status"] == "ok" and record["config"]["framework"] == "null"
    assert "record: " in out.stderr and "img/s" in out.stderr
