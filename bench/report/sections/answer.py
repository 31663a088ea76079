"""Page 1's answer: images/s [95% CI] of every framework at its best engine per model, mode, precision and batch, the
fastest starred with the row's verdict and the fastest against PyTorch, then one picture of every comparison page 1
judges (bench/report/throughput_grid.py, bench/report/verdict_figure.py). The verdict words are the methodology's."""

from __future__ import annotations

from ..answer import decided_line
from ..estimates import framework_grid, int8_pairs
from ..throughput_grid import LEGEND, engines_line, images_table, searched_engines, versions_line
from ..units import token_models, units_note
from ..verdict_figure import verdict_forest, verdict_points
from .base import Figures, Section, Table, Text, heading

INTRO = "Images/s [95% interval over fresh processes]{model}, each framework at {engine}."
BEST_ENGINE, ONE_ENGINE = "its best engine", "the one engine it ran (under the table)"


NO_POINTS = "No comparison has an interval to draw: page 2 gives each row's reason."


def _one_model(table, configs) -> str:
    """' of resnet50 fp32 in every row': what the table left out as the same on every row (its model, its
    precision), else ''."""
    if table.empty:
        return ""
    same = [", ".join(sorted(configs[c].unique())) for c in ("model", "precision") if c not in table]
    return f" of {' '.join(same)} in every row" if same else ""


def _units(configs) -> str:
    """What a token model's numbers count, where the table has one (its rows are sequences/s, not images/s)."""
    if configs.empty:
        return ""
    lengths = ({m: [int(v) for v in g.dropna()] for m, g in configs.groupby("model")["sequence_length"]}
               if "sequence_length" in configs else {})
    return units_note(configs["model"].unique(), lengths)


def render(d) -> Section:
    grid = framework_grid(d.configs, d.judge)
    int8 = int8_pairs(d.configs, d.judge)
    table = images_table(grid, d.summary, d.best, d.judge, int8)
    points = verdict_points(d.summary, d.best, grid, int8)
    engine = BEST_ENGINE if searched_engines(grid) else ONE_ENGINE  # "best" only where several were compared
    intro = INTRO.format(engine=engine, model=_one_model(table, d.configs)) + _units(d.configs)
    models = d.configs["model"].unique() if not d.configs.empty else []
    if len(models) and len(token_models(models)) == len(models):  # every row counts sequences, none images
        intro = intro.replace("Images/s", "Sequences/s", 1)
    return Section([heading("Answer"), Text(f"{decided_line(d.summary, d.best, d.judge)} {intro}"),
                    Table(table, d.only_distributed() or "no successful runs yet"),
                    *([Text(f"{engines_line(grid)} {versions_line(grid)} {LEGEND}")] if not table.empty else []),
                    Figures(verdict_forest(points, d.judge), "verdicts") if points else
                    Text(f"*{NO_POINTS}*") if not table.empty else Text("")])
