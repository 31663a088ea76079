"""Page 1's table: images/s (a token model's sequences/s) [95% CI] of every framework at its best engine, a row per
model, mode, precision and batch (int8 beside fp32), the fastest starred, the row's verdict (fastest against
runner-up) and the fastest against PyTorch. The numbers are the estimate layer's (estimates/best_engines.py, the
summary and best-batch tables)."""

from __future__ import annotations

import pandas as pd

from ..stats.judge import Judge
from ..stats.printed import ratio_interval
from ..stats.verdicts import SMALL, UNDECIDED, WINNER
from .answer import batch_order, rests_on_pooling
from .estimates import NOT_COMPARED, REFERENCE
from .units import IMAGES_PER_SEC, rate_unit, token_models

FASTEST = "★"
FASTEST_OPEN = "☆"  # the fastest measured on a row whose verdict does not decide it
POOLED_MARK = "†"
NOT_SOUND = "!"
NB_HYPHEN = "\u2011"
KEY = ["platform", "model", "mode", "precision", "batch_size"]
LEGEND = (f"{FASTEST} the row's fastest, decided; {FASTEST_OPEN} the fastest measured, not decided; {POOLED_MARK} "
          "decided with the sweep's pooled variance (its own processes alone would not decide it: page 2); "
          f"{NOT_SOUND} not sound (flagged, or under two clean processes), never a winner; *best*: each framework at "
          "its own best batch (@ batch).")


def rate(v: float) -> str:
    """Images/s at three significant figures, never in exponent form: '1234', '123', '12.3', '1.23'."""
    if v is None or v != v:
        return ""
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def cell(c: pd.Series, fastest: str, engine: bool, best: bool) -> str:
    """'★ 123 [118-128] graph @16 !': a framework's number, its 95% interval over processes, and marks (`fastest`:
    the star it gets, '' for none)."""
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
    return f"{fastest} {text}" if fastest else text


def _unbroken(interval: str) -> str:
    """'1.13x [1.03-1.24]' with its bounds' hyphen non-breaking (a narrow column wraps around the interval)."""
    return interval.replace("-", NB_HYPHEN)


def _verdict(row: pd.Series | None, judge: Judge) -> str:
    """The row's verdict, the fastest (starred) against the runner-up: 'winner: 1.43x [1.27-1.62] over torch'; a side
    not sound leaves the ratio unsaid (page 2 says why)."""
    if row is None or row["verdict"] == NOT_COMPARED:
        return "-"
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or lo != lo or list(row.get("unsound_flags") or []):
        return f"{row['verdict']} (page 2 says why)" if row["verdict"] == UNDECIDED else row["verdict"]
    mark = POOLED_MARK if rests_on_pooling(row, judge) else ""
    return f"{row['verdict']}{mark}: {_unbroken(ratio_interval(row['speedup'], lo, hi))} over {row['runner_up']}"


def _reference(g: dict, judge: Judge) -> str:
    """The fastest (starred) against PyTorch: '1.85x [1.70-2.02] winner', or why there is none."""
    c = g["reference"]
    if c is None:
        return f"{REFERENCE} fastest" if REFERENCE in g["picks"] else f"{REFERENCE} not measured"
    if c["speedup_ci_low"] is None or c["speedup_ci_low"] != c["speedup_ci_low"]:
        return f"{c['speedup']:.2f}x (no interval) {c['verdict']}"
    mark = POOLED_MARK if rests_on_pooling(c, judge) else ""
    return f"{_unbroken(ratio_interval(c['speedup'], c['speedup_ci_low'], c['speedup_ci_high']))} {c['verdict']}{mark}"


def images_table(grid: list[dict], summary: pd.DataFrame, best: pd.DataFrame | None,
                 judge: Judge) -> pd.DataFrame:
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
        verdict = verdicts.get(tuple(g[k] for k in KEY))
        decided = verdict is not None and verdict["verdict"] in (WINNER, SMALL)
        fastest = g["fastest_framework"] if len(g["picks"]) > 1 else None
        row = {k: g[k] for k in KEY}
        row["_order"] = batch_order(g["batch_size"])
        row["batch_size"] = "best" if best_row else str(g["batch_size"])
        for fw in frameworks:
            c = g["picks"].get(fw)
            star = (FASTEST if decided else FASTEST_OPEN) if fw == fastest else ""
            row[fw] = "" if c is None else cell(c, star, fw in g["several_engines"], best_row)
        row["fastest vs runner-up"] = _verdict(verdict, judge)
        row[f"fastest vs {REFERENCE}"] = _reference(g, judge) if len(g["picks"]) > 1 else "-"
        rows.append(row)
    table = pd.DataFrame(rows)
    # int8 beside fp32: a model and mode's rows by batch, each batch's precisions together
    table = table.sort_values(["platform", "model", "mode", "_order", "precision"]).drop(columns="_order")
    table = table.rename(columns={"batch_size": "batch"})
    for col in ("platform", "precision", "model"):
        if table[col].nunique() == 1:
            table = table.drop(columns=col)
    if "model" in table and token_models(table["model"]):  # a row of sequences/s among rows of images/s
        table["model"] = [m if rate_unit(m) == IMAGES_PER_SEC else f"{m} ({rate_unit(m)})" for m in table["model"]]
    return table.reset_index(drop=True)


def engines_line(grid: list[dict]) -> str:
    """'Engines: jax jit, onnxruntime all, torch eager (torch: named in its cells where it ran several)': each
    framework's best engine where it is the same on every row, said once under the table."""
    one: dict[str, set] = {}
    several = set()
    for g in grid:
        several |= g["several_engines"]
        for fw, c in g["picks"].items():
            one.setdefault(fw, set()).add(c["engine"])
    same = [f"{fw} {next(iter(e))}" for fw, e in sorted(one.items()) if len(e) == 1 and fw not in several]
    named = sorted(fw for fw in one if fw in several or len(one[fw]) > 1)
    return ("Engines: " + ", ".join(same) + (f" ({', '.join(named)}: named in its cells)" if named else "") + "."
            if same else f"Engines: named in the cells ({', '.join(named)}).")
