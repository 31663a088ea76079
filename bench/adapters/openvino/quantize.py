"""OpenVINO's int8: NNCF post-training quantisation (`nncf.quantize`, its default performance preset: symmetric int8
weights and activations, MinMax-style range estimation on the calibration subset) of the exported graph, saved as
OpenVINO IR; the held-out logits of the fp32 and int8 models for the agreement check."""

from __future__ import annotations

from pathlib import Path

from ...models import family_of
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

IR = "model.int8.xml"


def quantise_ir(fp32_path: Path, out_path: Path, calibration, batch_size: int, transformer: bool = False) -> None:
    """Write the NNCF-quantised IR of the ONNX graph `fp32_path` to `out_path`, calibrated on the `calibration` set
    (NCHW float32 images or token ids) fed `batch_size` at a time (every sample: subset_size = the set's size); a
    transformer with NNCF's transformer model type (its documented setting: attention's softmax and the like kept out
    of int8)."""
    import nncf
    import openvino as ov

    model = ov.Core().read_model(str(fp32_path))
    feed = batches(calibration, batch_size)
    kind = {"model_type": nncf.ModelType.TRANSFORMER} if transformer else {}
    quantised = nncf.quantize(model, nncf.Dataset(feed), subset_size=len(feed), **kind)
    ov.save_model(quantised, str(out_path))


def quantise(fp32_path: Path, model: dict, batch_size: int, compile_path,
             sets: ImageSets | TokenSets | None = None) -> tuple[Path, Quantised]:
    """The int8 IR of the exported `fp32_path` (`model`: the export's model, seed and input_size, which name it in
    the cache) and its description with the held-out logits of both models; `compile_path(path)` compiles a model
    file as the run does; `sets` (default: the model's sets at its input size) are the calibration and held-out
    sets."""
    import nncf
    import openvino as ov

    sets = sets or input_sets(model["model"], model["input_size"])
    transformer = family_of(model["model"]).attention
    clock = Stopwatch()
    calib = sets.inputs("calibration")
    inputs = {"tool": f"nncf {nncf.__version__} quantize, openvino {ov.get_version()}", **model,
              "fp32_model": file_fingerprint(fp32_path),
              "calibration": fingerprint(calib), "calibration_batch": batch_size, "transformer": transformer}
    folder, cached = cached_build(inputs, lambda f: quantise_ir(fp32_path, f / IR, calib, batch_size, transformer))
    quantise_s = clock()
    held_out = sets.inputs("held_out")
    logits = {}
    for name, path in (("fp32", fp32_path), ("int8", folder / IR)):
        compiled = compile_path(str(path))
        request = compiled.create_infer_request()
        logits[name] = logits_of(lambda b, r=request: r.infer({0: b})[0].copy(), held_out, batch_size)
    return folder / IR, Quantised(
        tool="nncf.quantize (OpenVINO IR)", method="static post-training quantisation, NNCF's performance preset "
        "(symmetric int8 weights and activations, per-channel weights), min-max ranges over the calibration set",
        sets=sets.describe(), quantise_s=quantise_s,
        fp32_reference="the same exported graph in OpenVINO (fp32, INFERENCE_PRECISION_HINT f32)",
        fp32_logits=logits["fp32"], int8_logits=logits["int8"],
        details={"settings": {"preset": "performance", "subset_size": len(calib),
                              "model_type": "transformer" if transformer else "default",
                              "inference_precision_hint": "f32 (the layers left in floating point)"},
                 "cached": cached})
