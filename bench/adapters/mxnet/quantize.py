"""MXNet's int8: `mxnet.contrib.quantization.quantize_net_v2` (MXNet 1.9's post-training quantisation of a Gluon
HybridBlock, through its oneDNN backend `MKLDNN_QUANTIZE`: convolutions fused with their BatchNorm, sum and ReLU into
int8 oneDNN subgraphs), calibrated on the procedural calibration set; the held-out logits of the fp32 and the int8
network for the agreement check. Imported only inside MXNet's environment.

Calibration is `naive` (each quantised layer's min and max over the calibration set), the min-max ranges the other
frameworks' tools use; MXNet's `entropy` mode (KL-divergence thresholds) needs scipy, which MXNet's environment does
not install. `quantized_dtype="auto"`: uint8 where calibration saw no negative value (after a ReLU), int8 elsewhere,
the unsigned-by-signed products VNNI computes natively. Weights per output channel, as the other frameworks'.
"""

from __future__ import annotations

import json
from collections import Counter

from ..int8 import ImageSets, Quantised, Stopwatch, logits_of, normalise

SETTINGS = {"calib_mode": "naive", "quantized_dtype": "auto", "quantize_mode": "full",
            "quantize_granularity": "channel-wise"}


def graph_ops(block) -> dict:
    """The quantised graph's operators and how many of its oneDNN subgraphs run in int8 (what was quantised)."""
    nodes = json.loads(block._cached_graph[1].tojson())["nodes"]  # a SymbolBlock's symbol (no public accessor)
    ops = Counter(n["op"] for n in nodes if n["op"] != "null")
    subgraphs = [n for n in nodes if n["op"].startswith("_sg_mkldnn")]
    return {"operators": dict(sorted(ops.items())), "int8_subgraphs": sum(
        n.get("attrs", {}).get("quantized", "").lower() == "true" for n in subgraphs), "subgraphs": len(subgraphs)}


def quantise(mx, net, batch_size: int, image_size: int, ctx, sets: ImageSets | None = None):
    """(the hybridized int8 SymbolBlock of the fp32 Gluon `net`, its Quantised description with held-out logits
    against `net`'s). `net` is initialised and hybridized as the fp32 `hybrid` engine runs it."""
    from mxnet.contrib.quantization import quantize_net_v2

    sets = sets or ImageSets.for_size(image_size)

    def predict(block):
        return lambda b: block(mx.nd.array(b, ctx=ctx)).asnumpy()

    held_out = normalise(sets.held_out)
    fp32_logits = logits_of(predict(net), held_out, batch_size)  # before: quantize_net_v2 re-hybridizes `net`
    clock = Stopwatch()
    calibration = normalise(sets.calibration)
    feed = mx.io.NDArrayIter(calibration, batch_size=min(batch_size, len(calibration)), last_batch_handle="pad")
    quantised = quantize_net_v2(net, calib_data=feed, num_calib_examples=len(calibration), ctx=ctx, **SETTINGS)
    quantised.hybridize(static_alloc=True, static_shape=True)
    int8_logits = logits_of(predict(quantised), held_out, batch_size)  # the first call binds the int8 graph
    quantise_s = clock()
    return quantised, Quantised(
        tool="mxnet.contrib.quantization.quantize_net_v2 (oneDNN backend MKLDNN_QUANTIZE)",
        method="static post-training quantisation, naive (min-max) calibration on the calibration set, uint8 after "
               "ReLU and int8 elsewhere (quantized_dtype auto), int8 weights per channel, every quantisable "
               "operator (quantize_mode full)",
        sets=sets.describe(), quantise_s=quantise_s,
        fp32_reference="the same Gluon network in fp32 (hybridized, oneDNN)",
        fp32_logits=fp32_logits, int8_logits=int8_logits,
        details={"settings": {**SETTINGS, "calibration_batch": feed.batch_size,
                              "entropy_calibration": "not used: it needs scipy, not in MXNet's environment"},
                 "graph": graph_ops(quantised)})
