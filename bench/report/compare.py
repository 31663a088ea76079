"""Two result sets side by side: "did my upgrade, or my other machine, make it faster?".

Configs are matched by their key first (the same config, e.g. before and after an upgrade on one
machine). The key also hashes the thread count, which defaults to the machine's cores, so a config
left unmatched is then matched by what was measured (framework and engine, model, mode, precision,
batch, image size, data placement) and the settings that differ are named in `note`. Each side's
number comes from its own fresh processes, so B/A gets a process-level interval (Welch on the log
scale, `bench.report.estimates.pair_ratio`: the sweep is a level too where a side holds several sweeps) and a
verdict stated as a factor of at least 1.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..adapters import measures_a_framework
from ..errors import ConfigError
from ..masking import brief, mask_text
from ..results.record import SCHEMA_VERSION, NewerFormatError
from ..results.store import load_records
from ..results.sweep_manifest import load_sweeps
from ..stats.drift import Shift, common_shift, own_change, se_from_interval
from ..stats.judge import Judge
from ..stats.printed import ratio_and_range
from ..stats.verdicts import EQUIVALENT, SMALL, UNDECIDED, VERDICTS, WINNER, Verdict
from ..values import counted
from .data import config_tables
from .estimates import UNRELIABLE, pair_ratio, pair_verdict
from .style import mark_flags

COLUMNS = ["model", "mode", "precision", "batch_size", "series", "platform_a", "platform_b", "ips_a", "ips_b",
           "ratio_b_over_a", "ci_low", "ci_high", "processes_a", "processes_b", "verdict", "note"]
# What was measured, whatever the machine (series = framework, plus engine and precision when not default).
MEASURED = ["series", "model", "mode", "precision", "batch_size", "image_size", "sequence_length", "data"]
# Settings that may differ between matched configs; named in `note` so a reader sees what else changed.
SETTINGS = ["device", "threads", "protocol", "warmup", "iterations", "time_budget_s", "ci_target", "seed",
            "phase_iterations"]


def skipped_text(skipped: list[tuple[Path, Exception]]) -> str:
    """How many record files were left out and why: of a newer format (an update reads them) or unreadable."""
    newer = [exc for _, exc in skipped if isinstance(exc, NewerFormatError)]
    other = [exc for _, exc in skipped if not isinstance(exc, NewerFormatError)]
    versions = ", ".join(str(v) for v in sorted({exc.version for exc in newer}))
    why = ([f"{len(newer)} of a newer record format (schema_version {versions}; this checkout reads up to "
            f"{SCHEMA_VERSION}): update this checkout to compare them"] if newer else []) + \
        ([f"{len(other)} unreadable (first: {brief(mask_text(str(other[0])))})"] if other else [])
    return f"{counted(len(skipped), 'record file')} skipped: " + "; ".join(why)


def _configs(folder: str | Path, side: str, skipped: list[tuple[Path, Exception]]) -> pd.DataFrame:
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"result folder {side} {str(folder)!r} does not exist or is not a folder")
    records = load_records(path, skipped=skipped)  # counted in the message or the output instead of warned of
    if not records:
        bad = f" ({skipped_text(skipped)})" if skipped else ""
        raise ConfigError(f"no results in {folder}{bad}: run a sweep first")
    _, _, configs = config_tables(records, load_sweeps(path))
    if configs.empty:
        harness = sum(not measures_a_framework(r.config.framework) for r in records)
        only = (f"all {harness} measure the harness itself, not a framework" if harness == len(records)
                else f"{len(records) - harness} of a framework, none ok" + (f"; {harness} of the harness itself"
                                                                           if harness else ""))
        raise ConfigError(f"nothing to compare in {folder}: its {len(records)} records hold no successful framework "
                          f"run ({only}): run a sweep of a framework first")
    return configs


def verdict(a, b, ratio: dict, judge: Judge) -> str:
    """The reader's answer for one pair, one of the four verdicts: 'winner: B faster (1.20x)', 'small difference: B
    slower (1.03x, within +-5%)', 'equivalent (within +-5%)' or 'undecided (why, or what would decide it)'."""
    v, reason = pair_verdict(a, b, ratio, judge, ("A", "B"), " / ")
    return verdict_text(v, reason)


def verdict_text(v: Verdict, reason: str) -> str:
    if v.word in (WINNER, SMALL):
        within = f", within +-{v.margin:.0%}" if v.word == SMALL else ""
        return (f"{v.word}: B faster ({v.ratio:.2f}x{within})" if v.ratio > 1 else
                f"{v.word}: B slower ({1 / v.ratio:.2f}x{within})")
    if v.word == EQUIVALENT:
        return f"{EQUIVALENT} (within +-{v.margin:.0%})"
    return f"{UNDECIDED} ({reason})"


def shared_shift(table: pd.DataFrame) -> Shift | None:
    """The shift B/A that every judged config shares (the machine drifted, or a change touched everything): a
    random-effects mean of their log ratios (bench/stats/drift.py); None with fewer than three judged configs."""
    judged = _judged(table)
    if judged.empty:
        return None
    ses = [se_from_interval(lo, hi, None) for lo, hi in zip(judged["ci_low"], judged["ci_high"])]
    return common_shift([math.log(r) for r in judged["ratio_b_over_a"]], ses)


def _judged(table: pd.DataFrame) -> pd.DataFrame:
    """Rows with an interval whose sides are both sound (what a shared shift is estimated from)."""
    ok = table["ci_low"].notna() & table["verdict"].str.startswith(VERDICTS)
    ok &= ~table["verdict"].str.contains(UNRELIABLE, regex=False)
    return table[ok & (table["ci_low"] > 0)]


def beyond_shift(table: pd.DataFrame, shift: Shift | None, judge: Judge) -> pd.DataFrame:
    """Each judged config's own change beyond the shared shift (its ratio over the shift, with an interval that
    carries the shift's uncertainty) and that change's verdict; blank where there is no shift or no interval."""
    out = table.copy()
    out["own_ratio"], out["own_ci_low"], out["own_ci_high"], out["own_verdict"] = None, None, None, ""
    if shift is None:
        return out
    judged = _judged(table)
    ses = [se_from_interval(lo, hi, None) for lo, hi in zip(judged["ci_low"], judged["ci_high"])]
    for (i, r), se in zip(judged.iterrows(), ses):
        ratio, lo, hi = own_change(math.log(r["ratio_b_over_a"]), se, None, shift, ses)
        out.loc[i, ["own_ratio", "own_ci_low", "own_ci_high"]] = ratio, lo, hi
        out.loc[i, "own_verdict"] = verdict_text(judge.verdict(ratio, lo, hi), "no change beyond the shared shift "
                                                 "shown")
    return out


def _same(x, y) -> bool:
    return x == y or (pd.isna(x) and pd.isna(y))


def _differences(x, y) -> list[str]:
    return [f"{c} {x[c]} vs {y[c]}" for c in SETTINGS if c in x.index and c in y.index and not _same(x[c], y[c])]


def _pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[int, int, str]]:
    """(A index, B index, how matched) for every compared pair: same key first, then what was measured."""
    b_by_key = b.groupby("config_key").groups
    pairs = [(i, j, "") for i, key in a["config_key"].items() for j in b_by_key.get(key, [])]
    done_a, done_b = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
    rest_a, rest_b = a.drop(index=list(done_a)), b.drop(index=list(done_b))
    measured = [c for c in MEASURED if c in a.columns and c in b.columns]  # older records lack sequence_length
    for key, ga in rest_a.groupby(measured, dropna=False, sort=False):
        gb = rest_b[[all(_same(v, k) for v, k in zip(row, key)) for row in rest_b[measured].itertuples(index=False)]]
        cands = [(i, j, _differences(x, y)) for i, x in ga.iterrows() for j, y in gb.iterrows()]
        if not cands:
            continue
        # Of several settings (seed and adaptive protocol, say), pair each with its closest counterpart,
        # not with every other one; platforms are not settings, so each platform pair is still kept.
        fewest = min(len(d) for _, _, d in cands)
        pairs += [(i, j, "matched across keys: " + (", ".join(d) if d else "same settings"))
                  for i, j, d in cands if len(d) == fewest]
    return pairs


def compare_results(a_dir: str | Path, b_dir: str | Path, judge: Judge) -> pd.DataFrame:
    """One row per config (and per platform pair): B/A images/s with its 95% CI and `judge`'s verdict (the table
    keeps the judge: `attrs['judge']`, for what is said of it).

    Raises ConfigError naming the folder when A or B is missing, not a folder, or holds no results.
    """
    skipped: dict[str, list[tuple[Path, Exception]]] = {"A": [], "B": []}
    table = compare_tables(_configs(a_dir, "A", skipped["A"]), _configs(b_dir, "B", skipped["B"]), judge)
    table.attrs["skipped"] = {side: skipped_text(files) for side, files in skipped.items() if files}
    return table


def skipped_lines(table: pd.DataFrame) -> list[str]:
    """One line per side that left record files out of `compare_results`'s table, with how many and why."""
    return [f"{side}: {text}" for side, text in table.attrs.get("skipped", {}).items()]


def compare_tables(a: pd.DataFrame, b: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """`compare_results` on two config tables (bench/report/data.py: config_tables) already loaded."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    pairs = _pairs(a, b)
    rows = []
    for i, j, how in pairs:
        x, y = a.loc[i], b.loc[j]
        ratio = pair_ratio(y, x)
        notes = [how] if how else []
        for side, df, other in (("A", a, [p[0] for p in pairs if p[1] == j]),
                                ("B", b, [p[1] for p in pairs if p[0] == i])):
            platforms = {df.loc[k, "platform"] for k in other}
            if len(platforms) > 1:
                notes.append(f"{side} has it on {len(platforms)} platforms: each pair compared")
        rows.append({**{c: x[c] for c in ("model", "mode", "precision", "batch_size", "series")},
                     "platform_a": x["platform"], "platform_b": y["platform"],
                     "ips_a": x["images_per_sec_median"], "ips_b": y["images_per_sec_median"],
                     "ratio_b_over_a": ratio["ratio"], "ci_low": ratio["ci_low"], "ci_high": ratio["ci_high"],
                     "processes_a": x["processes"], "processes_b": y["processes"],
                     "verdict": verdict(x, y, ratio, judge), "note": "; ".join(notes)})
    for side, df, matched in (("A", a, {p[0] for p in pairs}), ("B", b, {p[1] for p in pairs})):
        for _, r in df.drop(index=list(matched)).iterrows():
            own = side.lower()
            rows.append({**{c: r[c] for c in ("model", "mode", "precision", "batch_size", "series")},
                         "platform_a": "", "platform_b": "", f"platform_{own}": r["platform"],
                         f"ips_{own}": r["images_per_sec_median"], "processes_a": 0, "processes_b": 0,
                         f"processes_{own}": r["processes"], "verdict": f"only in {side}", "note": ""})
    table = pd.DataFrame(rows, columns=COLUMNS)
    table = table.sort_values(["model", "mode", "precision", "batch_size", "series", "platform_a", "platform_b"],
                              ignore_index=True)
    table.attrs["judge"] = judge
    # the same measurements on both sides (a folder against itself or its copy): said as such, not only as verdicts
    table.attrs["identical"] = bool(pairs) and len(pairs) == len(a) == len(b) and all(
        list(a.loc[i, "process_ips"]) == list(b.loc[j, "process_ips"]) for i, j, _ in pairs)
    return table


def identical_line(table: pd.DataFrame) -> str:
    """'' or the line that says A and B hold the same measurements, process for process."""
    if not table.attrs.get("identical"):
        return ""
    return (f"A and B hold the same measurements, process for process ({len(table)} configs): no change at all; "
            "the verdicts below judge each config against itself")


def for_display(table: pd.DataFrame) -> pd.DataFrame:
    """Readable columns: numbers rounded, the interval as one text column; `note` only when one exists."""
    def num(v, fmt):
        return "" if v is None or v != v else fmt.format(v)

    out = pd.DataFrame({
        "model": table["model"], "mode": table["mode"], "batch": table["batch_size"], "series": table["series"],
        "A img/s": [num(v, "{:.3g}") for v in table["ips_a"]], "B img/s": [num(v, "{:.3g}") for v in table["ips_b"]],
        "B/A": [num(v, "{:.3f}") for v in table["ratio_b_over_a"]],
        "95% CI": [ratio_and_range(r, lo, hi, least=3)[1] for r, lo, hi in
                   zip(table["ratio_b_over_a"], table["ci_low"], table["ci_high"])],
        "processes A/B": table["processes_a"].astype(str) + "/" + table["processes_b"].astype(str),
        "verdict": table["verdict"]})
    shift = shared_shift(table)
    if shift is not None and shift.shown:  # a config's own change matters only where everything moved
        own = beyond_shift(table, shift, table.attrs["judge"])
        out["beyond shift"] = [f"{v} [{num(lo, '{:.3f}')}-{num(hi, '{:.3f}')}]" if v else ""
                               for v, lo, hi in zip(own["own_verdict"], own["own_ci_low"], own["own_ci_high"])]
    if len((set(table["platform_a"]) | set(table["platform_b"])) - {""}) > 1:  # one machine: no column needed
        out.insert(4, "platform A", table["platform_a"])
        out.insert(5, "platform B", table["platform_b"])
    if table["note"].astype(bool).any():
        out["note"] = table["note"]
    return out


def verdict_counts(table: pd.DataFrame) -> str:
    """One line: how many configs got each kind of verdict (factors and reasons pooled)."""
    kinds = table["verdict"].str.replace(r" \(.*\)$", "", regex=True).value_counts()
    order = [f"{WINNER}: B faster", f"{WINNER}: B slower", f"{SMALL}: B faster", f"{SMALL}: B slower", EQUIVALENT,
             UNDECIDED, "only in A", "only in B"]
    return "; ".join(f"{kinds[k]} {k}" for k in order if k in kinds) or "nothing to compare"


def shift_line(table: pd.DataFrame) -> str:
    """What every config shares, and how many changed beyond it: the line a user comparing two versions reads
    first (a machine that drifted moves every config alike; a library change moves some more than others)."""
    shift = shared_shift(table)
    if shift is None:
        return "shared shift: fewer than three configs with an interval on both sides, none estimated"
    judge = table.attrs["judge"]
    own = beyond_shift(table, shift, judge)["own_verdict"]
    beyond = int(own.str.startswith(WINNER).sum())
    small = int(own.str.startswith(SMALL).sum())
    same = int(own.str.startswith(EQUIVALENT).sum())
    what = (" (if nothing else changed, the machine drifted between the two: compare their GEMM peaks)"
            if shift.shown else "")
    return (f"shared shift: {shift.text()}{what}; beyond it, of {int(own.astype(bool).sum())} configs {beyond} "
            f"changed on their own by more than {judge.within}, {small} by less, {same} equivalent (no change "
            f"beyond {judge.within}) and the rest undecided (column 'beyond shift')")


def to_text(table: pd.DataFrame) -> str:
    """The display table as fixed-width text: words left-aligned, numbers right-aligned, no index."""
    shown = for_display(table).astype(str)
    numbers = {"batch", "A img/s", "B img/s", "B/A", "95% CI", "processes A/B"}
    widths = {c: max([len(c)] + [len(v) for v in shown[c]]) for c in shown.columns}

    def line(values) -> str:
        return "  ".join(v.rjust(widths[c]) if c in numbers else v.ljust(widths[c])
                         for c, v in zip(shown.columns, values)).rstrip()

    return "\n".join([line(shown.columns)] + [line(row) for row in shown.itertuples(index=False)])


def plot_comparison(table: pd.DataFrame):
    """B/A per config with its 95% CI on a log axis, unreliable rows grey and hollow; None when empty."""
    import matplotlib.pyplot as plt

    t = table[table["ratio_b_over_a"].notna()].reset_index(drop=True)
    if t.empty:
        return None
    labels = [f"{r['model']} {r['mode']} bs={r['batch_size']} {r['series']}" for _, r in t.iterrows()]
    if len(set(labels)) < len(labels):  # one config on several platforms: say which pair each row is
        sides = [s for s in ("a", "b") if t[f"platform_{s}"].nunique() > 1]
        labels = [lab + " (" + ", ".join(f"{s.upper()}: {r[f'platform_{s}']}" for s in sides) + ")"
                  for lab, (_, r) in zip(labels, t.iterrows())]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(t) + 1.6))
    unreliable = [UNRELIABLE in r for r in t["verdict"]]
    for i, r in t.iterrows():
        reliable = not unreliable[i]
        colour = "#1f77b4" if reliable else "#999999"
        has_ci = r["ci_low"] is not None and r["ci_low"] == r["ci_low"]
        xerr = [[r["ratio_b_over_a"] - r["ci_low"]], [r["ci_high"] - r["ratio_b_over_a"]]] if has_ci else None
        ax.errorbar([r["ratio_b_over_a"]], [i], xerr=xerr, fmt="o", color=colour, ecolor=colour, capsize=3,
                    markerfacecolor=colour if reliable else "none",
                    label="B/A with 95% CI" if reliable else UNRELIABLE)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    _ratio_ticks(ax, t)
    ax.set_yticks(np.arange(len(t)), labels=labels, fontsize=7)
    ax.set_ylim(len(t) - 0.5, -0.5)  # first row on top, as in the table
    ax.set_xlabel("B / A images/s (log scale; right of 1: B faster)")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
    # Below the axes, so the legend never hides a point.
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 1.0 /
              (len(t) + 4)), ncol=2, frameon=False)
    fig.tight_layout()
    return mark_flags(fig, unreliable)


# Factors a reader recognises, roundest first; B/A ticks sit at these and their inverses (0.5: B half as fast).
_FACTORS = [2, 10, 100, 5, 50, 20, 1.5, 3, 1.25, 1.1, 1.05]


def _ratio_ticks(ax, t: pd.DataFrame) -> None:
    """Plain-number ticks (1, 1.25, 0.8, ...) instead of powers of ten, with 1 always in view."""

    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    values = list(t["ratio_b_over_a"]) + [v for v in list(t["ci_low"]) + list(t["ci_high"]) if v is not None and v == v]
    lo, hi = min(values + [1.0]) / 1.03, max(values + [1.0]) * 1.03
    ax.set_xlim(lo, hi)
    gap = math.log(hi / lo) / 8  # at most about eight ticks, evenly spread on the log axis
    ticks = [1.0]
    for v in (x for f in _FACTORS for x in (f, 1 / f)):
        if lo <= v <= hi and all(abs(math.log(v / k)) >= gap for k in ticks):
            ticks.append(v)
    ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.xaxis.set_minor_locator(NullLocator())
