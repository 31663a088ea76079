"""Records of formats 1, 2 and 3, written by the code as it was before the record type (commit 5434dad,
tests/fixtures/records/), load and render the same report tables as they did then."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.report import scaling
from bench.report.data import config_tables
from bench.report.sections.environment import environment_table
from bench.report.sections.fairness import fairness_summary
from bench.results.store import load_records, runs_frame

FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"


def _tables(results: Path) -> dict:
    records = load_records(results)
    single = [r for r in records if not r["distributed"]]
    runs, processes, configs = config_tables(single, [])
    tables = {"runs_frame": runs_frame(records), "config_runs": runs, "config_processes": processes,
              "config_configs": configs, "environment": environment_table(records),
              "fairness": fairness_summary(records)}
    distributed = [r for r in records if r["distributed"]]
    if distributed:
        tables["scaling_processes"] = scaling.processes(distributed)
    return tables


@pytest.mark.parametrize("version", [1, 2, 3])
def test_older_formats_render_the_same_tables(version, tmp_path):
    folder = tmp_path / "fixture-host" / "records"
    folder.mkdir(parents=True)
    for path in FIXTURES.glob(f"v{version}_*.json"):
        shutil.copy(path, folder / path.name)
    tables = _tables(tmp_path)
    expected = sorted(p.name.removeprefix(f"tables_v{version}_").removesuffix(".csv")
                      for p in FIXTURES.glob(f"tables_v{version}_*.csv"))
    assert sorted(tables) == expected
    for name, table in tables.items():
        got = table.reindex(sorted(table.columns), axis=1).to_csv(index=False)
        assert got == (FIXTURES / f"tables_v{version}_{name}.csv").read_text(), f"format {version}: {name} differs"


def test_a_ranks_energy_and_memory_dicts_load_as_their_sections_and_write_back_unchanged():
    import json

    from bench.results.record import Energy, Memory, Record

    path = next(FIXTURES.glob("v3_*_training_*.json"))
    data = json.loads(path.read_text())
    energy = {"available": True, "meter": "NVML total energy, GPU 0", "joules": 2.5, "joules_per_image": 0.125,
              "images_per_joule": 8.0, "newer_key": 1}
    memory = {"peak_bytes": 1024, "kind": "CUDA allocator peak (max_memory_allocated)"}
    data["distributed"]["ranks"][0].update(energy=energy, memory=memory)
    record = Record.from_json(data)
    rank = record.distributed.ranks[0]
    assert isinstance(rank.energy, Energy) and rank.energy.joules == 2.5 and rank.energy.unknown == {"newer_key": 1}
    assert isinstance(rank.memory, Memory) and rank.memory.peak_bytes == 1024
    assert record.distributed.ranks[1].energy is None
    assert record.to_json()["distributed"]["ranks"][0] == data["distributed"]["ranks"][0]


def test_a_format_4_records_transformer_and_int8_facts_load_into_their_typed_sections():
    import json

    from bench.results.record import SCHEMA_VERSION, Attention, Int8, OutputsCheck, Record

    path = next((FIXTURES.parent / "tiny_sweep").rglob("records/*.json"))
    data = json.loads(path.read_text())
    assert data["schema_version"] == 4
    attention = {"implementation": "nn.MultiheadAttention", "fused": True, "evidence": "FLASH"}
    check = {"passed": True, "relative_diff": 3e-7, "tolerance": 1e-4, "reference": "torch 2 eager fp32",
             "compiled": {"passed": True, "relative_diff": 4e-7}}
    int8 = {"tool": "nncf", "quantise_s": 1.5, "sets": {"calibration": {"seed": 3301, "images": 32}},
            "agreement": {"top1_agreement": 0.97, "images": 32}, "a_tools_own_detail": "kept"}
    data["settings"] = {**data["settings"], "attention": attention, "outputs_check": check, "int8": int8}
    record = Record.from_json(data)
    assert isinstance(record.attention, Attention) and record.attention.fused is True
    assert isinstance(record.outputs_check, OutputsCheck) and record.outputs_check.relative_diff == 3e-7
    assert isinstance(record.int8, Int8) and record.int8.unknown == {"a_tools_own_detail": "kept"}
    assert not {"attention", "outputs_check", "int8"} & set(record.settings)  # the free settings keep the rest
    written = record.to_json()
    assert written["schema_version"] == SCHEMA_VERSION == 5
    assert (written["attention"], written["outputs_check"], written["int8"]) == (attention, check, int8)
    row = record.to_row()
    assert (row["attention_fused"], row["outputs_passed"], row["int8_tool"], row["int8_top1_agreement"]) == (
        True, True, "nncf", 0.97)
    again = Record.from_json(written)  # format 5 reads back as written
    assert again.to_json() == written


def test_a_runs_settings_keep_their_typed_facts_apart():
    from bench.results.record import Record

    record = Record()
    record.keep_settings({"intra_op_threads": 2, "attention": {"fused": False}, "outputs_check": None})
    assert record.settings == {"intra_op_threads": 2} and record.attention.fused is False
    assert record.outputs_check is None and "outputs_check" not in record.to_json()
