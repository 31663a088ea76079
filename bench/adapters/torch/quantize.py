"""PyTorch's int8: the PT2 export path (`torch.export`, then torchao's `prepare_pt2e` / `convert_pt2e` with the x86
Inductor quantizer, calibrated on the procedural calibration set) compiled with Inductor, which lowers the quantised
graph to oneDNN int8 kernels. torch 2.14 no longer ships torch.ao's pt2e quantizer; torchao maintains it.

Inductor's freezing (weights folded as constants) is on for the int8 model, as the x86 Inductor quantizer's tutorial
asks (its int8 weight prepacking needs it); the fp32 it is set beside is the `compile` engine, compiled fp32.
"""

from __future__ import annotations

import numpy as np

from ..int8 import ImageSets, Quantised, Stopwatch, TokenSets, full_batches, input_sets, logits_of


def quantise(module, batch_size: int, model: str, input_size: int, memory_format,
             sets: ImageSets | TokenSets | None = None):
    """(the compiled int8 model, its Quantised description with held-out logits against `module`'s fp32 ones).
    `module` is the eval-mode fp32 model of catalogue `model`; the graph is exported at `batch_size` (calibration
    batches wrap)."""
    import torch
    import torch._inductor.config as inductor_config
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    sets = sets or input_sets(model, input_size)

    def tensor(b: np.ndarray):
        t = torch.from_numpy(b)
        return t.contiguous(memory_format=memory_format) if t.dim() == 4 else t  # token ids have no memory format

    clock = Stopwatch()
    calibration = [tensor(b) for b in full_batches(sets.inputs("calibration"), batch_size)]
    # strict (TorchDynamo) export: with torch 2.14 the non-strict export's source partitions make the x86 quantizer
    # fail on ResNet's conv-add-relu ("Input partition has more than one output node")
    exported = torch.export.export(module, (calibration[0],), strict=True).module()
    quantizer = xiq.X86InductorQuantizer().set_global(xiq.get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for b in calibration:
            prepared(b)
        converted = convert_pt2e(prepared)
    inductor_config.freezing = True
    compiled = torch.compile(converted)
    held_out = sets.inputs("held_out")
    padded = np.concatenate(full_batches(held_out, batch_size))

    def run(model):
        with torch.no_grad():
            return logits_of(lambda b: model(tensor(b)).float().numpy(), padded, batch_size)[:len(held_out)]

    int8_logits = run(compiled)  # the first call compiles: part of the quantisation's time
    quantise_s = clock()
    return compiled, Quantised(
        tool="torchao.quantization.pt2e (prepare_pt2e / convert_pt2e, X86InductorQuantizer) + torch.compile "
             "(Inductor, freezing)",
        method="static post-training quantisation, x86 Inductor default config (int8 activations per tensor, "
               "int8 weights per channel, min-max observers), calibrated on the calibration set",
        sets=sets.describe(), quantise_s=quantise_s,
        fp32_reference="the same PyTorch module in fp32 (eager, inference mode)",
        fp32_logits=run(module), int8_logits=int8_logits,
        details={"settings": {"export": f"torch.export (strict) at batch {batch_size}", "inductor_freezing": True}})
