"""int8 on the CPU: each framework's post-training int8 against its own fastest fp32 engine, with the agreement of
its logits with fp32's and the CPU features the speed-up depends on."""

from __future__ import annotations

import pandas as pd

from ...measurement.agreement import COSINE_MIN, SQNR_MIN_DB
from ..estimates import int8_table
from ..units import cell_in_unit, rows_note
from .base import Section, Table, heading, number, precision_features

INTRO = (
    "Static post-training quantisation, each framework through its own maintained tool (ONNX Runtime "
    "`quantize_static`, QDQ U8S8, the reason in the record; OpenVINO `nncf.quantize`; PyTorch's PT2 export with "
    "torchao's x86 Inductor "
    "quantizer, compiled by Inductor; TensorFlow's full-integer TFLite conversion, run by `tf.lite.Interpreter`; "
    "MXNet's `contrib.quantization.quantize_net_v2`, oneDNN int8, min-max calibration), "
    "calibrated on a seeded set of procedural ImageNet-like images that is never measured. The weights are random "
    "(none can be downloaded here): the images give the activations realistic ranges, and what int8 must keep is "
    "the fp32 model's output rather than an accuracy. The speed-up is int8's images/s over the same framework's "
    "fastest fp32 engine at the same batch (TensorFlow's fp32 includes its TFLite engine, int8's own runtime), with "
    "the process-level 95% interval and the report's verdict. Agreement is measured on every int8 run, on a held-out "
    "image set: SQNR of the int8 logits against fp32's and their mean cosine similarity; below "
    f"{SQNR_MIN_DB:g} dB or {COSINE_MIN:g} (MLPerf's 99%-of-fp32 rule as the anchor: at most 1% of the signal's "
    "energy as error) the run is flagged `int8_disagrees` and never a winner. Top-1 agreement is shown with the "
    "number of distinct classes fp32 predicted: a random network often predicts one class for almost every image, "
    "which makes top-1 agreement trivially high. JAX has no int8 path (see the frameworks table).")


def _display(r) -> dict:
    """One int8 row in few columns: throughputs with their engines, the speed-up with its interval, the agreement
    in one cell (top-1 beside the number of classes fp32 predicted, which says whether top-1 means anything)."""
    classes = r["fp32 classes"]
    return {
        "platform": r["platform"], "framework": r["framework"], "model": r["model"], "batch": r["batch"],
        "int8 img/s (engine)": f"{cell_in_unit(number(r['int8 img/s'], '.1f'), r['model'])} ({r['int8 engine']})",
        "fastest fp32 img/s (engine)": (f"{cell_in_unit(number(r['fp32 img/s'], '.1f'), r['model'])} "
                                        f"({r['fp32 engine (fastest)']})"
                                        if r["fp32 engine (fastest)"] else ""),
        # '4.11x [3.80-4.08]': the interval (verdicts.bounds) carries its brackets and the decimals it needs
        "speed-up [95% CI]": (f"{r['speed-up']:.2f}x {r['95% CI']}".strip() if r["speed-up"] == r["speed-up"]
                              and r["speed-up"] is not None else ""),
        "verdict": r["verdict"],
        "agreement with fp32": (f"SQNR {number(r['SQNR dB'], '.1f')} dB, cosine {number(r['cosine (mean)'], '.4f')}, "
                                f"top-1 {number(r['top-1 agreement'], '.2f')} over {number(classes, '.0f')} fp32 "
                                f"{'class' if classes == 1 else 'classes'}"),
        "images held-out / calibration": f"{number(r['held-out images'], '.0f')} / "
                                         f"{number(r['calibration images'], '.0f')}",
        # a cached quantisation took no time in this run: said as cached, never as '0.0 s'
        "quantisation": ("cached (an earlier run's)" if r.get("quantise cached") is True else
                         f"{number(r['quantise s'], '.1f')} s" if number(r["quantise s"], ".1f") else ""),
        "flags": r["flags"] or ""}


def render(d) -> Section:
    table = int8_table(d.configs, d.judge)
    if table.empty:
        return Section()
    shown = pd.DataFrame([_display(r) for _, r in table.iterrows()])
    if table["platform"].nunique() == 1:  # one machine: said in the machine line (the table must fit a page)
        shown = shown.drop(columns="platform")
    cpu = precision_features(d.configs, ("int8",))
    return Section([heading("int8", INTRO + rows_note(shown["model"])), *([cpu] if cpu else []), Table(shown)])
