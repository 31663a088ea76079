"""Largest batch and peak memory against batch size, from the searches of bench/runs/maxbatch.py."""

from __future__ import annotations

import pandas as pd

from .style import framework_colour, mark_flags, model_mode_grid, plain_numbers

LIMITED_BY = {"memory": "memory (the next probe did not fit)", "max_batch": "the search's max batch (all fit)",
              "error": "an error (see reason)"}


def searches_table(searches: list[dict]) -> pd.DataFrame:
    """One row per search."""
    rows = []
    for s in searches:
        c = s["config"]
        rows.append({"host": s["host"], "framework": c["framework"], "engine": c["engine"], "model": c["model"],
                     "mode": c["mode"], "precision": c["precision"], "device": c["device"],
                     "cap_gib": s["cap_bytes"] / 2**30 if s.get("cap_bytes") else None, "max_batch": s["max_batch"],
                     "largest": s["largest_batch"], "limited_by": s["limited_by"], "error": s.get("error") or "",
                     "probes": s["probes"], "seconds": s["seconds"]})
    return pd.DataFrame(rows)


def probes_table(searches: pd.DataFrame) -> pd.DataFrame:
    """One row per probe (batch size tried) of every search."""
    rows = [{**{k: r[k] for k in ("host", "framework", "engine", "model", "mode", "precision", "device", "cap_gib")},
             **p} for _, r in searches.iterrows() for p in r["probes"]]
    return pd.DataFrame(rows)


def largest_for_display(searches: pd.DataFrame) -> pd.DataFrame:
    if searches.empty:
        return searches
    out = []
    for _, r in searches.sort_values(["host", "model", "mode", "framework"]).iterrows():
        fits = [p for p in r["probes"] if p["fits"]]
        at_largest = max(fits, key=lambda p: p["batch_size"]) if fits else None
        misses = sorted(p["batch_size"] for p in r["probes"] if p["fits"] is False)
        out.append({"host": r["host"], "model": r["model"], "mode": r["mode"], "precision": r["precision"],
                    "device": r["device"], "framework": f"{r['framework']}/{r['engine']}",
                    "largest batch (within the cap)":
                        int(r["largest"]) if pd.notna(r["largest"]) and r["largest"] else "none fits",
                    "peak memory there (GiB)": f"{at_largest['peak_bytes'] / 2**30:.2f}"
                    if at_largest and at_largest["peak_bytes"] else "",
                    "smallest miss": misses[0] if misses else "",
                    "limited by": LIMITED_BY.get(r["limited_by"], r["limited_by"]) + (f": {r['error'][:80]}"
                                                                                     if r["error"] else ""),
                    "memory cap (GiB)": f"{r['cap_gib']:.1f}" if r["device"] == "cpu" and r["cap_gib"]
                    else "the GPU's memory",
                    "probes": len(r["probes"])})
    return pd.DataFrame(out)


def memory_probes_figure(searches: pd.DataFrame) -> list:
    """Per host and device: peak memory against batch size from every probe that fitted (a line per
    framework/engine), each miss as an x, and on a CPU the cap (host memory) as a dashed line; the largest
    batch is the last point before the x. CPU: process resident memory; GPU: the framework allocator's peak."""
    probes = probes_table(searches) if not searches.empty else pd.DataFrame()
    figs = []
    if probes.empty:
        return figs
    for (host, device), on in probes.groupby(["host", "device"]):
        def draw(ax, model, mode, on=on, device=device):
            sub = on[(on["model"] == model) & (on["mode"] == mode)]
            top = 0.0
            for (fw, engine, precision), g in sub.groupby(["framework", "engine", "precision"]):
                colour = framework_colour(fw)
                fit = g[g["fits"] == True].sort_values("batch_size")  # noqa: E712 - fits is True/False/None
                gib = fit["peak_bytes"] / 2**30
                top = max(top, float(gib.max()) if not gib.empty else 0.0)
                ax.plot(fit["batch_size"], gib, marker="o", color=colour, label=f"{fw}/{engine} {precision}")
                miss = g[g["fits"] == False]  # noqa: E712
                if not miss.empty:
                    cap = g["cap_gib"].iloc[0] if device == "cpu" and pd.notna(g["cap_gib"].iloc[0]) else top
                    ax.scatter(miss["batch_size"], [cap] * len(miss), marker="x", color=colour, s=40)
            if device == "cpu":
                for cap in sorted(set(sub["cap_gib"].dropna())):
                    ax.axhline(cap, ls="--", color="#444444", lw=0.8, label=f"memory cap {cap:.1f} GiB")
            ax.set_xscale("log", base=2)
            plain_numbers(ax.xaxis)
            ax.set_xlabel("batch size (x: did not fit)")
            ax.set_ylabel("peak memory (GiB)" + (" (process RSS)" if device == "cpu" else " (allocator)"))
            ax.set_ylim(bottom=0)
            ax.set_title(f"{model} - {mode}", fontsize=9)

        # a probe is a fit / no-fit answer, not a timed number: no flag applies to it
        figs.append(mark_flags(model_mode_grid(on, draw, f"Peak memory against batch size on {host} ({device}), "
                                                         "up to the largest batch that fits"), []))
    return figs
