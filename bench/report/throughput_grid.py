"""Page 1's table: images/s [95% CI] of every framework at its best engine, a row per model, mode, precision and batch
(int8 beside fp32), the fastest starred, the row's verdict (fastest against runner-up) and the fastest against
PyTorch. The numbers are the estimate layer's (estimates/best_engines.py, the summary and best-batch tables)."""

from __future__ import annotations

import pandas as pd

from ..stats.verdicts import UNDECIDED, ratio_interval
from .estimates import NOT_COMPARED, REFERENCE

FASTEST = "★"
NOT_SOUND = "!"
NB_HYPHEN = "\u2011"
KEY = ["platform", "model", "mode", "precision", "batch_size"]
LEGEND = (f"{FASTEST} the row's fastest; {NOT_SOUND} not sound (flagged, or under two clean processes), never a "
          "winner; "
          "*best*: each framework at its own best batch (@ batch); an engine is named where a framework ran several.")


def rate(v: float) -> str:
    """Images/s at three significant figures, never in exponent form: '1234', '123', '12.3', '1.23'."""
    if v is None or v != v:
        return ""
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def cell(c: pd.Series, fastest: bool, engine: bool, best: bool) -> str:
    """'★ 123 [118-128] graph @16 !': a framework's number, its 95% interval over processes, and marks."""
    lo, hi = c["images_per_sec_ci_low"], c["images_per_sec_ci_high"]
    # a non-breaking hyphen: a narrow column wraps before the interval, never inside it ('[11.7-' / '13.5]')
    text = rate(c["images_per_sec_median"]) + (f" [{rate(lo)}{NB_HYPHEN}{rate(hi)}]" if lo == lo and lo is not None
                                               else "")
    if engine:
        text += f" {c['engine']}"
    if best:
        text += f" @{int(c['batch_size'])}"
    if not c["sound"]:
        text += f" {NOT_SOUND}"
    return f"{FASTEST} {text}" if fastest else text


def _unbroken(interval: str) -> str:
    """'1.13x [1.03-1.24]' with its bounds' hyphen non-breaking (a narrow column wraps around the interval)."""
    return interval.replace("-", NB_HYPHEN)


def _verdict(row: pd.Series | None) -> str:
    """The row's verdict, the fastest (starred) against the runner-up: 'winner: 1.43x [1.27-1.62] over torch'; a side
    not sound leaves the ratio unsaid (page 2 says why)."""
    if row is None or row["verdict"] == NOT_COMPARED:
        return "-"
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or lo != lo or list(row.get("unsound_flags") or []):
        return f"{row['verdict']} (page 2 says why)" if row["verdict"] == UNDECIDED else row["verdict"]
    return f"{row['verdict']}: {_unbroken(ratio_interval(row['speedup'], lo, hi))} over {row['runner_up']}"


def _reference(g: dict) -> str:
    """The fastest (starred) against PyTorch: '1.85x [1.70-2.02] winner', or why there is none."""
    c = g["reference"]
    if c is None:
        return f"{REFERENCE} fastest" if REFERENCE in g["picks"] else f"{REFERENCE} not measured"
    if c["speedup_ci_low"] is None or c["speedup_ci_low"] != c["speedup_ci_low"]:
        return f"{c['speedup']:.2f}x (no interval) {c['verdict']}"
    return f"{_unbroken(ratio_interval(c['speedup'], c['speedup_ci_low'], c['speedup_ci_high']))} {c['verdict']}"


def images_table(grid: list[dict], summary: pd.DataFrame, best: pd.DataFrame | None) -> pd.DataFrame:
    """The page-1 table from `grid` (estimates.framework_grid) and the verdicts of the summary and best-batch rows."""
    if not grid:
        return pd.DataFrame()
    verdicts = {}
    for frame in (summary, best):
        if frame is not None and not frame.empty:
            for _, r in frame.iterrows():
                b = r["batch_size"]
                verdicts[(r["platform"], r["model"], r["mode"], r["precision"], b if b == "best" else int(b))] = r
    frameworks = sorted({fw for g in grid for fw in g["picks"]})
    rows = []
    for g in grid:
        best_row = g["batch_size"] == "best"
        fastest = g["fastest_framework"] if len(g["picks"]) > 1 else None
        row = {k: g[k] for k in KEY}
        row["batch_size"] = "best" if best_row else str(g["batch_size"])
        for fw in frameworks:
            c = g["picks"].get(fw)
            row[fw] = "" if c is None else cell(c, fw == fastest, fw in g["several_engines"], best_row)
        row[f"{FASTEST} vs runner-up"] = _verdict(verdicts.get(tuple(g[k] for k in KEY)))
        row[f"{FASTEST} vs {REFERENCE}"] = _reference(g) if len(g["picks"]) > 1 else "-"
        rows.append(row)
    table = pd.DataFrame(rows)
    table["_order"] = [10**9 if b == "best" else int(b) for b in table["batch_size"]]
    # int8 beside fp32: a model and mode's rows by batch, each batch's precisions together
    table = table.sort_values(["platform", "model", "mode", "_order", "precision"]).drop(columns="_order")
    table = table.rename(columns={"batch_size": "batch"})
    for col in ("platform", "precision", "model"):
        if table[col].nunique() == 1:
            table = table.drop(columns=col)
    return table.reset_index(drop=True)
