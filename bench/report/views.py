"""What the benchmark notebook shows for one run: a summary table and the per-iteration latency trace (matplotlib is
imported by the plots only: a sweep's run process shows the summary and draws nothing)."""

from __future__ import annotations

import html
import math

from ..measurement.flags import FLAG_SCOPE
from ..measurement.loop import P99_MIN_TIMED
from ..results.record import Record
from .marks import energy_text, mark_flags


def run_summary(record: Record):
    """A two-column table of the headline facts of a record (HTML, so a run process needs no pandas)."""
    from IPython.display import HTML

    s, samples = record.summary, record.samples
    rows = {"run": record.label, "hardware": record.hardware, "status": record.status,
            "reason": record.reason or ""}
    if s:
        rows.update({
            "images/s (median)": f"{s.images_per_sec_median:.3f}",
            # the coverage the median's interval reached: below 95% with fewer than 6 timed iterations
            f"{_coverage(s.ci_coverage)} CI": f"{s.images_per_sec_ci_low:.3f} - {s.images_per_sec_ci_high:.3f}",
            "latency p50/p90/p99 (ms)": f"{s.latency_ms_p50:.2f} / {s.latency_ms_p90:.2f} / "
                                        + (f"{s.latency_ms_p99:.2f}" if s.n >= P99_MIN_TIMED
                                           else f"n/a (fewer than {P99_MIN_TIMED} timed)"),
            "timed iterations": f"{s.n} ({samples.timed_stop or ''})",
            "warm-up iterations": f"{len(samples.warmup_s)} ({samples.warmup_stop or ''})",
            "utilisation of measured peak": f"{record.utilisation:.1%}" if record.utilisation else "n/a",
            "peak memory (MiB)": f"{record.memory.peak_bytes / 2**20:.0f}" if record.memory else "n/a",
            "inside the timer": record.settings.get("inside_timer", ""),
        })
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                   f"{html.escape(str(v))}</td></tr>" for k, v in rows.items())
    return HTML(f"<table>{body}</table>")


def _coverage(coverage: float | None) -> str:
    """The interval's label: 95% where it reached that, else the coverage it has (75% for three iterations)."""
    return "95%" if coverage is None or coverage >= 0.95 else f"{math.floor(coverage * 1000) / 10:g}%"


def _flagged(record: Record) -> bool:
    """The run's own throughput is flagged (disturbed, a failed certificate, ...): its figure says so."""
    return any(FLAG_SCOPE.get(f.name, "throughput") == "throughput" for f in record.flags)


def plot_latency_trace(record: Record):
    """Latency of every iteration in order; the warm-up is shaded so its effect is visible."""
    import matplotlib.pyplot as plt  # lazily: the run notebook imports this module after its run, for the summary

    warm, timed = record.samples.warmup_s, record.samples.timed_s
    fig, ax = plt.subplots(figsize=(8, 3.2))
    if not warm and not timed:
        ax.text(0.5, 0.5, f"no iterations ({record.status}: {record.reason})", ha="center", va="center",
                transform=ax.transAxes, wrap=True)
        ax.set_axis_off()
        return mark_flags(fig, [])
    ms = [t * 1e3 for t in warm + timed]
    ax.plot(range(len(ms)), ms, marker="o", ms=3, lw=1)
    if warm:
        ax.axvspan(-0.5, len(warm) - 0.5, color="orange", alpha=0.2, label="warm-up (not counted)")
    if timed:
        med = record.summary.latency_ms_median
        ax.axhline(med, color="green", ls="--", lw=1, label=f"median of timed: {med:.2f} ms")
    ax.set_xlabel("iteration")
    ax.set_ylabel("latency (ms)")
    ax.set_title(record.label, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return mark_flags(fig, [_flagged(record)])


RANK_PHASES = ("forward", "backward", "forward_backward", "update", "exposed_comm", "other")


def rank_table(record: Record):
    """One row per rank of a distributed run: role, node, device, samples, phases (median ms), peak memory, and for
    GPU ranks the GPU's allocator peak and utilisation; images per joule where the rank read a meter."""
    from IPython.display import HTML

    d = record.distributed
    ranks = d.ranks if d else []
    if not ranks:
        return HTML(f"<p>no per-rank results ({html.escape(str(record.status))}: "
                    f"{html.escape(str(record.reason))})</p>")
    cols = [p for p in RANK_PHASES if any((r.phases_median_ms or {}).get(p) is not None for r in ranks)]
    gpu = any(r.memory or r.utilisation is not None for r in ranks)  # GPU ranks: device memory and utilisation
    head = "".join(f"<th>{h}</th>" for h in ["rank", "role", "node", "device", "samples", *[f"{c} ms" for c in cols],
                                              "comm MB/step", "peak RSS MiB",
                                              *(["GPU peak MiB", "utilisation"] if gpu else []), "images/J"])
    rows = []
    for r in ranks:
        ph = r.phases_median_ms or {}
        mb = r.comm_bytes_per_step
        peak = (r.memory or {}).get("peak_bytes")
        own = [f"{peak / 2**20:.0f}" if peak else "", f"{r.utilisation:.0%}" if r.utilisation is not None else ""]
        energy = r.energy or {}
        cells = [r.rank, r.role, r.node, r.device or "", r.samples, *[f"{ph[c]:.2f}" if c in ph else "" for c in cols],
                 f"{mb / 1e6:.1f}" if mb else "", f"{r.peak_rss_bytes / 2**20:.0f}" if r.peak_rss_bytes else "",
                 *(own if gpu else []),
                 energy_text(energy.get("images_per_joule"), energy.get("reason")) if energy else ""]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    share = d.overlap_share
    note = f"<p>overlap of communication with computation: {share:.0%}</p>" if share is not None else ""
    return HTML(f"<table><tr>{head}</tr>{''.join(rows)}</table>{note}")


def plot_rank_phases(record: Record):
    """Stacked median phase times per rank: where each rank's step went."""
    import matplotlib.pyplot as plt

    ranks = [r for r in (record.distributed.ranks if record.distributed else []) if r.phases_median_ms]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * max(1, len(ranks))))
    if not ranks:
        ax.text(0.5, 0.5, "no per-step phases (asynchronous steps run remotely, or the run failed)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return mark_flags(fig, [])
    for i, r in enumerate(ranks):
        left = 0.0
        for j, p in enumerate(RANK_PHASES):
            v = r.phases_median_ms.get(p)
            if v:
                ax.barh(i, v, left=left, color=plt.cm.tab10(j), label=p if i == 0 else None)
                left += v
    ax.set_yticks(range(len(ranks)), [f"rank {r.rank} ({r.role}, node {r.node})" for r in ranks])
    ax.set_xlabel("median ms per step")
    ax.set_title(record.label, fontsize=9)
    ax.legend(fontsize=8, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    fig.tight_layout()
    return mark_flags(fig, [_flagged(record)])
