"""ONNX Runtime's int8: `quantize_static` of the exported fp32 graph in QDQ format (after ORT's `quant_pre_process`:
shape inference and graph optimisation, which its documentation asks for), calibrated on the procedural calibration
set; the held-out logits of the fp32 and the int8 graph for the agreement check.

Activation and weight types, chosen on what this ORT build's CPU provider fuses and recorded with the reason: S8S8 is
ORT's documented QDQ default, but its CPU provider fuses a QDQ convolution into QLinearConv for uint8 activations
only in most patterns (measured here, ResNet-18: S8S8 left 11 of 20 convolutions in float between dequantise and
quantise, and ran slower than fp32; U8S8 fused all 20, 3.5x fp32). U8S8 is what VNNI's dot product takes natively;
without VNNI, ORT's documentation advises `reduce_range` (7-bit weights) against saturation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...host.devices import cpu_flags
from ..int8 import ImageSets, Quantised, Stopwatch, batches, cached_build, fingerprint, logits_of, normalise
from ..onnx_export import INPUT

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


def quantise_onnx(fp32_path: Path, out_path: Path, calibration: np.ndarray, batch_size: int, types: dict) -> None:
    """Write the int8 QDQ graph of `fp32_path` to `out_path`, calibrated (MinMax, per-channel weights) on the
    NCHW float32 `calibration` images fed `batch_size` at a time, with `types` (int8_types)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feed = iter([{INPUT: b} for b in batches(calibration, batch_size)])

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
             sets: ImageSets | None = None) -> tuple[Path, Quantised]:
    """The int8 graph of the exported `fp32_path` (`model`: the export's model, seed and image_size, which name it in
    the cache) and its description with the held-out logits of both graphs; `make_session(path)` opens a session as
    the run does; `sets` (default: the procedural sets at the image size) are the calibration and held-out images."""
    import onnxruntime as ort

    sets = sets or ImageSets.for_size(model["image_size"])
    clock = Stopwatch()
    calib = normalise(sets.calibration)
    types = int8_types(cpu_flags())
    inputs = {"tool": f"onnxruntime {ort.__version__} quantize_static", **model, "types": types,
              "calibration": fingerprint(calib), "calibration_batch": batch_size}
    folder, cached = cached_build(inputs, lambda f: quantise_onnx(fp32_path, f / "model.int8.onnx", calib,
                                                                   batch_size, types))
    out_path = folder / "model.int8.onnx"
    used = {"format": "QDQ", "pre_process": "quant_pre_process", "per_channel": True, "calibrate_method": "MinMax",
            **types}
    quantise_s = clock()
    held_out = normalise(sets.held_out)
    logits = {}
    for name, path in (("fp32", fp32_path), ("int8", out_path)):
        session = make_session(path)
        logits[name] = logits_of(lambda b, s=session: s.run(None, {INPUT: b})[0], held_out, batch_size)
    return out_path, Quantised(
        tool="onnxruntime.quantization.quantize_static", method=f"static post-training quantisation, {used['format']} "
        f"{'S8S8' if used['activation_type'] == 'QInt8' else 'U8S8'}, per-channel weights, MinMax calibration",
        sets=sets.describe(),
        quantise_s=quantise_s, fp32_reference="the same exported graph in ONNX Runtime (fp32)",
        fp32_logits=logits["fp32"], int8_logits=logits["int8"], details={"settings": used, "cached": cached})
