"""What the aggregate notebooks share: load every table once, and show/save figures and tables."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display

from ..adapters import framework_of
from ..paths import default_results_dir
from ..results.links import fitted
from ..results.record import Record
from ..results.searches import load_searches
from ..results.store import load_records
from ..results.sweep_manifest import SweepManifest, load_sweeps
from ..stats.judge import Judge
from . import parallelism, scaling
from .data import config_tables, published_throughput, runs_table, seed_2019, spell_readings
from .estimates import best_batch_table, ratio_table, summary_table
from .input_pipeline import input_table
from .memory import searches_table
from .scaling import is_distributed


@dataclass
class ReportData:
    results_dir: Path
    records: list[Record]
    sweeps: list[SweepManifest]
    runs: pd.DataFrame  # one row per record (every status and attempt that counts)
    processes: pd.DataFrame  # one row per successful process
    configs: pd.DataFrame  # one row per config: process-level estimate, CI, flags, soundness
    ratios: pd.DataFrame
    summary: pd.DataFrame
    published: pd.DataFrame
    seed: pd.DataFrame
    scaling: ScalingData | None = None  # distributed runs: their own tables, never mixed with the above
    memory: pd.DataFrame | None = None  # largest-batch searches (bench/runs/maxbatch.py), one row per search
    judge: Judge = field(default_factory=Judge)  # every verdict's rules: the newest sweep's margin
    best: pd.DataFrame | None = None  # per model and mode: every framework at its best batch, the top two compared
    # data mode `files` (the framework's own input pipeline): its own table beside its synthetic siblings, never
    # mixed into the framework comparisons above (bench/report/input_pipeline.py)
    inputs: pd.DataFrame | None = None
    input_records: list[Record] = field(default_factory=list)  # the `files` runs themselves (a sweep's coverage)
    max_repeats: int | None = None  # the newest adaptive sweep's process cap per config (None: no adaptive sweep)
    # the successful attempts a retry replaced (a disturbed run): one row each, drawn in the drift figure
    replaced: pd.DataFrame = field(default_factory=pd.DataFrame)
    # each sweep's speed reference readings: sweep id -> [(position, step seconds)] (bench/measurement/spells.py)
    speed_readings: dict = field(default_factory=dict)

    def only_distributed(self) -> str | None:
        """Where there are no single-process runs but distributed ones (a named profile run on its own), what page 1
        says instead of 'no results yet': where they are. None otherwise."""
        n = len(self.scaling.records) if self.scaling and self.runs.empty else 0
        if not n:
            return None
        return (f"no single-process runs: this folder holds {n} distributed run{'s' * (n != 1)} only, in "
                "*Distributed data-parallel training* (and the details); the answer compares single-process runs")


@dataclass
class ScalingData:
    records: list[Record]  # every distributed record (any status)
    processes: pd.DataFrame
    table: pd.DataFrame  # per config: throughput, communication cost, efficiency
    networks: dict  # host -> link key -> alpha-beta fit (results/<host>/network.json)
    predictions: pd.DataFrame
    curves: pd.DataFrame  # accuracy over time (digits runs)
    accuracy: pd.DataFrame  # accuracy at equal wall time
    published: pd.DataFrame  # published scaling points as efficiency
    parallelism: pd.DataFrame | None = None  # data parallel beside model parallel, GPipe and 1F1B (same batch)


def load_scaling(records: list[Record], results_dir: Path, judge: Judge) -> ScalingData:
    dist = [r for r in records if scaling.is_distributed(r)]
    procs = scaling.processes(dist)
    cfgs, spreads = scaling.configs_and_spreads(procs)  # the moderated spreads fitted once, for both tables below
    table = scaling.scaling_table(cfgs, judge, spreads)
    networks = {host: fitted(results_dir, host) for host in sorted({r.host for r in dist})}
    curves = scaling.accuracy_curves(procs)
    return ScalingData(dist, procs, table, networks, scaling.predictions(table, networks), curves,
                       scaling.accuracy_at_equal_time(curves),
                       scaling.published_efficiency(scaling.published_scaling()),
                       parallelism.table(dist, table, judge, spreads))


def load(results_dir=None) -> ReportData:
    """Read every record and sweep manifest under results/ (all hosts) into the report's tables."""
    results_dir = Path(results_dir or default_results_dir())
    everything = load_records(results_dir)  # read once; every table below derives from these
    single = [r for r in everything if not is_distributed(r)]
    records = [r for r in single if r.config.data != "files"]
    files = [r for r in single if r.config.data == "files"]
    sweeps = load_sweeps(results_dir)
    # every single-process config estimated once, real-files ones included (one prior per platform for every
    # single-process comparison); the files configs then leave the framework tables for their own section
    every_run, every_process, every_config = config_tables(records + files, sweeps)
    runs, processes, configs = (_synthetic(t) for t in (every_run, every_process, every_config))
    seed = seed_2019()
    seed["framework"] = seed["framework"].map(framework_of)  # the 2019 tables say 'pytorch'
    judge = Judge.of_sweeps([m.equivalence_margin for m in sorted(sweeps, key=lambda m: str(m.started or ""))])
    return ReportData(results_dir, records, sweeps, runs, processes, configs, ratio_table(configs, judge),
                      summary_table(configs, judge), published_throughput(), seed,
                      load_scaling(everything, results_dir, judge),
                      searches_table(load_searches(results_dir)), judge, best_batch_table(configs, judge),
                      _input_table(every_config, files, judge), files, max_repeats_of(sweeps),
                      _replaced(results_dir, records, processes), spell_readings(sweeps))


def _replaced(results_dir: Path, records: list[Record], processes: pd.DataFrame) -> pd.DataFrame:
    """The successful single-process attempts on synthetic data that a later attempt replaced, as runs-table rows."""
    counted = {r.record_id for r in records}
    older = [r for r in load_records(results_dir, latest=False, skipped=[]) if r.record_id not in counted and r.ok
             and not is_distributed(r) and r.config.data != "files"]
    if not older or processes.empty:
        return pd.DataFrame()
    runs = runs_table(older)
    return runs[runs["config_key"].isin(processes["config_key"])].reset_index(drop=True) if not runs.empty else runs


def max_repeats_of(sweeps: list[SweepManifest]) -> int | None:
    """The newest adaptive sweep's `max_repeats` (what a row at the cap cannot get more of in one sweep)."""
    caps = [m.adaptive.max_repeats for m in sorted(sweeps, key=lambda m: str(m.started or ""))
            if m.adaptive and m.adaptive.max_repeats]
    return caps[-1] if caps else None


def _synthetic(table: pd.DataFrame) -> pd.DataFrame:
    """A config table's rows on synthetic data (the framework comparisons'): real-files runs have their own section."""
    if table.empty or "data" not in table:
        return table
    return table[table["data"] != "files"].reset_index(drop=True)


def _input_table(every_config: pd.DataFrame, files: list[Record], judge: Judge):
    """Files against synthetic data, each side's spread moderated with the sweep's other single-process configs
    (estimated together, as every comparison is; the files configs still never enter the framework tables)."""
    if not files:
        return None
    return input_table(every_config[every_config["data"] == "files"], every_config, files, judge)


def show(figs, name: str, figures_dir=None) -> None:
    """Display figure(s) once, save them as PNG under `figures_dir` when given, and free them."""
    figs = [f for f in (figs if isinstance(figs, list) else [figs]) if f is not None]
    if not figs:
        display(Markdown(f"*No data for this figure yet ({name}).*"))
        return
    for i, fig in enumerate(figs):
        if figures_dir:
            Path(figures_dir).mkdir(parents=True, exist_ok=True)
            fig.savefig(Path(figures_dir) / f"{name}_{i + 1}.png", dpi=110, bbox_inches="tight")
        display(fig)
        plt.close(fig)


CODE_SPAN = re.compile(r"`([^`<>\n]+)`")


def table(df: pd.DataFrame, empty: str = "none"):
    """A DataFrame for display without its index (row numbers mean nothing to a reader), or a note."""
    if df is None or df.empty:
        return Markdown(f"*{empty}*")
    html = df.to_html(index=False, escape=True, na_rep="", classes="report-table", border=0)
    # a cell's `code` (a command, an option) reads as code, never as raw backticks
    return HTML(CODE_SPAN.sub(r"<code>\1</code>", html))
