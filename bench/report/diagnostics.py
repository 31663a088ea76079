"""Figures about the measurement itself: run order and drift, interference per process."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..host.interference import OTHER_CPU_LIMIT
from .style import framework_colour, mark_flags


def _superseded(processes: pd.DataFrame, replaced: pd.DataFrame | None) -> pd.DataFrame:
    """The successful attempts a retry replaced (a disturbed run and the like), as the process table's rows: drawn as
    crosses, since the figure exists to show them."""
    if replaced is None or replaced.empty:
        return processes.iloc[0:0]
    return replaced.assign(ips=replaced["images_per_sec_median"], clean=False)


def _reference_line(ax, p: pd.DataFrame, readings: dict[str, list[tuple[int, float]]] | None) -> None:
    """The speed reference (a fixed network step read between comparison groups) as the machine's relative speed,
    its median reading at 1: where the machine itself was slow, the line dips with the processes."""
    drawn = False
    for sweep, points in (readings or {}).items():
        mine = p[p["sweep_id"] == sweep] if "sweep_id" in p else p.iloc[0:0]
        if mine.empty or len(points) < 2:
            continue
        usual = float(np.median([s for _, s in points]))
        xs = []
        for position, _ in points:
            later = mine[mine["order_index"] >= position]["order"]
            xs.append(float(later.min()) - 0.5 if len(later) else float(mine["order"].max()) + 0.5)
        ax.plot(xs, [usual / s for _, s in points], color="black", lw=1.0, marker=".", ms=4,
                label=None if drawn else "speed reference (its median = 1)")
        drawn = True


def drift_timeline(processes: pd.DataFrame, replaced: pd.DataFrame | None = None,
                   readings: dict[str, list[tuple[int, float]]] | None = None):
    """Each process's value relative to its config's geometric mean, in the order the runs happened.

    Interleaving shows here: a busy period lowers every framework's points alike; a flagged process, and an attempt
    a retry replaced (`replaced`, runs-table rows), is drawn as a cross, in both panels; the sweep's speed reference
    (`readings`, sweep id -> [(position, step s)]) as a black line. Right panel: other processes' share of the CPUs
    during each timed loop.
    """
    if processes.empty:
        return None
    p = pd.concat([processes, _superseded(processes, replaced)], ignore_index=True)
    p = p.sort_values("created").reset_index(drop=True)
    gm = p[p["record_id"].isin(processes["record_id"])].groupby(["platform", "config_key"])["ips"].apply(
        lambda s: float(np.exp(np.log(s).mean())))
    means = [gm.get((plat, key), np.nan) for plat, key in zip(p["platform"], p["config_key"])]
    p = p.assign(rel=p["ips"] / np.asarray(means, dtype=float), order=np.arange(len(p)))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 3.1), gridspec_kw={"width_ratios": [3, 2]})
    for fw, g in p.groupby("framework"):
        clean, bad = g[g["clean"]], g[~g["clean"]]
        # a legend entry only for what is drawn: an empty scatter still gets one ("(flagged)" with nothing flagged)
        if len(clean):
            ax.scatter(clean["order"], clean["rel"], s=14, color=framework_colour(fw), label=fw)
        if len(bad):
            ax.scatter(bad["order"], bad["rel"], s=30, marker="x", color=framework_colour(fw), label=f"{fw} (flagged)")
        for part, look in ((clean, {"s": 14, "marker": "o"}), (bad, {"s": 30, "marker": "x"})):  # crosses: flagged
            ax2.scatter(part["order"], part["other_cpu_share"].astype(float) * 100, color=framework_colour(fw), **look)
    ax.axhline(1.0, color="grey", lw=0.8)
    _reference_line(ax, p, readings)
    ax.set_xlabel("run order (all hosts, by start time)")
    ax.set_ylabel("process images/s / config mean")
    ax.set_title("Drift across the sweep: each process against its config's mean", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False)
    ax2.axhline(OTHER_CPU_LIMIT * 100, color="red", lw=0.8, ls="--", label=f"limit {OTHER_CPU_LIMIT:.0%}")
    ax2.set_xlabel("run order")
    ax2.set_ylabel("other processes' CPU share (%)")
    ax2.set_title("What else the machine was doing", fontsize=9)
    ax2.set_ylim(bottom=0)
    ax2.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return mark_flags(fig, ~p["clean"].astype(bool))
