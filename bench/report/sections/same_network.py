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
    "PyTorch, TensorFlow and JAX with their eager model, the definition and weights their compilers take "
    "(PyTorch's eager runs are the reference, difference 0). int8 runs are judged against their own fp32 model "
    "instead (the int8 section).")
COMPILED_TEXT = (
    " An inference run of an engine that compiles (PyTorch compiled, TensorFlow graph and XLA, JAX jit) is checked a "
    "second time after its timed loop, through the compiled forward the loop ran, on the same probe (the loop's "
    "batch shape: the loop's own program, unless the cell says it compiled again), under the same allowance: the "
    "compiled column. A compiler whose numerics stray fails the check. A training run's compiled function is its "
    "whole step: only its eager model is checked.")
COMPILED_AGAIN = " (compiled again: another program than the loop's)"
COMPILED_COLUMN = "compiled forward, after the timing"
ATTENTION = (" For a transformer, the attention column says how each engine ran the attention (each record's "
             "attention section): an engine that fuses it into one kernel and one that runs matrix products and a "
             "softmax apart are different engines, whatever their outputs.")


def _share(value) -> str:
    """A relative difference as the table shows it ('' where there is none)."""
    return f"{value:.1e}" if value is not None and value == value else ""


def _compiled(c) -> str:
    """The compiled forward's relative difference, or why it has none ('' where it was not checked)."""
    passed = c.get("outputs_compiled_passed")
    if passed is None or passed != passed:  # not checked (NaN: a record from before the check, or another engine)
        reason = c.get("outputs_compiled_reason")
        return f"not checked: {reason}" if isinstance(reason, str) else ""
    share = _share(c.get("outputs_compiled_relative_diff")) or "differs"
    return share + (COMPILED_AGAIN if c.get("outputs_compiled_compiled_again") is True else "")


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
                     "largest difference (of the largest logit)": _share(c["outputs_relative_diff"]),
                     COMPILED_COLUMN: _compiled(c),
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
    intro = INTRO
    if table[COMPILED_COLUMN].astype(bool).any():  # any checked, or said why not
        intro += COMPILED_TEXT
    else:  # records from before the compiled forward was checked, or no engine that compiles
        table = table.drop(columns=COMPILED_COLUMN)
    if table["attention"].astype(bool).any():
        intro += ATTENTION
    else:  # no transformer among them: no attention to describe
        table = table.drop(columns="attention")
    return Section([heading("The same network in every framework", intro), Table(table)])
