"""What the terminal prints lands in CI and Slurm logs: no secret from a path, and the package's own warnings as plain
sentences (issue 55, items 8 and 9)."""

import json
from pathlib import Path

import pytest

from bench import cli

from .conftest import bench_cli
from .test_user_defects import _jpeg


@pytest.mark.full
def test_a_password_in_a_data_folder_is_never_printed(tmp_path):
    secret = "PW1234567"
    root = tmp_path / f"bench:{secret}@nas" / f"password={secret}" / "imgs"
    (root / "class0").mkdir(parents=True)
    for k in range(4):
        (root / "class0" / f"ok{k}.jpg").write_bytes(_jpeg(k + 1))
    done = bench_cli("run", "--framework", "torch", "--model", "tiny_cnn", "--image-size", "32", "--batch-size", "2",
                     "--data", "files", "--data-dir", str(root), "--protocol", "seed", "--warmup", "1",
                     "--iterations", "2", "--phase-iterations", "0", results=tmp_path / "r", timeout=300)
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout and secret not in done.stderr
    assert "<masked>" in done.stdout  # the summary line is printed, masked
    record = json.loads(next((tmp_path / "r").glob("*/records/*.json")).read_text())
    assert secret not in json.dumps(record)


def test_the_package_s_own_warning_is_a_sentence_without_a_source_line():
    ours = str(Path(cli.__file__).parent / "sweep" / "executors.py")
    said = cli._plain_warning("set aside unreadable record other/records/x.json", UserWarning, ours, 362,
                              "return [r for h in hosts]")
    assert said == "set aside unreadable record other/records/x.json\n"
    theirs = cli._plain_warning("deprecated", DeprecationWarning, "/usr/lib/python3/site-packages/lib.py", 7, "x = 1")
    assert "lib.py:7" in theirs and "DeprecationWarning" in theirs  # a library's warning keeps Python's form


def test_the_cli_prints_a_set_aside_record_as_a_sentence(tmp_path):
    from .conftest import TEST_HOST

    records = tmp_path / TEST_HOST / "records"
    records.mkdir(parents=True)
    (records / "20990101T000000_torn_r0a0_0123456789abcdef.json").write_text('{"schema": 1, "torn')
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nsettings: {image_size: 32}\n")
    done = bench_cli("sweep", "--profile", str(profile), "--list", results=tmp_path)
    said = done.stdout + done.stderr
    assert f"set aside unreadable record {TEST_HOST}/records/20990101T000000_torn" in said, said
    assert "store.py" not in said and "UserWarning" not in said and "warnings.warn(" not in said
