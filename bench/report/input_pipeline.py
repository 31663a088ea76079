"""Does the input pipeline bound training here? Each `files` config (the framework's own pipeline decoding JPEGs inside
the step) beside the same config on synthetic data: images/s of both, their ratio with its interval and verdict, the
data-wait share and the loader's ceiling alone; and the two source studies' claims judged from them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..adapters.input_feed import CEILING_WORKERS
from ..results.record import Record
from ..stats.judge import Judge
from ..stats.verdicts import EQUIVALENT, SMALL, UNDECIDED, WINNER
from .estimates import compare_pair
from .style import framework_colour, mark_flags

# The same config on synthetic data: everything measured equal but the data mode (and the settings only files use).
MATCH = ["platform", "framework", "engine", "model", "mode", "precision", "batch_size", "image_size", "threads"]
# Shallow networks in the HKBU sense (AlexNet's depth); the rest are deep.
SHALLOW = ("alexnet", "resnet18", "tiny_cnn")
CLAIM_2019 = "Random data is close to real data (one GPU; so the study measured random data, no preprocessing)"
CLAIM_HKBU = "Loading training data bounds shallow networks (e.g. AlexNet) with fast devices"
# Both claims are about GPUs. On a CPU the device is not fast and decoding runs on the cores that compute: the 2019
# claim cannot be tested, and the question the files-vs-synthetic runs answer instead of HKBU's is this one.
QUESTION_CPU = "On a CPU: does decoding compete with compute for the cores?"
NOT_TESTABLE = "not testable here (a GPU claim: this host ran it on a CPU)"


def pipeline_facts(records: list[Record]) -> pd.DataFrame:
    """Per files config: the median data-wait share over its processes, the loader's ceiling (images/s, the best
    worker count, and per core at one worker) from the first repetition, workers and cores of the run."""
    rows = []
    for r in records:
        if not r.ok or r.input is None:
            continue
        ceiling = r.input.ceiling or []
        best = max(ceiling, key=lambda c: c["images_per_sec"]) if ceiling else None
        one = next((c for c in ceiling if c["workers"] == 1), None)
        at = {f"ceiling_w{w}": next((c["images_per_sec"] for c in ceiling if c["workers"] == w), np.nan)
              for w in CEILING_WORKERS}
        rows.append({"config_key": r.config_key, "data_wait_share": r.input.data_wait_share,
                     "ceiling_ips": best["images_per_sec"] if best else np.nan,
                     "ceiling_workers": best["workers"] if best else np.nan,
                     "ceiling_per_core": one["images_per_sec_per_core"] if one else np.nan, **at,
                     "loader_workers": r.input.loader_workers, "cores": r.input.cores,
                     "pipeline": r.input.pipeline, "skipped": r.input.skipped_count, "files": r.input.files})
    if not rows:
        return pd.DataFrame(columns=["config_key"])
    facts = pd.DataFrame(rows)
    agg = {"data_wait_share": "median", "ceiling_ips": "max", "ceiling_workers": "first", "ceiling_per_core": "max",
           **{f"ceiling_w{w}": "max" for w in CEILING_WORKERS}, "loader_workers": "first", "cores": "first",
           "pipeline": "first", "skipped": "max", "files": "first"}
    return facts.groupby("config_key", as_index=False).agg(agg)


def input_table(files: pd.DataFrame, synthetic: pd.DataFrame, records: list[Record],
                judge: Judge) -> pd.DataFrame:
    """One row per files config with a synthetic sibling (or none: then no ratio): both throughputs, files over
    synthetic with its interval and verdict, the data-wait share and the loader's ceiling."""
    if files is None or files.empty:
        return pd.DataFrame()
    facts = pipeline_facts(records)
    base = synthetic[synthetic["data"] == "device"] if not synthetic.empty else synthetic
    rows = []
    for _, f in files.merge(facts, on="config_key", how="left").iterrows():
        sibling = base[np.logical_and.reduce([base[k] == f[k] for k in MATCH])] if not base.empty else base
        row = {k: f[k] for k in MATCH} | {"device": f.get("device", "cpu"),
            "files_ips": f["images_per_sec_median"], "synthetic_ips": np.nan, "ratio": np.nan, "ci_low": np.nan,
            "ci_high": np.nan, "verdict": UNDECIDED, "data_wait_share": f["data_wait_share"],
            "ceiling_ips": f["ceiling_ips"], "ceiling_per_core": f["ceiling_per_core"],
            **{f"ceiling_w{w}": f.get(f"ceiling_w{w}", np.nan) for w in CEILING_WORKERS},
            "loader_workers": f["loader_workers"], "cores": f["cores"], "skipped": f["skipped"],
            "pipeline": f["pipeline"], "shallow": f["model"] in SHALLOW,
            "flagged": not bool(f.get("sound", True))}  # a side not sound: flagged wherever it is drawn
        if not sibling.empty:
            s = sibling.iloc[0]
            c = compare_pair(f, s, judge)
            row.update(synthetic_ips=s["images_per_sec_median"], ratio=c["ratio_a_over_b"], ci_low=c["ci_low"],
                       ci_high=c["ci_high"], verdict=c["verdict"],
                       flagged=row["flagged"] or not bool(s.get("sound", True)))
        rows.append(row)
    return pd.DataFrame(rows)


def direction(v: str, ratio: float, judge: Judge) -> str:
    """The project's verdict of files against synthetic data, said with its side: 'winner: synthetic faster',
    'small difference: files faster', 'equivalent within +-5%' or 'undecided'."""
    if v in (WINNER, SMALL):
        return f"{v}: " + ("synthetic" if ratio < 1 else "files") + " faster"
    return f"equivalent within {judge.within}" if v == EQUIVALENT else UNDECIDED


def _holds(v: str, ratio: float, holds_when: tuple[str, ...]) -> str:
    if v == UNDECIDED:
        return "undecided"
    holds = v in holds_when and (holds_when != (WINNER,) or ratio < 1)
    return "holds here" if holds else "does not hold here"


def claim_verdicts(table: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """Per framework and model: the 2019 claim holds where files and synthetic differ by less than the margin
    (equivalent, or a small difference); HKBU's holds for a shallow network where synthetic data is faster by more
    than the margin (the pipeline bounds the step). Both are GPU claims: a row run on a CPU says the 2019 claim is not
    testable here and answers QUESTION_CPU instead of HKBU's. `files vs synthetic` is the comparison's verdict (the
    project's four), `verdict` the claim's (or the question's) on that row."""
    if table.empty:
        return pd.DataFrame()
    rows = []
    for _, r in table.dropna(subset=["ratio"]).iterrows():
        v = judge.verdict(r["ratio"], r["ci_low"], r["ci_high"])
        what = {"framework": r["framework"], "model": r["model"], "mode": r["mode"], "batch_size": r["batch_size"],
                "image_size": r.get("image_size"), "files / synthetic": v.interval(),
                "files vs synthetic": direction(v.word, v.ratio, judge)}
        if not str(r.get("device", "cpu")).startswith("cuda"):  # a GPU claim, judged on a CPU: what it can answer
            rows.append({"claim": "2019: " + CLAIM_2019, **what, "verdict": NOT_TESTABLE})
            rows.append({"claim": "HKBU: " + QUESTION_CPU, **what, "verdict": _competes(v.word, v.ratio)})
            continue
        rows.append({"claim": "2019: " + CLAIM_2019, **what, "verdict": _holds(v.word, v.ratio, (EQUIVALENT, SMALL))})
        if r["shallow"]:
            rows.append({"claim": "HKBU: " + CLAIM_HKBU, **what, "verdict": _holds(v.word, v.ratio, (WINNER,))})
    return pd.DataFrame(rows)


def _competes(v: str, ratio: float) -> str:
    """The CPU question's answer on one row: decoding slows the step beyond the margin (yes), or not."""
    if v == UNDECIDED:
        return "undecided"
    return "yes: decoding competes with compute" if v == WINNER and ratio < 1 else "no competition beyond the margin"


def _config_name(r) -> str:
    size = r.get("image_size")
    size = f" {int(size)}px" if size == size and size is not None else ""
    return f"{r['framework']} {r['model']} {r['mode']} bs={r['batch_size']}{size}"


def claim_summary(claims: pd.DataFrame, study: str) -> str:
    """One study's claim in words: its configs grouped by the comparison's verdict (winner / equivalent within the
    margin / undecided), each group named with what it means for the claim, e.g. 'equivalent within +-5% (holds
    here): torch resnet50 training bs=16 224px 0.99x [0.97-1.02]; winner: synthetic faster (does not hold here): ...'.
    Empty when no config of the claim has both sides."""
    if claims.empty:
        return ""
    mine = claims[claims["claim"].str.startswith(study + ":")]
    parts = []
    for (word, verdict), g in mine.groupby(["files vs synthetic", "verdict"], sort=False):
        names = ", ".join(f"{_config_name(r)} {r['files / synthetic']}" for _, r in g.iterrows())
        said = f"{len(g)} of {len(mine)}" if verdict == word else f"{verdict}, {len(g)} of {len(mine)}"
        parts.append(f"{word} ({said}): {names}")
    return "; ".join(parts)


def loader_ceilings(table: pd.DataFrame) -> pd.DataFrame:
    """The loader alone per framework and crop size (the model does not enter it): images/s at 0, 1 and 2 workers
    (the median over the framework's configs of that size) and per core at one worker; ONNX Runtime's and OpenVINO's
    loader is PyTorch's DataLoader as their decode pool (NumPy batches)."""
    cols = [f"ceiling_w{w}" for w in CEILING_WORKERS]
    if table.empty or not set(cols) <= set(table.columns):
        return pd.DataFrame()
    have = table.dropna(subset=cols, how="all")
    if have.empty:
        return pd.DataFrame()
    return have.groupby(["framework", "image_size"], as_index=False).agg(
        {**{c: "median" for c in cols}, "ceiling_per_core": "median", "pipeline": "first", "cores": "first"})


def input_figure(table: pd.DataFrame):
    """Per model: images/s with synthetic data and with files per framework (bars), the loader alone as a line."""
    if table.empty:
        return None
    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 3.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        g = table[table["model"] == model].reset_index(drop=True)
        x = np.arange(len(g))
        for i, r in g.iterrows():
            colour = framework_colour(r["framework"])
            ax.bar(i - 0.2, r["synthetic_ips"], 0.4, color=colour, alpha=0.45, label="synthetic" if i == 0 else None)
            ax.bar(i + 0.2, r["files_ips"], 0.4, color=colour, hatch="//", edgecolor="white",
                   label="files" if i == 0 else None)
            if np.isfinite(r["ceiling_ips"]):
                ax.hlines(r["ceiling_ips"], i - 0.45, i + 0.45, colors="black", linestyles="--",
                          label="loader alone" if i == 0 else None)
        ax.set_xticks(x, [f"{r['framework']}\n{r['mode']} bs={r['batch_size']}" for _, r in g.iterrows()])
        ax.set_title(model)
        ax.set_ylabel("images/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return mark_flags(fig, table.get("flagged", pd.Series(False, index=table.index)).tolist())
