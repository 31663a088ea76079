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

FIXTURES = Path(__file__).parent / "fixtures" / "records"


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
