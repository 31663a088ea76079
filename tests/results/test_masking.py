"""No credential reaches any output: a worker's reason, a record, a notebook, a kernel log, the terminal, the exported
report; records written unmasked before are masked when loaded."""

import json

import nbformat

from bench.host.manifest import mask_text
from bench.results.store import load_records
from bench.sweep.profiles import load_profile
from tests.conftest import bench_cli
from tests.distributed.test_rank_failures import _launch
from tests.surface.test_bad_input import NULL_RUN
from tests.synthetic import record, write

PLANTED = {"TF_DB_URL": "postgres://user:s3cret-url@db.example/x", "MY_SERVICE_TOKEN": "s3cret-token-value"}


def test_a_planted_credential_in_a_workers_output_never_reaches_the_reason(tmp_path, monkeypatch):
    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    worker = ("import os, sys; print('starting with', os.environ['MY_SERVICE_TOKEN']); "
              "raise ValueError('cannot parse TF_DB_URL=' + os.environ['TF_DB_URL'] + ' password=hunter22')")
    reason = _launch(tmp_path, worker)
    assert "ValueError: cannot parse TF_DB_URL=" in reason and "s3cret" not in reason and "hunter22" not in reason


def test_a_planted_credential_never_reaches_a_record_notebook_kernel_log_or_the_terminal(tmp_path, monkeypatch,
                                                                                          capsys):
    from bench.sweep import runner as sweep
    from bench.sweep import task

    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(task.BENCHMARK_NOTEBOOK, as_version=4)
    planted = nbformat.v4.new_code_cell("import os, sys\nprint(os.environ['TF_DB_URL'], file=sys.stderr)\n"
                                        "raise RuntimeError('bad ' + os.environ['TF_DB_URL'] + ' in ' + "
                                        "os.path.expanduser('~/x') + ' token ' + os.environ['MY_SERVICE_TOKEN'])")
    nb.cells.insert(2, planted)  # after the parameters cell
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, broken)
    monkeypatch.setattr(task, "BENCHMARK_NOTEBOOK", broken)
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 1\nretries: 0\nsettings: {protocol: seed}\n")
    results = tmp_path / "results"
    result = sweep.run_sweep(load_profile(str(profile)), results, progress=False)
    [rec] = load_records(results)
    assert rec["status"] == "error" and "RuntimeError: bad" in rec["reason"]
    files = [p for p in results.rglob("*") if p.is_file()]
    assert any(p.suffix == ".ipynb" for p in files)
    shown = capsys.readouterr()
    for text in [p.read_text(errors="replace") for p in files] + [shown.out, shown.err, repr(result.failures)]:
        assert "s3cret" not in text


def test_a_record_written_unmasked_before_is_masked_when_loaded_for_the_report(tmp_path):
    secret = PLANTED["TF_DB_URL"]
    failed = {**record(), "status": "error", "reason": f"ValueError: TF_DB_URL={secret}",
              "traceback": f"Traceback ...\nValueError: TF_DB_URL={secret}"}
    write([failed], tmp_path)
    raw = next(tmp_path.rglob("records/*.json"))
    assert "s3cret" not in raw.read_text()  # written through the store: masked on the way
    data = json.loads(raw.read_text())
    data["reason"] = f"ValueError: TF_DB_URL={secret}"  # as an older checkout wrote it
    raw.write_text(json.dumps(data))
    [loaded] = load_records(tmp_path)
    assert "s3cret" not in loaded.reason and "s3cret" not in json.dumps(loaded.to_json())
    assert loaded.reason.startswith("ValueError: TF_DB_URL=")


def test_mask_text_masks_what_the_manifest_masks():
    env = {"TF_DB_URL": "postgres://u:pw12345678@h/db", "OMP_PASSPHRASE": "s3cret-passphrase"}
    text = mask_text("url postgres://u:pw12345678@h/db phrase s3cret-passphrase at /home/alice/x, key "
                     "AKIAABCDEFGHIJKLMNOP, Authorization: Bearer abcdefghijklmnopqrstuvwxyz", env)
    for secret in ("pw12345678", "s3cret", "alice", "AKIAABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz"):
        assert secret not in text, text
    assert text.startswith("url <masked> phrase <masked> at ~/x, key <masked>"), text


def test_the_exported_report_is_masked_as_it_is_written(tmp_path, monkeypatch):
    """A report notebook whose kernel prints a credential (a warning quoting a record, a framework's error): the
    executed notebook, the HTML made from it and the kernel's log never hold it."""
    from bench.report.export import execute_report, to_html

    monkeypatch.setenv("TEST_ADDR", "bob:s3cret@10.0.0.1")  # planted where the kernel reads it, not in its source
    notebook = tmp_path / "report.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("results_dir = figures_dir = None", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import os, sys\nprint('MASTER_ADDR=' + os.environ['TEST_ADDR'])\n"
                                  "print('at ' + os.environ['TEST_ADDR'], file=sys.stderr)\nos.environ['TEST_ADDR']")],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}), notebook)
    out = tmp_path / "out"
    out.mkdir()
    executed = execute_report(tmp_path, out, notebook)
    html = to_html(executed, out / "report.html")
    for path in (executed, html, out / "kernels.log"):
        assert "s3cret" not in (path.read_text() if path.exists() else ""), path
    assert "MASTER_ADDR=&lt;masked&gt;@10.0.0.1" in html.read_text() or "MASTER_ADDR=<masked>@10.0.0.1" in \
        html.read_text()


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


SECRETS = {f"{prefix}{name}": f"s3cret-{prefix}{name}-value"
           for prefix in ("OMP_", "MKL_", "KMP_", "CUDA_", "NCCL_", "TF_", "XLA_", "JAX_", "ONEDNN_", "DNNL_",
                          "OPENBLAS_", "PYTORCH_", "TORCH_", "MXNET_", "ORT_", "GLOO_")
           for name in ("PASSPHRASE", "PWD", "PAT", "DB_URL", "CLI_CONFIG_FILE", "X")}


def test_no_credential_reaches_any_output(tmp_path):
    env = {**SECRETS, "TF_DB_URL": "postgres://user:s3cret@host/db", "OMP_NUM_THREADS": "2"}
    results = tmp_path / "results"
    proc = bench_cli(*NULL_RUN, "--results-dir", str(results), env=env)
    assert proc.returncode == 0, proc.stderr
    shown = bench_cli("env", env=env).stdout
    texts = [p.read_text(errors="replace") for p in results.rglob("*") if p.is_file()] + [shown, proc.stdout]
    for text in texts:
        assert "s3cret" not in text
    assert json.loads(shown)["env"].get("OMP_NUM_THREADS") == "2"  # allow-listed variables are kept
