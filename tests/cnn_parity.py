"""A test helper run in processes of its own (TensorFlow and torch do not share a process): torchvision's CNN with
seeded weights and non-trivial BatchNorm statistics written to a file with its logits for a seeded batch
(`torch NAME SIZE FILE`), and the Keras definition given those weights and run on the same batch (`keras NAME SIZE
FILE BACKEND`: prints the largest difference). The weights are matched by order of creation, a projection shortcut
before its block's main path as Keras creates it, and the first dense layer after a Flatten permuted from torch's
(C, H, W) order to Keras' (H, W, C)."""

import json
import os
import re
import sys

import numpy as np


def dump_torch(name: str, size: int, path: str) -> None:
    import torch

    from bench.adapters.torch.models import build_torch_model

    torch.manual_seed(0)
    m = build_torch_model(name).eval()
    # give BN non-trivial statistics so a mismatch shows
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
            mod.weight.data.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
            mod.bias.data.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
    layers = []
    for mname, mod in m.named_modules():
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.Linear)):
            layers.append((mname, mod))
    # keras creates a projection shortcut before the block's main path: move downsample first within each block
    ordered = []
    i = 0
    while i < len(layers):
        n, mod = layers[i]
        block = n.rsplit(".", 1)[0] if n.count(".") >= 2 else None
        if block and n.endswith("conv1") and f"{block}.downsample.0" in dict(layers):
            ds = [(k, v) for k, v in layers if k.startswith(f"{block}.downsample.")]
            main = [(k, v) for k, v in layers
                    if k.startswith(block + ".") and not k.startswith(f"{block}.downsample.")]
            ordered += ds + main
            i += len(ds) + len(main)
            continue
        ordered.append((n, mod))
        i += 1
    arrays = {}
    for k, (_, mod) in enumerate(ordered):
        if isinstance(mod, torch.nn.Conv2d):
            arrays[f"{k:03d}_conv"] = mod.weight.detach().numpy()
            if mod.bias is not None:
                arrays[f"{k:03d}_convbias"] = mod.bias.detach().numpy()
        elif isinstance(mod, torch.nn.BatchNorm2d):
            arrays[f"{k:03d}_bn"] = np.stack([mod.weight.detach().numpy(), mod.bias.detach().numpy(),
                                              mod.running_mean.numpy(), mod.running_var.numpy()])
        else:
            arrays[f"{k:03d}_fc_w"] = mod.weight.detach().numpy()
            arrays[f"{k:03d}_fc_b"] = mod.bias.detach().numpy()
    x = np.random.default_rng(2).standard_normal((2, 3, size, size), dtype=np.float32)
    with torch.no_grad():
        arrays["out"] = m(torch.from_numpy(x)).numpy()
    arrays["x"] = x
    np.savez(path, **arrays)


def run_keras(name: str, size: int, path: str, backend: str) -> None:
    os.environ["KERAS_BACKEND"] = backend
    from bench.adapters.keras_models import build_keras_model

    d = np.load(path)
    m = build_keras_model(name, size)
    def order(layer):  # Keras numbers each class's layers as it creates them: conv2d, conv2d_1, ...
        return int(re.match(r"(.*?)(?:_(\d+))?$", layer.name).group(2) or 0)

    def of(*types):
        return [layer for layer in m.layers if type(layer).__name__ in types]

    kinds = {"conv": of("Conv2D", "DepthwiseConv2D"), "bn": of("BatchNormalization"), "fc": of("Dense")}
    if not name.startswith("mobilenet"):  # MobileNet has no branch: its layers' order is their creation order
        for layers in kinds.values():
            layers.sort(key=order)
    keys = sorted(k for k in d.files if k[:3].isdigit())
    it = {k: iter(v) for k, v in kinds.items()}
    for key in keys:
        kind = key.split("_", 1)[1]
        if kind in ("convbias", "fc_b"):
            continue
        if kind == "conv":
            layer, w = next(it["conv"]), d[key]
            depthwise = type(layer).__name__ == "DepthwiseConv2D"
            kernel = w.transpose(2, 3, 0, 1) if depthwise else w.transpose(2, 3, 1, 0)
            bias_key = key.replace("_conv", "_convbias")
            layer.set_weights([kernel] + ([d[bias_key]] if bias_key in d.files else []))
        elif kind == "bn":
            next(it["bn"]).set_weights(list(d[key]))
        elif kind == "fc_w":
            layer, w = next(it["fc"]), d[key]
            before = m.layers[m.layers.index(layer) - 1]
            source = before.input.shape if type(before).__name__ == "Flatten" else None
            if source is not None and len(source) == 4:  # torch flattens (C, H, W), Keras (H, W, C)
                h, wd, c = source[1], source[2], source[3]
                w = w.reshape(w.shape[0], c, h, wd).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
            layer.set_weights([w.T, d[key.replace("_w", "_b")]])
    out = np.asarray(m(d["x"].transpose(0, 2, 3, 1), training=False))
    ref = d["out"]
    print(json.dumps({"max_abs_diff": float(np.abs(out - ref).max()), "max_abs_ref": float(np.abs(ref).max())}))


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        dump_torch(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        run_keras(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
