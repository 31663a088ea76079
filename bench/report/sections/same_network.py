"""The same network in every framework: each config's outputs on a seeded probe batch against PyTorch's,
measured before any timing (bench/measurement/outputs_check.py)."""

from __future__ import annotations

import pandas as pd

from ...measurement.agreement import OUTPUTS_TOLERANCE
from .base import Section, Table, heading

INTRO = (
    "A model's weights are one seeded set that every framework loads (nothing downloaded: the CNNs' and the "
    "transformers' alike), so each framework must compute the same outputs. Before any timing, every run computes "
    "its logits for a seeded probe batch (standard-normal images, or uniform token ids for BERT; its own batch "
    "size), and they are compared with PyTorch's eager fp32 logits for the same batch. Allowed: a largest "
    "difference of " + ", ".join(f"{t:g} ({p})" for p, t in OUTPUTS_TOLERANCE.items())
    + " of the largest logit. A run beyond it is flagged `outputs_disagree` and is never a winner: it did not run "
    "the same network. ONNX Runtime, OpenVINO, TFLite and MXNet compute the logits with the run's own engine; "
    "PyTorch, TensorFlow and JAX with their eager model, the definition and weights their compilers take (a "
    "compiler's own numerics are not part of the check; PyTorch's eager runs are the reference, difference 0). "
    "int8 runs are judged against their own fp32 model instead (the int8 section).")
ATTENTION = (" For a transformer, the attention column says how each engine ran the attention (each record's "
             "settings.attention): an engine that fuses it into one kernel and one that runs matrix products and a "
             "softmax apart are different engines, whatever their outputs.")


def _attention(c) -> str:
    """'fused: optimised graph: Attention 0, ...' - whether the engine fused the attention, and what says so."""
    fused = c.get("attention_fused")
    if fused is None or fused != fused:
        word = "as the backend picks" if c.get("attention") else ""
    else:
        word = "fused" if fused else "not fused"
    evidence = c.get("attention_evidence")
    return f"{word} ({evidence})" if word and isinstance(evidence, str) else word


def same_network_table(configs: pd.DataFrame) -> pd.DataFrame:
    """One row per config whose runs made the output check."""
    if configs.empty or "outputs_passed" not in configs:
        return pd.DataFrame()
    checked = configs[configs["outputs_passed"].notna() | configs["outputs_reason"].notna()]
    rows = []
    for _, c in checked.sort_values(["model", "mode", "precision", "framework", "engine", "batch_size"]).iterrows():
        passed = c["outputs_passed"]
        rows.append({"model": c["model"], "mode": c["mode"], "framework/engine": f"{c['framework']}/{c['engine']}",
                     "precision": c["precision"], "batch": int(c["batch_size"]),
                     "largest difference (of the largest logit)": f"{c['outputs_relative_diff']:.1e}"
                     if c["outputs_relative_diff"] == c["outputs_relative_diff"]
                     and c["outputs_relative_diff"] is not None else "",
                     "allowed": f"{c['outputs_tolerance']:g}" if c["outputs_tolerance"] == c["outputs_tolerance"]
                     and c["outputs_tolerance"] is not None else "",
                     "same network": "yes" if passed is True else "NO: flagged" if passed is False
                     else f"not checked: {c['outputs_reason']}",
                     "attention": _attention(c)})
    return pd.DataFrame(rows)


def render(d) -> Section:
    table = same_network_table(d.configs)
    if table.empty:
        return Section()
    intro = INTRO + ATTENTION
    if not table["attention"].astype(bool).any():  # no transformer among them: no attention to describe
        table, intro = table.drop(columns="attention"), INTRO
    return Section([heading("The same network in every framework", intro), Table(table)])
