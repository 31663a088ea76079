"""The report on records from GPU hosts, rendered on any machine: utilisation against the peak of the run's own
device and precision, and hardware sentences computed from the hosts in the results."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.config import make_config
from bench.measurement.peak import peak_key
from bench.measurement.utilisation import utilisation
from bench.report.data import config_tables
from tests.synthetic import _record

H100 = "0, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-aaaa0000\n"


@pytest.fixture
def on_a_gpu_host(monkeypatch):
    """make_config as on a host with one H100 (the records are then read back on this GPU-less machine)."""
    from bench.host import devices

    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(H100, None))


def _procs(device: str, precision: str, ips: float, sweep_id: str = "s1", flops: float = 1e9) -> list[dict]:
    config = make_config(framework="torch", model="resnet50", mode="inference", batch_size=8, protocol="seed",
                         device=device, precision=precision)
    return [_record(config, repeat=i, ips=ips * (1 + 0.001 * i), seed=i, sweep_id=sweep_id, flops=flops,
                    peak=None).to_json() for i in range(3)]


def _peak(device: str, precision: str, records: list[dict], flops_per_sec: float) -> dict:
    key = peak_key(device, precision, records[0]["config"]["threads"] * records[0]["config"]["workers"])
    return {key: {"start": {"flops_per_sec": flops_per_sec, "spread": 0.01}, "end": None}}


def test_each_config_s_utilisation_is_against_its_own_device_and_precision_peak(on_a_gpu_host):
    cpu, fp32, bf16 = _procs("cpu", "fp32", 10.0), _procs("cuda:0", "fp32", 2000.0), _procs("cuda:0", "bf16", 5000.0)
    sweep = {"sweep_id": "s1", "peaks": {**_peak("cpu", "fp32", cpu, 1e11), **_peak("cuda:0", "fp32", fp32, 5e13),
                                         **_peak("cuda:0", "bf16", bf16, 4e14)}}
    _, _, configs = config_tables(cpu + fp32 + bf16, [sweep])
    got = {(r.device, r.precision): (r.utilisation, r.images_per_sec_median) for r in configs.itertuples()}
    # before: every config against the sweep's best peak (the GPU's bf16), so the CPU read 0.003% and fp32 0.5%
    peaks = {("cpu", "fp32"): 1e11, ("cuda:0", "fp32"): 5e13, ("cuda:0", "bf16"): 4e14}
    for (device, precision), peak in peaks.items():
        share, ips = got[(device, precision)]
        assert share == pytest.approx(utilisation(1e9, ips, peak))


def test_a_config_whose_peak_the_sweep_did_not_measure_keeps_its_run_s_own(on_a_gpu_host):
    cpu, gpu = _procs("cpu", "fp32", 10.0), _procs("cuda:0", "bf16", 5000.0)
    for r in cpu:
        r["peak"] = {"flops_per_sec": 2e11}
    sweep = {"sweep_id": "s1", "peaks": _peak("cuda:0", "bf16", gpu, 4e14)}  # the CPU's peak failed or was not asked
    _, _, configs = config_tables(cpu + gpu, [sweep])
    row = configs[configs["device"] == "cpu"].iloc[0]
    assert row["utilisation"] == pytest.approx(utilisation(1e9, row["images_per_sec_median"], 2e11))


def test_identical_gpus_of_one_host_are_one_platform(monkeypatch):
    from bench.host import devices
    from bench.report.data import runs_table

    eight = "".join(f"{i}, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-{i:04d}\n" for i in range(8))
    monkeypatch.setattr(devices, "gpus", lambda: devices.visible_gpus(eight, None))
    runs = runs_table(_procs("cuda:3", "fp32", 2000.0) + _procs("cuda:5", "fp32", 2010.0))
    assert runs["platform"].nunique() == 1  # torch on cuda:3 is not "compared" with torch on cuda:5


def _on_host(records: list[dict], host: str, cores: int, gpus: int) -> list[dict]:
    """The records as a host with `cores` cores and `gpus` H100s would have written them."""
    for r in records:
        r["host"] = host
        r["manifest"]["cpu"]["physical_cores"] = cores
        r["manifest"]["gpus"] = [{"name": "NVIDIA H100 80GB HBM3", "driver": "580.159.04"}] * gpus
    return records


def test_the_study_coverage_says_the_machines_of_the_results_not_of_this_one(on_a_gpu_host, tmp_path):
    from bench.report import answer, studies
    from bench.report.context import load
    from tests.synthetic import write

    records = _on_host(_procs("cuda:0", "bf16", 5000.0) + _procs("cpu", "fp32", 10.0), "gpu-host", 64, 8)
    d = load(write(records, tmp_path))
    why = " ".join(" ".join(studies.coverage_table(d, s)["why not (fully) measured"]) for s in studies.STUDY_TITLES)
    assert "gpu-host: 8 x NVIDIA H100 80GB HBM3" in why and "gpu-host: 64 cores" in why
    assert "no GPU" not in why and "2 cores" not in why  # before: "this machine has no GPU" and "2 cores", always
    assert "8 x NVIDIA H100 80GB HBM3" in answer.machine_line(d.records)
    cpu_only = _on_host(_procs("cpu", "fp32", 10.0), "cpu-host", 2, 0)
    d = load(write(cpu_only, tmp_path / "cpu"))
    why = " ".join(studies.coverage_table(d, "2019")["why not (fully) measured"])
    assert "cpu-host: no GPU" in why and "cpu-host: 2 cores" in why


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_a_nccl_run_s_communication_is_not_predicted_from_a_gloo_fit(tmp_path, backend):
    from bench.report import scaling, scaling_text
    from bench.report.context import load
    from tests.synthetic import dist_record, write

    recs = []
    for rep in range(3):
        recs += [dist_record("independent", 2, 150.0, rep), dist_record("allreduce", 2, 200.0, rep, comm_ms=40.0)]
    for r in recs:
        r["distributed"]["backend"] = backend
    write(recs, tmp_path)
    fit = {"alpha_s": 5e-5, "bandwidth_Bps": 1e9, "r2": 0.99}
    networks = {"test-host": {"loopback x2": {"key": "loopback x2", "fit_allreduce": fit, "fit_p2p": fit}}}
    pred = scaling.predictions(load(tmp_path).scaling.table, networks)
    shown = scaling_text.predictions_for_display(pred).iloc[0]
    if backend == "gloo":  # the backend the link was measured with (a fit without a backend is gloo's)
        assert float(shown["predicted ms"]) > 150 and not pred["flags"].iloc[0]
    else:
        assert shown["predicted ms"].startswith("n/a (link_fit_backend: the run's collectives used nccl")
        assert pd.isna(pred["comm_model_ms"].iloc[0]) and shown["error"].startswith("n/a (")


def test_the_environment_section_shows_what_bench_doctor_found_on_each_host(tmp_path):
    import json

    from bench.report.sections import environment
    from bench.results.doctor import DOCTOR_FILE

    answers = {"torch": {"version": "2.14.1+cu130", "built_for": "CUDA 13.0", "cudnn": "9.10", "nccl": "2.27.7",
                         "gpus": ["cuda:0 NVIDIA H100 80GB HBM3 (sm_90)"], "gpu": None}}
    host = {"gpus": ["0: NVIDIA H100 80GB HBM3 81559 MiB"], "driver": "580.159.04", "driver_cuda": "13.0",
            "nvml": "energy counters readable", "peak": {"cpu": "ready (torch)", "cuda": "ready (torch)"}}
    (tmp_path / "gpu-host").mkdir()
    (tmp_path / "gpu-host" / DOCTOR_FILE).write_text(json.dumps({"frameworks": answers, "host": host, "python": "x"}))
    (tmp_path / "broken-host").mkdir()
    (tmp_path / "broken-host" / DOCTOR_FILE).write_text("{not json")  # a damaged file is left out, not a crash
    (block,) = environment.doctor_blocks(tmp_path)
    assert "`bench doctor` on gpu-host" in block.markdown and "driver: 580.159.04 (CUDA 13.0)" in block.markdown
    assert "2.14.1+cu130" in block.markdown and "device peak on cuda: ready (torch)" in block.markdown
    assert environment.doctor_blocks(tmp_path / "nothing-here") == []


def test_the_2019_p100_and_t4_are_set_beside_a_gpu_hosts_runs(on_a_gpu_host, tmp_path):
    from bench.report.context import load
    from bench.report.sections import then_and_now
    from bench.report.sections.base import Table
    from tests.synthetic import write

    def runs(model: str, mode: str, batch: int, device: str = "cuda:0") -> list[dict]:
        config = make_config(framework="torch", model=model, mode=mode, batch_size=batch, protocol="seed",
                             device=device, precision="fp32")
        return [_record(config, repeat=i, ips=500.0 * (1 + 0.001 * i), seed=i, sweep_id="s1").to_json()
                for i in range(3)]

    cpu_only = load(write(runs("vgg16", "inference", 32, "cpu"), tmp_path / "cpu"))
    assert not any("P100 and T4" in getattr(b, "markdown", "") for b in then_and_now.render(cpu_only).blocks)
    d = load(write(runs("vgg16", "inference", 32) + runs("resnet50", "inference", 64), tmp_path / "gpu"))
    blocks = then_and_now.render(d).blocks
    at = next(i for i, b in enumerate(blocks) if "P100 and T4" in getattr(b, "markdown", ""))
    table = blocks[at + 1]
    assert isinstance(table, Table)
    t = table.frame
    vgg = t[t["model"] == "vgg16"]
    assert set(vgg["then: GPU"]) == {"Tesla P100", "Tesla T4"} and set(vgg["batch"]) == {32}
    assert (vgg["framework"] == "torch").all() and (vgg["then: source"] == "2019 study").all()
    resnet = t[t["model"] == "resnet50"]  # the published T4 figure at batch 64 (fp32, PyTorch)
    assert list(resnet["then: GPU"]) == ["Tesla T4"] and float(resnet["images/s then"].iloc[0]) == 428.0
    here = float(resnet["images/s here"].iloc[0])
    assert resnet["here / then"].iloc[0] == f"{here / 428.0:.1f}x"
