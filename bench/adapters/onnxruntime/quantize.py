"""ONNX Runtime's int8: `quantize_static` of the exported fp32 graph in QDQ format (after ORT's `quant_pre_process`:
shape inference and graph optimisation, which its documentation asks for), calibrated on the procedural calibration
set; the held-out logits of the fp32 and the int8 graph for the agreement check.

Activation and weight types, chosen on what this ORT build's CPU provider fuses and recorded with the reason: S8S8 is
ORT's documented QDQ default, but its CPU provider fuses a QDQ convolution into QLinearConv for uint8 activations
only in most patterns (measured here, ResNet-18: S8S8 left 11 of 20 convolutions in float between dequantise and
quantise, and ran slower than fp32; U8S8 fused all 20, 3.5x fp32). U8S8 is what VNNI's dot product takes natively;
without VNNI, ORT's documentation advises `reduce_range` (7-bit weights) against saturation.

A token model (BERT) is quantised dynamically instead (`quantize_dynamic`: int8 weights, activations quantised per
call from their own range, no calibration), which ORT's documentation recommends for transformer-based models; its
calibration set is then unused and the held-out set still gives the agreement.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...host.devices import cpu_flags
from ..int8 import (
    ImageSets,
    Quantised,
    Stopwatch,
    TokenSets,
    batches,
    cached_build,
    file_fingerprint,
    fingerprint,
    input_sets,
    logits_of,
)
from ..onnx_export import INPUT, input_name

VNNI = ("avx512_vnni", "avx_vnni", "amx_int8")


def int8_types(flags) -> dict:
    """U8S8 with full-range weights where the CPU has VNNI; with reduce_range (7-bit weights) where it has not."""
    vnni = sorted(set(VNNI) & set(flags or ()))
    why = ("U8S8 (not ORT's S8S8 default): this ORT's CPU provider fuses QDQ convolutions into QLinearConv for "
           "uint8 activations (S8S8 left most in float, slower than fp32)")
    return {"activation_type": "QUInt8", "weight_type": "QInt8", "reduce_range": not vnni,
            "why": why + (f"; full-range weights: this CPU has {', '.join(vnni)}" if vnni else
                          "; reduce_range (7-bit weights): this CPU has no VNNI, where ORT's documentation warns "
                          "that full-range int8 dot products can saturate")}


def quantise_dynamic(fp32_path: Path, out_path: Path, types: dict) -> None:
    """Write the dynamically quantised graph of `fp32_path` to `out_path` (after quant_pre_process without its
    symbolic shape inference, which fails on the exported nn.MultiheadAttention's reshapes: ONNX's own shape
    inference and ORT's graph optimisation still run): int8 weights (`types`' weight type and reduce_range),
    activations quantised at run time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = out_path.with_name("preprocessed.onnx")
    quant_pre_process(str(fp32_path), str(prepared), skip_symbolic_shape=True)
    quantize_dynamic(str(prepared), str(out_path), weight_type=getattr(QuantType, types["weight_type"]),
                     reduce_range=types["reduce_range"])
    prepared.unlink()


def quantise_onnx(fp32_path: Path, out_path: Path, calibration: np.ndarray, batch_size: int, types: dict,
                  name: str = INPUT) -> None:
    """Write the int8 QDQ graph of `fp32_path` to `out_path`, calibrated (MinMax, per-channel weights) on the
    NCHW float32 `calibration` images fed `batch_size` at a time to input `name`, with `types` (int8_types)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feed = iter([{name: b} for b in batches(calibration, batch_size)])

        def get_next(self):
            return next(self.feed, None)

    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = out_path.with_name("preprocessed.onnx")
    quant_pre_process(str(fp32_path), str(prepared))
    quantize_static(str(prepared), str(out_path), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=getattr(QuantType, types["activation_type"]),
                    weight_type=getattr(QuantType, types["weight_type"]), reduce_range=types["reduce_range"],
                    calibrate_method=CalibrationMethod.MinMax)
    prepared.unlink()


def quantise(fp32_path: Path, model: dict, batch_size: int, make_session,
             sets: ImageSets | TokenSets | None = None) -> tuple[Path, Quantised]:
    """The int8 graph of the exported `fp32_path` (`model`: the export's model, seed and input_size, which name it in
    the cache) and its description with the held-out logits of both graphs; `make_session(path)` opens a session as
    the run does; `sets` (default: the model's sets at its input size) are the calibration and held-out sets. A
    token model is quantised dynamically (no calibration), an image model statically."""
    import onnxruntime as ort

    sets = sets or input_sets(model["model"], model["input_size"])
    dynamic = isinstance(sets, TokenSets)
    name = input_name(model["model"])
    clock = Stopwatch()
    calib = sets.inputs("calibration")
    types = int8_types(cpu_flags())
    tool = "quantize_dynamic" if dynamic else "quantize_static"
    inputs = {"tool": f"onnxruntime {ort.__version__} {tool}", **model, "fp32_model": file_fingerprint(fp32_path),
              "types": types,
              **({} if dynamic else {"calibration": fingerprint(calib), "calibration_batch": batch_size})}
    out = "model.int8.onnx"
    folder, cached = cached_build(inputs, (lambda f: quantise_dynamic(fp32_path, f / out, types)) if dynamic else (
        lambda f: quantise_onnx(fp32_path, f / out, calib, batch_size, types, name)))
    out_path = folder / out
    used = ({"format": "QOperator (dynamic: MatMulInteger / DynamicQuantizeLinear)",
             "pre_process": "quant_pre_process (skip_symbolic_shape)",
             "weight_type": types["weight_type"], "reduce_range": types["reduce_range"]} if dynamic else
            {"format": "QDQ", "pre_process": "quant_pre_process", "per_channel": True, "calibrate_method": "MinMax",
             **types})
    quantise_s = clock()
    held_out = sets.inputs("held_out")
    logits = {}
    for which, path in (("fp32", fp32_path), ("int8", out_path)):
        session = make_session(path)
        logits[which] = logits_of(lambda b, s=session: s.run(None, {name: b})[0], held_out, batch_size)
    method = ("dynamic post-training quantisation (ORT's advice for transformers): int8 weights, activations "
              "quantised per call from their own range, no calibration" if dynamic else
              f"static post-training quantisation, {used['format']} "
              f"{'S8S8' if used['activation_type'] == 'QInt8' else 'U8S8'}, per-channel weights, MinMax calibration")
    return out_path, Quantised(
        tool=f"onnxruntime.quantization.{tool}", method=method,
        sets={**sets.describe(), "calibration": {"used": False, "why": "dynamic quantisation calibrates nothing"}}
        if dynamic else
        sets.describe(),
        quantise_s=quantise_s, fp32_reference="the same exported graph in ONNX Runtime (fp32)",
        fp32_logits=logits["fp32"], int8_logits=logits["int8"], details={"settings": used, "cached": cached})
