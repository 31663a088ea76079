"""Two result sets side by side: "did my upgrade, or my other machine, make it faster?".

Configs are matched by what was measured (framework and engine, model, mode, precision, batch, image
size, data placement), not by their key, so machines with different core counts (and so different
default thread counts) still compare. Each side's number comes from its own fresh processes, so B/A
gets a process-level interval (Welch on the log scale) and a verdict stated as a factor of at least 1.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .errors import ConfigError
from .report.data import config_tables
from .report.soundness import unsound_reason
from .stats import process_ratio
from .store import load_records, record_files
from .sweeps import load_sweeps

COLUMNS = ["model", "mode", "precision", "batch_size", "series", "platform_a", "platform_b", "ips_a", "ips_b",
           "ratio_b_over_a", "ci_low", "ci_high", "processes_a", "processes_b", "verdict"]


def _configs(folder: str | Path, side: str) -> pd.DataFrame:
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"result folder {side} {str(folder)!r} does not exist or is not a folder")
    if not record_files(path):
        raise ConfigError(f"no results in {folder}: run a sweep first")
    _, _, configs = config_tables(load_records(path), load_sweeps(path))
    if configs.empty:
        raise ConfigError(f"no successful runs in {folder}")
    return configs


def verdict(a, b, ratio: dict) -> str:
    bad = [f"{side}: {unsound_reason(r)}" for side, r in (("A", a), ("B", b)) if not r["sound"]]
    if bad:
        return "not measured reliably (" + " / ".join(bad) + ")"
    if ratio["ci_low"] is None:
        return "not measured reliably (fewer than two processes)"
    if ratio["within_noise"]:
        return "within noise"
    r = ratio["ratio"]
    return f"B faster ({r:.2f}x)" if r > 1 else f"B slower ({1 / r:.2f}x)"


MATCH = ["series", "model", "mode", "precision", "batch_size", "image_size", "data"]


def _match(configs: pd.DataFrame) -> list[tuple]:
    return list(configs[MATCH].itertuples(index=False, name=None))


def compare_results(a_dir: str | Path, b_dir: str | Path) -> pd.DataFrame:
    """One row per measured config (and platform pair): B/A with its interval and the verdict."""
    a, b = _configs(a_dir, "A"), _configs(b_dir, "B")
    rows = []
    a, b = a.assign(match=_match(a)), b.assign(match=_match(b))
    for key in dict.fromkeys(list(a["match"]) + list(b["match"])):
        ra, rb = a[a["match"] == key], b[b["match"] == key]
        first = (ra if len(ra) else rb).iloc[0]
        base = {c: first[c] for c in ("model", "mode", "precision", "batch_size", "series")}
        if ra.empty or rb.empty:
            side = ra if len(ra) else rb
            for _, r in side.iterrows():
                rows.append({**base, "platform_a": r["platform"] if len(ra) else "",
                             "platform_b": r["platform"] if len(rb) else "",
                             "ips_a": r["images_per_sec_median"] if len(ra) else None,
                             "ips_b": r["images_per_sec_median"] if len(rb) else None,
                             "processes_a": r["processes"] if len(ra) else 0,
                             "processes_b": r["processes"] if len(rb) else 0,
                             "verdict": "only in A" if len(ra) else "only in B"})
            continue
        for _, x in ra.iterrows():
            for _, y in rb.iterrows():
                ratio = process_ratio(y["process_ips"], x["process_ips"])
                rows.append({**base, "platform_a": x["platform"], "platform_b": y["platform"],
                             "ips_a": x["images_per_sec_median"], "ips_b": y["images_per_sec_median"],
                             "ratio_b_over_a": ratio["ratio"], "ci_low": ratio["ci_low"], "ci_high": ratio["ci_high"],
                             "processes_a": x["processes"], "processes_b": y["processes"],
                             "verdict": verdict(x, y, ratio)})
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["model", "mode", "batch_size", "series"],
                                                           ignore_index=True)


def for_display(table: pd.DataFrame) -> pd.DataFrame:
    """Readable columns: numbers rounded, the interval as one text column, no index."""
    def num(v, fmt):
        return "" if v is None or v != v else fmt.format(v)

    return pd.DataFrame({
        "model": table["model"], "mode": table["mode"], "batch": table["batch_size"], "series": table["series"],
        "A img/s": [num(v, "{:.3g}") for v in table["ips_a"]], "B img/s": [num(v, "{:.3g}") for v in table["ips_b"]],
        "B/A": [num(v, "{:.3f}") for v in table["ratio_b_over_a"]],
        "95% CI": [f"{lo:.3f}-{hi:.3f}" if lo is not None and lo == lo else "" for lo, hi in
                   zip(table["ci_low"], table["ci_high"])],
        "processes A/B": table["processes_a"].astype(str) + "/" + table["processes_b"].astype(str),
        "verdict": table["verdict"]})


def plot_comparison(table: pd.DataFrame):
    """B/A per config with its interval on a log axis; unreliable rows grey and hollow."""
    import matplotlib.pyplot as plt
    import numpy as np

    t = table[table["ratio_b_over_a"].notna()].reset_index(drop=True)
    if t.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(t) + 1.4))
    y = np.arange(len(t))
    for i, r in t.iterrows():
        reliable = not r["verdict"].startswith("not measured reliably")
        colour = "#1f77b4" if reliable else "#999999"
        if r["ci_low"] is not None and r["ci_low"] == r["ci_low"]:
            ax.plot([r["ci_low"], r["ci_high"]], [i, i], color=colour, lw=2)
        ax.plot([r["ratio_b_over_a"]], [i], "o", color=colour, markerfacecolor=colour if reliable else "none",
                label="reliable" if reliable else "not measured reliably")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y, labels=[f"{r['model']} {r['mode']} bs={r['batch_size']} {r['series']}" for _, r in t.iterrows()],
                  fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("B / A images/s (log scale; right of 1: B faster), 95% CI over processes")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 1.0 /
              (len(t) + 4)), ncol=2, frameon=False)
    fig.tight_layout()
    return fig
