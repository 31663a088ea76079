"""Figures about the measurement itself: run order and drift, interference per process."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..host.interference import OTHER_CPU_LIMIT
from .style import framework_colour, mark_flags


def drift_timeline(processes: pd.DataFrame):
    """Each process's value relative to its config's geometric mean, in the order the runs happened.

    Interleaving shows here: a busy period lowers every framework's points alike; a flagged process
    is drawn as a cross, in both panels. Right panel: other processes' share of the CPUs during each timed loop.
    """
    if processes.empty:
        return None
    p = processes.sort_values("created").reset_index(drop=True)
    gm = p.groupby(["platform", "config_key"])["ips"].transform(lambda s: float(np.exp(np.log(s).mean())))
    p = p.assign(rel=p["ips"] / gm, order=np.arange(len(p)))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [3, 2]})
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
