"""Page 1's table: images/s (a token model's sequences/s) [95% CI] of every framework at its best engine, a row per
model, mode, precision and batch (int8 beside fp32), the fastest starred, the row's verdict (fastest against
runner-up) and the fastest against PyTorch. The numbers are the estimate layer's (estimates/best_engines.py, the
summary and best-batch tables)."""

from __future__ import annotations

import re

import pandas as pd

from ..adapters import declared
from ..stats.judge import Judge
from ..stats.printed import ratio_interval
from ..stats.verdicts import SMALL, UNDECIDED, WINNER, supported
from .answer import batch_order, rests_on_pooling
from .estimates import NOT_COMPARED, REFERENCE
from .units import IMAGES_PER_SEC, rate_unit, token_models

FASTEST = "★"
FASTEST_OPEN = "☆"  # the fastest measured on a row whose verdict does not decide it
POOLED_MARK = "†"
NOT_SOUND = "!"
NB_HYPHEN = "\u2011"
KEY = ["platform", "model", "mode", "precision", "batch_size"]
LEGEND = (f"{FASTEST} fastest, decided; {FASTEST_OPEN} fastest measured, not decided; {POOLED_MARK} decided with the "
          f"sweep's pooled variance (page 2); {NOT_SOUND} not sound (flagged, or under two clean processes), never a "
          "winner; *best*: each framework at its own best batch (@ batch).")


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
    interval = _unbroken(ratio_interval(row['speedup'], lo, hi))
    if row["verdict"] == UNDECIDED:  # what its interval supports, never a fastest it does not show
        what = supported(lo, hi, row["fastest"], row["runner_up"])
        if not what.endswith("faster"):
            return f"{UNDECIDED}: {what} from {row['runner_up']}"
        slower = row["runner_up"] if what.startswith(f"{row['fastest']} ") else row["fastest"]
        return f"{UNDECIDED}: {what} than {slower}"
    return f"{row['verdict']}{mark}: {interval} over {row['runner_up']}"


def _reference(g: dict, judge: Judge, decided: bool) -> str:
    """The fastest (starred) against PyTorch: '1.85x [1.70-2.02] winner', or why there is none; PyTorch named
    fastest only on a decided row (on an undecided one it holds the open star)."""
    c = g["reference"]
    if c is None:
        if REFERENCE not in g["picks"]:
            return f"{REFERENCE} not measured"
        return f"{REFERENCE} fastest" if decided else f"{REFERENCE} {FASTEST_OPEN} (not decided)"
    if c["speedup_ci_low"] is None or c["speedup_ci_low"] != c["speedup_ci_low"]:
        return f"{c['speedup']:.2f}x (no interval) {c['verdict']}"
    mark = POOLED_MARK if rests_on_pooling(c, judge) else ""
    return f"{_unbroken(ratio_interval(c['speedup'], c['speedup_ci_low'], c['speedup_ci_high']))} {c['verdict']}{mark}"


def _over_own_fp32(g: dict, int8: list) -> str:
    """An int8 row of one framework: its speed-up over the same framework's fastest fp32 at the row's batch, with
    the verdict ('winner: 4.05x [3.69-4.44] over its fp32'), from the estimate layer's int8 pairs."""
    (fw,) = g["picks"]
    for q, _, c in int8:
        if (q["framework"], q["model"], q["mode"], q["platform"], int(q["batch_size"])) == \
                (fw, g["model"], g["mode"], g["platform"], g["batch_size"]) and c is not None:
            if c["ci_low"] is None:
                return f"{c['verdict']}: {c['ratio_a_over_b']:.2f}x (no interval) over its fp32"
            return (f"{c['verdict']}: {_unbroken(ratio_interval(c['ratio_a_over_b'], c['ci_low'], c['ci_high']))} "
                    "over its fp32")
    return "- (no fp32 of this framework to compare with)"


def images_table(grid: list[dict], summary: pd.DataFrame, best: pd.DataFrame | None,
                 judge: Judge, int8: list = ()) -> pd.DataFrame:
    """The page-1 table from `grid` (estimates.framework_grid) and the verdicts of the summary and best-batch rows;
    an int8 row measured in one framework shows its speed-up over that framework's fp32 (`int8`: the estimate
    layer's int8 pairs)."""
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
        lone_int8 = g["precision"] == "int8" and len(g["picks"]) == 1 and g["batch_size"] != "best"
        row["fastest vs runner-up"] = _over_own_fp32(g, int8) if lone_int8 else _verdict(verdict, judge)
        row[f"fastest vs {REFERENCE}"] = _reference(g, judge, decided) if len(g["picks"]) > 1 else "-"
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


def searched_engines(grid: list[dict]) -> bool:
    """Whether any framework on page 1 ran more than one engine somewhere: only then is a cell 'its best engine'."""
    return any(g["several_engines"] for g in grid)


def not_measured(grid: list[dict]) -> str:
    """' (not measured: tensorflow xla, torch compile, ...)': the engines each framework declares that page 1's runs
    did not take, so a reader knows which paths the answer leaves out; '' where every one ran."""
    ran: dict[str, set] = {}
    for g in grid:
        for fw, c in g["picks"].items():
            ran.setdefault(fw, set()).add(c["engine"])
    missing = {fw: [e for e in declared(fw, "engines", ()) if e not in ran[fw]] for fw in sorted(ran)}
    said = "; ".join(f"{fw} {'/'.join(es)}" for fw, es in missing.items() if es)
    return f"; not measured: {said} (`make sweep PROFILE=engines`)" if said else ""


def _release(version: str) -> str:
    """'2026.4.1' of OpenVINO's '2026.4.1-22982-e213a147257-releases/2026/4': the release a reader looks up (the
    build string is in the environment section)."""
    found = re.match(r"\d+(\.\d+)*", version)
    return found.group(0) if found else version


def versions_line(grid: list[dict]) -> str:
    """'Versions: tensorflow 2.21.0, torch 2.14.1; threads: 2 in every run.': what page 1's numbers ran on, there."""
    versions: dict[str, set] = {}
    threads: set = set()
    for g in grid:
        for fw, c in g["picks"].items():
            version = c.get("framework_version")
            versions.setdefault(fw, set()).add(version if isinstance(version, str) else "unknown")
            if c.get("threads") == c.get("threads") and c.get("threads") is not None:
                threads.add(int(c["threads"]))
    said = ", ".join(f"{fw} {'/'.join(sorted(map(_release, v)))}" for fw, v in sorted(versions.items()))
    count = (f"{next(iter(threads))} in every run" if len(threads) == 1 else
             ", ".join(map(str, sorted(threads))) if threads else "not recorded")
    return f"Versions: {said}; threads: {count}." if said else ""


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
    what = "Engines" if searched_engines(grid) else "Engines (each framework's default)"
    missing = not_measured(grid)
    return (f"{what}: " + ", ".join(same) + (f" ({', '.join(named)}: named in its cells)" if named else "")
            + missing + "." if same else f"{what}: named in the cells ({', '.join(named)}){missing}.")
