"""What the aggregate notebooks share: load every table once, and show/save figures and tables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..paths import default_results_dir
from ..store import load_records
from .data import published_throughput, ratio_table, runs_table, seed_2019, timed_images_per_sec


@dataclass
class ReportData:
    results_dir: Path
    records: list[dict]
    runs: pd.DataFrame
    ratios: pd.DataFrame
    published: pd.DataFrame
    seed: pd.DataFrame


def load(results_dir=None) -> ReportData:
    """Read every record under results/ (all hosts) into the report's tables."""
    results_dir = Path(results_dir or default_results_dir())
    records = load_records(results_dir)  # read once; every table below derives from these
    runs = runs_table(records)
    ratios = ratio_table(runs, timed_images_per_sec(records)) if not runs.empty else pd.DataFrame()
    seed = seed_2019().replace({"framework": {"pytorch": "torch"}})
    return ReportData(results_dir, records, runs, ratios, published_throughput(), seed)


def show(figs, name: str, figures_dir=None) -> None:
    """Display figure(s) once, save them as PNG under `figures_dir` when given, and free them."""
    from IPython.display import Markdown, display

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


def bullets(lines: list[str]):
    from IPython.display import Markdown

    return Markdown("\n".join(f"- {line}" for line in lines))


def table(df: pd.DataFrame, empty: str = "none"):
    """A DataFrame for display, or a short note when it is empty."""
    from IPython.display import Markdown

    return Markdown(f"*{empty}*") if df is None or df.empty else df
