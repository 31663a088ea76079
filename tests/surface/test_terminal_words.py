"""What a reader sees said: the terminal (it lands in CI and Slurm logs: no secret from a path, the package's own
warnings as plain sentences) and page 1's words (issue 55)."""

import json
from pathlib import Path

import pytest

from bench import cli
from tests.adapters.test_input_pipeline import _jpeg
from tests.conftest import bench_cli


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
    from tests.conftest import TEST_HOST

    records = tmp_path / TEST_HOST / "records"
    records.mkdir(parents=True)
    (records / "20990101T000000_torn_r0a0_0123456789abcdef.json").write_text('{"schema": 1, "torn')
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nsettings: {image_size: 32}\n")
    done = bench_cli("sweep", "--profile", str(profile), "--list", results=tmp_path)
    said = done.stdout + done.stderr
    assert f"set aside unreadable record {TEST_HOST}/records/20990101T000000_torn" in said, said
    assert "store.py" not in said and "UserWarning" not in said and "warnings.warn(" not in said


def test_an_int8_row_gives_its_speed_up_over_its_own_fp32(tmp_path):
    from bench.report import throughput_grid as G
    from bench.report.context import load
    from bench.report.estimates import framework_grid, int8_pairs
    from tests.synthetic import record, write

    runs = []
    for r in range(3):
        runs += [record(framework="openvino", batch_size=16, repeat=r, seed=r, ips=10.0 * (1 + 0.01 * r)),
                 record(framework="openvino", batch_size=16, repeat=r, seed=10 + r, ips=40.0 * (1 + 0.01 * r),
                        precision="int8"),
                 record(framework="torch", batch_size=16, repeat=r, seed=20 + r, ips=9.0 * (1 + 0.01 * r))]
    data = load(write(runs, tmp_path))
    grid = framework_grid(data.configs, data.judge)
    table = G.images_table(grid, data.summary, data.best, data.judge, int8_pairs(data.configs, data.judge))
    [int8] = [row for _, row in table.iterrows() if "int8" in " ".join(map(str, row.values))]
    cell = int8["fastest vs runner-up"]
    assert cell.startswith("winner: 4.0") and cell.endswith("over its fp32"), cell  # never "-"


def test_pytorch_is_named_by_one_version_and_its_build_kept_apart():
    from bench.adapters import ADAPTERS

    torch = ADAPTERS.get("torch")
    info = torch.info()
    assert info["version"] == torch.version()  # what every record's framework_version says: one wheel, one name
    assert info["build_version"].startswith(info["version"])  # 2.14.1+cu130: the build, said apart


def test_run_json_prints_the_record_alone_on_stdout(tmp_path):
    """`bench run --json | jq` must read one JSON document: the summary lines (and what a framework prints while it
    works, NNCF's progress bar for one) go to stderr. Until 2026-11-28 the summary followed the JSON on stdout."""
    import json

    from tests.conftest import bench_cli

    out = bench_cli("run", "--framework", "null", "--model", "tiny_cnn", "--image-size", "16", "--batch-size", "2",
                    "--protocol", "seed", "--warmup", "1", "--iterations", "2", "--json", results=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)  # raises on anything beside the one document
    assert record["status"] == "ok" and record["config"]["framework"] == "null"
    assert "record: " in out.stderr and "img/s" in out.stderr
