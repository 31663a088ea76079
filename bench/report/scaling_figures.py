"""Figures of the report's scaling section (tables in bench/report/scaling.py)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..adapters import declared
from ..results.links import OPERATIONS, RING
from ..stats.verdicts import UNDECIDED, said
from ..strategies import strategy
from .style import (
    FLAGGED_BAR_NOTE,
    FLAGGED_HATCH,
    PHASE_COLOURS,
    PHASES_FLAGGED_NOTE,
    flag_bar,
    footnote,
    framework_colour,
    legend_below,
    mark_flags,
    plain_numbers,
)

# Said under a figure where a guard kept a number out (bench/measurement/flags.py: IMPOSSIBLE has the rules).
GUARDED_NOTE = "n/a: an impossible number, kept out by the named guard (reason in the scaling table)"

# Said under the efficiency figure where an interval passed what weak scaling can reach (comparisons.py: bounded_top).
CLIPPED_NOTE = ("> : the interval went on past what N workers sharing one machine can reach; drawn to that bound "
                "(the verdict is the whole interval's)")
DIST_PHASE_COLOURS = {"forward": PHASE_COLOURS["forward"], "backward": PHASE_COLOURS["backward"],
                      "forward_backward": "#d2a35c", "update": PHASE_COLOURS["update"],
                      "exposed_comm": PHASE_COLOURS["communication"], "other": "#bbbbbb"}
WHICH = "weak scaling (batch per worker fixed) unless marked strong; threads per worker = cores / workers"


def _finish(fig, ax, title: str):
    """Title, one legend under the axes, tight layout: the end of every one-panel figure here."""
    ax.set_title(title, fontsize=9)
    legend_below(fig, np.array([ax]))
    fig.tight_layout()
    return fig


def _grid(panels: int, width: float, height: float, columns: int = 2):
    """Panels two to a row (a page is narrow: wider grids shrink every label), spare axes hidden."""
    cols = min(columns, panels)
    rows = -(-panels // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.ravel()[panels:]:
        ax.set_visible(False)
    return fig, axes.ravel()[:panels]


def _bar_label(row) -> str:
    label = f"{row['strategy']} x{row['workers']}"
    if row["link"] != "loopback":
        label += f"\n{row['link']}"
    if strategy(row["strategy"]).overlaps_backward and row["bucket_mb"] != 25.0:
        label += f"\nbucket {row['bucket_mb']:g} MB"
    if row["scaling"] == "strong":
        label += f"\nstrong: global bs {row['global_batch']}"
    return label


def _row_label(row) -> str:
    return f"{row['framework']} {row['model']} {_bar_label(row)}".replace("\n", ", ")


def throughput_and_comm(table: pd.DataFrame):
    """SINGA-style: throughput bars per strategy and worker count, communication cost as a line."""
    if table.empty:
        return None
    groups = list(table.groupby(["platform", "framework", "model", "scaling"]))
    # a pair of panels per group: throughput (images/s) on the left, communication cost (ms per step) on the right,
    # each on its own axis (one panel with two units on a dual axis read as one scale)
    fig, axes = _grid(2 * len(groups), 5.6, 4.4)
    drawn = []
    for k, ((_, fw, model, scaling), g) in enumerate(groups):
        ax, cost_ax = axes[2 * k], axes[2 * k + 1]
        g = g.sort_values(["workers", "nodes", "strategy", "bucket_mb"]).reset_index(drop=True)
        x = np.arange(len(g))
        for i, r in g.iterrows():
            err = None
            if r["ci_low"] is not None and not pd.isna(r["ci_low"]):
                err = [[r["images_per_sec"] - r["ci_low"]], [r["ci_high"] - r["images_per_sec"]]]
            flagged = not r["sound"]
            drawn.append(flagged)
            bars = ax.bar(i, r["images_per_sec"], color=framework_colour(fw), edgecolor="white",
                          hatch=strategy(r["strategy"]).hatch + (FLAGGED_HATCH if flagged else ""),
                          yerr=err, capsize=3, label=strategy(r["strategy"]).legend)
            flag_bar(ax, bars[0], flagged)
        ax.set_xticks(x, [_bar_label(r) for _, r in g.iterrows()], fontsize=6.5, rotation=30, ha="right")
        ax.set_ylabel("images/s (all workers)")
        batch = f"bs {g['worker_batch'].iloc[0]}/worker" if scaling == "weak" else \
            f"strong scaling, global bs {g['global_batch'].iloc[0]}"
        ax.set_title(f"{fw}: {model} {batch}, {g['image_size'].iloc[0]}px", fontsize=9)
        comm = g["comm_cost_ms"]
        if comm.notna().any():
            cost_ax.plot(x[comm.notna()], comm[comm.notna()], "ko-", ms=4,
                         label="communication cost (ms/step vs independent, 95% CI)")
            cost_ax.axhline(0, color="k", lw=0.5, ls=":")
            lo, hi = g["comm_ci_low"], g["comm_ci_high"]
            ok = comm.notna() & lo.notna()
            cost_ax.vlines(x[ok], lo[ok], hi[ok], color="k", lw=0.8)
            cost_ax.set_ylabel("communication cost (ms per step)")
            cost_ax.set_ylim(bottom=min(0, float(np.nanmin(lo.fillna(0)))))
            cost_ax.set_xticks(x, [_bar_label(r) for _, r in g.iterrows()], fontsize=6.5, rotation=30, ha="right")
            cost_ax.set_title(f"{fw}: communication cost against independent workers", fontsize=9)
        else:
            cost_ax.set_visible(False)
        footnote(ax, "bars: geometric mean over processes, 95% CI"
                 + (f"; {FLAGGED_BAR_NOTE}" if (~g["sound"].astype(bool)).any() else "")
                 + ("; communication cost " + GUARDED_NOTE if g["comm_flags"].map(bool).any() else ""))
    fig.suptitle(f"Distributed training throughput and communication cost ({WHICH})", fontsize=10)
    legend_below(fig, axes)
    fig.tight_layout()
    return mark_flags(fig, drawn)


def _against_linear(v) -> str:
    """An efficiency's verdict against linear scaling, said from the strategy's side: 'winner: below linear' (never
    '34% winner', which reads as if the strategy won)."""
    if v is None:
        return ""
    return UNDECIDED if v.word == UNDECIDED else said(v, "above linear", "below linear", "linear")


def efficiency(table: pd.DataFrame):
    """Scaling efficiency throughput(N) / (N x throughput(1)) per strategy, with 95% CIs."""
    if table.empty:
        return None
    t = table[(table["workers"] > 1) & (table["efficiency"].notna() | table["efficiency_flags"].map(bool))]
    if t.empty:
        return None
    t = t.sort_values(["framework", "strategy", "link"]).reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.32 * len(t)))
    for i, r in t.iterrows():
        if r["efficiency_flags"]:
            # no bar: its length would be the impossible number
            ax.text(0.01, i, "n/a (" + ", ".join(dict.fromkeys(f.name for f in r["efficiency_flags"])) + ")",
                    va="center", fontsize=7)
            continue
        lo = r["eff_ci_low"] if r["eff_ci_low"] is not None and not pd.isna(r["eff_ci_low"]) else r["efficiency"]
        hi = r["eff_ci_high"] if r["eff_ci_high"] is not None and not pd.isna(r["eff_ci_high"]) else r["efficiency"]
        flagged = not r["sound"]
        ax.barh(i, r["efficiency"], color=framework_colour(r["framework"]),
                hatch=strategy(r["strategy"]).hatch + (FLAGGED_HATCH if flagged else ""), edgecolor="white",
                xerr=[[r["efficiency"] - lo], [hi - r["efficiency"]]], capsize=3)
        clipped = bool(r.get("eff_clipped"))
        if clipped:  # the interval went on past what weak scaling can reach: its bar ends in an arrow, not a cap
            ax.plot(hi, i, marker=">", color="black", ms=5)
        verdict = _against_linear(r.get("eff_verdict"))
        ax.text(max(hi, r["efficiency"]) + 0.01, i, f"{r['efficiency']:.0%}" + (f", {verdict}" if verdict else "")
                + (" (CI clipped)" if clipped else "") + (" !" if flagged else ""), va="center", fontsize=7)
        if not strategy(r["strategy"]).baseline and r["ceiling"] is not None and not pd.isna(r["ceiling"]):
            ax.plot([r["ceiling"]] * 2, [i - 0.4, i + 0.4], color="black", lw=2, solid_capstyle="butt",
                    label="ceiling: independent workers, same N (no communication)")
    ax.set_yticks(range(len(t)), [_row_label(r) for _, r in t.iterrows()],
                  fontsize=7)
    ax.axvline(1.0, color="#444444", lw=0.8, ls="--", label="N x one worker with all the cores")
    ax.set_xlabel("scaling efficiency = throughput(N) / (N x throughput(1 worker)), 95% CI; verdict against linear")
    ax.set_xlim(0, max(1.1, float(t["eff_ci_high"].fillna(t["efficiency"]).fillna(0).max()) + 0.15))
    ax.invert_yaxis()
    guarded = t["efficiency_flags"].map(bool)
    flagged = guarded | ~t["sound"].astype(bool)
    notes = ([GUARDED_NOTE] if guarded.any() else []) + ([FLAGGED_BAR_NOTE] if (flagged & ~guarded).any() else []) \
        + ([CLIPPED_NOTE] if t["eff_clipped"].fillna(False).astype(bool).any() else [])
    if notes:
        footnote(ax, "; ".join(notes))
    return mark_flags(_finish(fig, ax, f"Scaling efficiency ({WHICH})"), flagged)


def phases(table: pd.DataFrame):
    """Where a worker's step goes per strategy: compute phases, exposed communication, the rest."""
    t = table[table["workers"] > 1] if not table.empty else table
    if t.empty:
        return None
    t = t.sort_values(["framework", "strategy", "link", "bucket_mb"]).reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.32 * len(t)))
    for i, r in t.iterrows():
        left, flagged = 0.0, bool(r["phase_flags"]) or not r["sound"]
        for p, colour in DIST_PHASE_COLOURS.items():
            v = r.get(f"{p}_ms")
            if v is not None and not pd.isna(v) and v > 0:
                ax.barh(i, v, left=left, color=colour, label=p.replace("_", " "),
                        hatch=FLAGGED_HATCH if flagged else None, edgecolor="white" if flagged else None)
                left += v
        if flagged:
            names = [f.name for f in r["phase_flags"]] or ["throughput not sound"]
            ax.text(left + 1, i, "! " + ", ".join(names) + " (flagged)", va="center", fontsize=6.5)
        elif r["overlap_share"] is not None and not pd.isna(r["overlap_share"]):
            ax.text(left + 1, i, f"{r['overlap_share']:.0%} of comm. overlapped", va="center", fontsize=6.5)
        elif strategy(r["strategy"]).communicates and not strategy(r["strategy"]).synchronous:
            ax.text(1, i, "asynchronous: steps run on the servers' workers, no per-step phases", va="center",
                    fontsize=6.5)
    ax.set_yticks(range(len(t)), [_row_label(r) for _, r in t.iterrows()],
                  fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("median ms per step (median over ranks; communication: the part not hidden behind compute)")
    flagged = t["phase_flags"].map(bool) | ~t["sound"].astype(bool)
    if flagged.any():
        footnote(ax, PHASES_FLAGGED_NOTE)
    return mark_flags(_finish(fig, ax, "Step breakdown per strategy"), flagged)


def accuracy_over_time(curves: pd.DataFrame):
    """Test accuracy against training seconds, every process a line: the price of stale gradients."""
    if curves.empty:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.6))
    drawn = []
    for (fw, name, workers, _rep), g in curves.groupby(["framework", "strategy", "workers", "repeat"]):
        g = g.sort_values("train_s")
        flagged = "clean" in g and not bool(g["clean"].all())
        drawn.append(flagged)
        ax.plot(g["train_s"], g["accuracy"], strategy(name).line, color=framework_colour(fw), lw=1.2,
                alpha=0.8, label=f"{fw} {strategy(name).legend} x{workers}",
                marker="o" if flagged else None, markerfacecolor="none", markevery=max(1, len(g) // 6), ms=5)
    if any(drawn):
        footnote(ax, "hollow-marked lines: a flagged (disturbed) process, its times are not a finding")
    ax.set_xlabel("training seconds (evaluation time excluded)")
    ax.set_ylabel("test accuracy (digits, 450 images)")
    ax.set_ylim(0, 1)
    title = "Asynchronous vs synchronous SGD (and Sandblaster L-BFGS where it ran): accuracy over wall-clock time"
    return mark_flags(_finish(fig, ax, title),
                      drawn)


def predicted_vs_measured(pred: pd.DataFrame):
    if pred.empty:
        return None
    guarded = pred["flags"].map(bool)
    pred = pred[~guarded]
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    if pred.empty:  # every prediction guarded: the figure says so rather than vanish
        ax.text(0.5, 0.5, "every prediction n/a: its baseline is not sound\n(reasons in the table above)",
                ha="center", va="center", fontsize=8, transform=ax.transAxes)
        ax.set_axis_off()
        return mark_flags(_finish(fig, ax, "Alpha-beta model vs measurement"), guarded)
    for k, (_, r) in enumerate(pred.iterrows(), 1):
        buckets = declared(r["framework"], "distributed.bucketed_allreduce")
        ax.scatter(r["measured_ms"], r["predicted_ms"], color=framework_colour(r["framework"]),
                   marker="o" if r["link"] == "loopback" else "s", s=36, zorder=3,
                   label=f"{k}: {r['framework']} {r['model']} {r['strategy']} x{r['workers']}, {r['link']}"
                         + (f", {r['bucket_mb']:g} MB buckets" if buckets
                            and strategy(r["strategy"]).overlaps_backward else "") + f" ({r['error']:+.0%})")
        ax.annotate(str(k), (r["measured_ms"], r["predicted_ms"]), fontsize=6.5, xytext=(3, 3),
                    textcoords="offset points")
    hi = float(max(pred["measured_ms"].max(), pred["predicted_ms"].max())) * 1.15
    ax.plot([0, hi], [0, hi], color="#444444", lw=0.8, ls="--", label="prediction = measurement")
    ax.fill_between([0, hi], [0, hi * 0.85], [0, hi * 1.15], color="#dddddd", alpha=0.5, label="within 15%")
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("measured step (ms)")
    ax.set_ylabel("predicted: compute + comm - overlap (ms)")
    if guarded.any():
        footnote(ax, f"{int(guarded.sum())} prediction(s) not drawn: " + GUARDED_NOTE)
    return mark_flags(_finish(fig, ax, "Alpha-beta model vs measurement"), guarded)


def network_fit(networks: dict):
    """Measured all-reduce and point-to-point times vs message size with the fitted alpha + M/B lines."""
    several = len(networks) > 1
    networks = {(f"{k} [{h}]" if several else k): e for h, links in networks.items() for k, e in links.items()}
    if not networks:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), squeeze=False)
    for ax, kind in zip(axes[0], OPERATIONS):
        for j, (key, e) in enumerate(sorted(networks.items())):
            size = np.array([p["bytes"] for p in e[kind]], float)
            t = np.array([p["median_s"] for p in e[kind]], float) * 1e3
            fit = e[f"fit_{kind}"]
            colour = plt.cm.Dark2(j)
            ax.loglog(size, t, "o", color=colour, ms=4, label=f"{key}: measured")
            grid = np.geomspace(size.min(), size.max(), 50)
            if kind == RING:
                n = e["workers"]
                model = 2 * (n - 1) * fit["alpha_s"] + 2 * (n - 1) / n * grid / fit["bandwidth_Bps"]
            else:
                model = fit["alpha_s"] + grid / fit["bandwidth_Bps"]
            ax.loglog(grid, model * 1e3, "-", color=colour, lw=1,
                      label=f"{key}: fit ({fit['bandwidth_Bps'] * 8 / 1e9:.2f} Gbit/s, {fit['alpha_s'] * 1e6:.0f} us)")
        ax.set_xlabel("message (bytes)")
        ax.set_ylabel("ms")
        plain_numbers(ax.yaxis)
        ax.set_title(f"{OPERATIONS[kind]} ({'gloo' if kind == RING else 'one way'})", fontsize=9)
    legend_below(fig, axes)
    fig.tight_layout()
    return mark_flags(fig, [])  # a link fit has no flag: each size is a median over many exchanges


def extrapolation(model_rows: pd.DataFrame, published: pd.DataFrame):
    """The model's efficiency on published set-ups (1..256 workers), with published points overlaid."""
    if model_rows.empty:
        return None
    setups = list(dict.fromkeys(model_rows["setup"]))
    modelled = {sys for systems in model_rows["system"] for sys in systems}
    others = published[~published["system"].isin(modelled)]
    panels = setups + (["other published points (no 1-GPU time published: not modelled)"] if len(others) else [])
    fig, axes = _grid(len(panels), 4.8, 3.9)
    markers = iter("o^sDv<>P*X")
    for ax, title in zip(axes, panels):
        g = model_rows[model_rows["setup"] == title]
        for (name, m), ls in zip(g.groupby("model", sort=False), ("-", ":", "--")):
            ax.plot(m["workers"], m["efficiency"], ls, color="#333333", lw=1.2, label=f"model: {name}")
        points = published[published["system"].isin(g["system"].iloc[0])] if len(g) else others
        for (system, model), p in points.groupby(["system", "model"]):
            ax.scatter(p["workers"], p["efficiency"], marker=next(markers, "o"), s=22, zorder=3,
                       label=f"published: {system}, {model} ({p['network'].iloc[0]})")
        ax.set_xscale("log", base=2)
        plain_numbers(ax.xaxis)
        ax.set_ylim(0, 1.1)
        ax.set_xlabel("workers (GPUs)")
        ax.set_ylabel("scaling efficiency")
        ax.set_title(title, fontsize=8)
    legend_below(fig, axes)
    fig.tight_layout()
    return mark_flags(fig, [])  # a model and published points: nothing measured here is drawn
