"""Energy per image and GPU labels without a GPU or a power meter: readings from fake counters, the distributed
total, the reasons when nothing is readable, and the report's images-per-joule and hardware columns (synthetic)."""

from __future__ import annotations

import pytest

from bench.host import energy
from bench.host.devices import interconnect_from_topology
from bench.report import scaling_text as ST
from bench.report.context import load
from bench.report.energy import energy_table
from bench.runs.distributed import record as dist_records
from tests.synthetic import config_key_of, dist_record, on_gpus, record, with_energy, write

H100 = "NVIDIA H100 80GB HBM3"


def test_images_per_joule_is_images_over_joules():
    reading = energy.measured("a meter", joules=40.0, images=100)
    assert reading["images_per_joule"] == pytest.approx(2.5) and reading["joules_per_image"] == pytest.approx(0.4)
    assert energy.measured("a meter", 0.0, 100)["images_per_joule"] is None  # a counter that did not move: no rate


def test_a_distributed_total_adds_every_devices_reading_or_says_why_not():
    gpus = [energy.measured("NVML, GPU 0", 30.0, 60), energy.measured("NVML, GPU 1", 10.0, 60)]
    total = energy.total(gpus, images=120)
    assert total["available"] and total["joules"] == pytest.approx(40.0)
    assert total["images_per_joule"] == pytest.approx(3.0) and "sum of 2 readings" in total["meter"]
    missing = energy.total([gpus[0], {"available": False, "reason": "pynvml is not installed"}], images=120)
    assert missing == {"available": False, "reason": "pynvml is not installed"}  # never a partial sum
    assert energy.total([], 120) == {"available": False, "reason": "no rank measured energy"}


def _rapl(tmp_path, monkeypatch, value: str | None, max_range: str = "1000000000"):
    monkeypatch.setattr(energy, "RAPL", tmp_path)
    if value is None:
        return
    package = tmp_path / "intel-rapl:0"
    package.mkdir()
    (package / "max_energy_range_uj").write_text(max_range)
    if value == "root-only":
        (package / "energy_uj").mkdir()  # reading it fails as a root-only counter's read does (OSError)
    else:
        (package / "energy_uj").write_text(value)


def test_rapl_reason_names_a_virtual_machine_when_there_are_no_counters(tmp_path, monkeypatch):
    _rapl(tmp_path, monkeypatch, None)
    with energy.EnergyMeter() as meter:
        pass
    result = meter.result(images=10)
    assert not result["available"]
    assert "no RAPL power meter" in result["reason"] and "virtual machine" in result["reason"]


def test_rapl_reason_names_root_only_counters(tmp_path, monkeypatch):
    _rapl(tmp_path, monkeypatch, "root-only")
    result = energy.EnergyMeter().result(images=10)
    assert not result["available"] and "readable by root only" in result["reason"]


def test_rapl_energy_over_a_block_with_the_counter_wrapping(tmp_path, monkeypatch):
    _rapl(tmp_path, monkeypatch, "999000000")  # 1 J before the counter's range ends
    meter = energy.EnergyMeter()
    with meter:
        (tmp_path / "intel-rapl:0" / "energy_uj").write_text("4000000")  # wrapped: 1 J + 4 J
    result = meter.result(images=50)
    assert result["available"] and result["joules"] == pytest.approx(5.0)
    assert result["images_per_joule"] == pytest.approx(10.0)


def _placed(rank: int, host: str, device: str):
    from bench.results.record import Rank
    from bench.runs.distributed.rank_loop import RankResult

    section = Rank(rank=rank, role="worker", node=0, samples=0, phases_median_ms=None, peak_rss_bytes=None,
                   device=device)
    return RankResult(section, steps=[], warmup_s=[], host=host, settings=None, params=None, grad_bytes=None,
                      backend=None)


def test_gpu_link_counts_gpus_and_names_a_shared_gpu(monkeypatch):
    shared = [_placed(i, "h", "cuda:0") for i in range(2)]
    assert dist_records.gpu_link(shared) == {"gpus": 1, "interconnect": "one GPU shared by 2 ranks"}
    monkeypatch.setattr(dist_records, "gpu_interconnect", lambda indices: f"NVLink between {indices}")
    own = [_placed(i, "h", f"cuda:{i}") for i in range(4)]
    assert dist_records.gpu_link(own) == {"gpus": 4, "interconnect": "NVLink between [0, 1, 2, 3]"}
    assert dist_records.gpu_link([_placed(0, "h", "cpu")]) == {}


TOPOLOGY = ("\x1b[4m\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
            "GPU0\t X \tNV18\tSYS\t0-55\t0\n"
            "GPU1\tNV18\t X \tSYS\t0-55\t0\n"
            "GPU2\tSYS\tSYS\t X \t56-111\t1\n\n"
            "Legend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n")


def test_interconnect_is_the_slowest_hop_of_the_topology_matrix():
    assert interconnect_from_topology(TOPOLOGY, [0, 1]) == "NVLink"
    assert interconnect_from_topology(TOPOLOGY, [0, 1, 2]) == "PCIe + inter-socket link (SMP)"
    assert interconnect_from_topology(TOPOLOGY, [0, 7]) == "unknown"


def _scaling_records() -> list[dict]:
    recs = []
    for rep in range(2):
        cpu = [dist_record("independent", 1, 100.0, rep), dist_record("allreduce", 2, 120.0, rep)]
        recs += [with_energy(r, None, "no RAPL power meter (a virtual machine)") for r in cpu]
        one = on_gpus(dist_record("independent", 1, 10.0, rep), H100, 1, "single GPU", "bf16")
        two = on_gpus(dist_record("allreduce", 2, 11.0, rep), H100, 2, "NVLink", "bf16")
        recs += [with_energy(one, 4.0 + rep, meter="NVML"), with_energy(two, 6.0 + 2 * rep, meter="NVML")]
    return recs


def test_scaling_rows_carry_the_gpu_label_and_images_per_joule(tmp_path):
    write(_scaling_records(), tmp_path)
    shown = ST.scaling_for_display(load(tmp_path).scaling.table)
    by_hardware = dict(zip(shown["hardware"], shown["images/J"]))
    assert by_hardware[f"2 x {H100}, NVLink, bf16"] == "7"  # mean over the two processes (6 and 8)
    assert by_hardware[f"1 x {H100}, single GPU, bf16"] == "4.5"
    cpu = shown[~shown["hardware"].str.contains(H100)]
    assert len(cpu) == 2 and all(cpu["images/J"] == "not measured: no RAPL power meter (a virtual machine)")
    assert all(cpu["hardware"].str.endswith(", fp32"))


def test_columns_that_say_nothing_row_by_row_are_left_out_of_the_printed_scaling_table(tmp_path):
    cpu = [with_energy(dist_record(s, w, ms, rep), None, "no RAPL power meter (a virtual machine)")
           for rep in range(2) for s, w, ms in (("independent", 1, 100.0), ("allreduce", 2, 120.0))]
    write(cpu, tmp_path)
    shown = ST.scaling_for_display(load(tmp_path).scaling.table)
    # one machine, no energy measured, nothing flagged: the page-1 machine line and the details say those once
    assert not {"hardware", "images/J", "flags"} & set(shown.columns)
    assert {"run", "images/s [95% CI]", "efficiency [CI]"} <= set(shown.columns)


def test_gpu_rows_keep_their_own_one_gpu_baseline(tmp_path):
    write(_scaling_records(), tmp_path)
    table = load(tmp_path).scaling.table
    gpu = table[(table["device"] == "cuda:0") & (table["workers"] == 2)].iloc[0]
    # 2 GPUs at 11 ms vs 1 GPU at 10 ms per step (weak scaling): about 91% efficient, never against the CPU rows
    assert gpu["efficiency"] == pytest.approx(10.0 / 11.0, rel=0.05)


def test_per_hardware_energy_table_gives_images_per_joule_or_the_reason(tmp_path):
    measured = [with_energy(record(batch_size=8, repeat=k, seed=k), 2.0 + k) for k in range(3)]
    unmeasured = [with_energy(record(batch_size=16, repeat=k, seed=k), None, "RAPL counters exist but are readable "
                                                                            "by root only") for k in range(2)]
    write(measured + unmeasured, tmp_path)
    table = energy_table(load(tmp_path).runs)
    rows = {r["batch"]: r for _, r in table.iterrows()}
    assert rows[8]["images/J"] == "3" and rows[8]["measured"] == 3  # median of 2, 3, 4
    assert rows[16]["images/J"] == "not measured: RAPL counters exist but are readable by root only"


def test_rank_table_shows_each_gpu_rank_s_memory_utilisation_and_energy():
    from bench.report.views import rank_table
    from bench.results.record import Record

    rec = on_gpus(dist_record("allreduce", 2, 11.0), H100, 2, "NVLink", "bf16")
    for k, rank in enumerate(rec["distributed"]["ranks"]):
        rank.update(memory={"peak_bytes": (k + 1) * 2**30, "kind": "CUDA caching allocator peak"}, utilisation=0.25,
                    energy=energy.measured("NVML total energy, GPU 0", 10.0, 50) if k == 0
                    else {"available": False, "reason": "pynvml is not installed"})
    html = rank_table(Record.from_json(rec)).data
    assert "GPU peak MiB" in html and ">1024<" in html and ">2048<" in html and ">25%<" in html
    assert ">5<" in html and "not measured: pynvml is not installed" in html and ">cuda:1<" in html
    cpu = rank_table(Record.from_json(dist_record("allreduce", 2, 11.0))).data
    assert "GPU peak MiB" not in cpu


def _gpu_rank(k: int, joules: float, step_s: float = 0.1, reading: dict | None = None):
    """A GPU rank's result as the rank loop makes it (its section from its steps and readings)."""
    from bench.adapters.ranks import Replica
    from bench.runs.distributed.rank_loop import RankResult, rank_section

    steps = [{"step_s": step_s, "forward_s": step_s / 2, "backward_s": step_s / 2}] * 4
    section = rank_section(Replica(k, f"cuda:{k}", host="h"), steps, 8, None, {}, (None, None),
                           reading or energy.measured(f"NVML total energy, GPU {k}", joules, 8 * 4),
                           {"peak_bytes": (k + 1) * 2**30, "kind": "CUDA caching allocator peak"})
    return RankResult(section, steps, [step_s], "h", {}, 1000, None, None)


def _fill_from_ranks(record, config, ranks) -> None:
    from bench.runs.fill import fill

    record.distributed = dist_records.distributed_section(config, ranks, [], {"kind": "loopback"}, "torchrun")
    fill(record, config, dist_records.measured(config, ranks, [], {"judged": False}), None)


def test_a_gpu_run_s_record_sums_energy_and_keeps_gpu_memory_and_utilisation_per_rank(monkeypatch):
    from bench.config import make_config
    from bench.results.record import ModelInfo, Peak, Record
    from bench.runs.distributed.run import gpu_utilisation

    monkeypatch.setattr(dist_records, "gpu_interconnect", lambda indices: "NVLink")
    config = make_config(framework="torch", model="tiny_cnn", mode="training", image_size=16, batch_size=8,
                         strategy="allreduce", workers=2, iterations=4)
    rec = Record.new(config)
    _fill_from_ranks(rec, config, [_gpu_rank(0, 4.0), _gpu_rank(1, 12.0, step_s=0.2)])
    assert rec.energy.available and rec.energy.joules == pytest.approx(16.0)
    assert rec.energy.images_per_joule == pytest.approx(16 * 4 / 16.0)  # global batch x steps / summed joules
    assert (rec.memory.peak_bytes, rec.memory.total_peak_bytes) == (2 * 2**30, 3 * 2**30)
    assert "per-GPU peak" in rec.memory.kind
    assert rec.distributed.link["gpus"] == 2 and rec.distributed.link["interconnect"] == "NVLink"
    assert [r.images_per_sec for r in rec.distributed.ranks] == [pytest.approx(80.0), pytest.approx(40.0)]
    rec.model, rec.peak, rec.utilisation = ModelInfo(flops_per_image=1e9), Peak(flops_per_sec=1e12), 0.08
    gpu_utilisation(rec)
    assert [r.utilisation for r in rec.distributed.ranks] == [pytest.approx(0.08), pytest.approx(0.04)]
    assert rec.utilisation == pytest.approx(0.04)  # the run's share of both GPUs' peak
    unread = _gpu_rank(1, 0.0, reading={"available": False, "reason": "pynvml is not installed"})
    rec = Record.new(config)
    _fill_from_ranks(rec, config, [_gpu_rank(0, 4.0), unread])
    assert not rec.energy.available and rec.energy.reason == "pynvml is not installed"


def test_per_hardware_charts_name_a_gpu_with_its_count_and_interconnect(tmp_path):
    """A single run on a GPU is labelled in the per-hardware tables and charts as what it ran on (one GPU of that
    model, no interconnect); a CPU row keeps the CPU's name."""
    cpu = record(batch_size=8)
    gpu = record(batch_size=8, repeat=1, seed=1)
    gpu["config"]["device"], gpu["hardware"] = "cuda:0", H100
    gpu["config_key"] = config_key_of(gpu["config"])  # the key of the config it now holds
    write([cpu, gpu], tmp_path)
    platforms = set(load(tmp_path).runs["platform"])
    assert f"1 x {H100}, single GPU [test-host]" in platforms
    assert any(p.endswith("[test-host]") and H100 not in p for p in platforms)
