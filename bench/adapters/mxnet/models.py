"""MXNet Gluon model builders written to match torchvision layer for layer (as keras_models does for Keras), holding
the catalogue's seeded weights (`load_cnn_weights`, bench/models/cnn_weights.py).

Gluon's model zoo differs from torchvision (ResNet v1 with the stride in the 1x1 conv, no GoogLeNet),
so parameter counts or FLOPs would not match; these definitions do. Imported only inside the MXNet
environment (mxnet is imported at module load).
"""

from __future__ import annotations

import functools

from mxnet.gluon import HybridBlock, nn

from ...models.architecture import BATCH_NORM, GOOGLENET_BN_EPS, RESNETS, mobilenet_v2_units, resnet_units
from ...models.cnn_weights import in_order
from ..builders import FamilyBuilders


class _Relu6(HybridBlock):
    def hybrid_forward(self, F, x):
        return F.clip(x, 0.0, 6.0)


class _AdaptiveAvgPool(HybridBlock):
    """torch AdaptiveAvgPool2d((size, size)); identity when the input already has that size."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def hybrid_forward(self, F, x):
        return F.contrib.AdaptiveAvgPooling2D(x, output_size=self.size)


def _conv_bn(filters, kernel, stride=1, act="relu", groups=1, eps=BATCH_NORM["epsilon"]) -> nn.HybridSequential:
    block = nn.HybridSequential()
    block.add(nn.Conv2D(filters, kernel, strides=stride, padding=kernel // 2, groups=groups, use_bias=False),
              nn.BatchNorm(**{**BATCH_NORM, "epsilon": eps}))
    if act == "relu":
        block.add(nn.Activation("relu"))
    elif act == "relu6":
        block.add(_Relu6())
    return block


def _classifier_head(net, num_classes, hidden, dropout=0.5, dropout_first=False):
    """Flatten, the hidden linear layers with ReLU and dropout (after each, as VGG; before each, as AlexNet), the
    classifier."""
    net.add(nn.Flatten())
    for width in hidden:
        dense = nn.Dense(width, activation="relu")
        net.add(*((nn.Dropout(dropout), dense) if dropout_first else (dense, nn.Dropout(dropout))))
    net.add(nn.Dense(num_classes))


class _Residual(HybridBlock):
    def __init__(self, body, shortcut, relu=True):
        super().__init__()
        self.body, self.shortcut, self.relu = body, shortcut, relu

    def hybrid_forward(self, F, x):
        y = self.body(x) + (self.shortcut(x) if self.shortcut is not None else x)
        # Activation(relu), as Gluon's model zoo writes it (not F.relu, the same function): oneDNN's subgraph pass
        # fuses only the Activation op into the convolution's sum, in fp32 and int8 (with F.relu a ResNet's int8
        # graph dequantised and requantised around every residual ReLU)
        return F.Activation(y, act_type="relu") if self.relu else y


class _Concat(HybridBlock):
    def __init__(self, *branches):
        super().__init__()
        self.branches = nn.HybridSequential()
        self.branches.add(*branches)

    def hybrid_forward(self, F, x):
        return F.concat(*[b(x) for b in self.branches], dim=1)


def _tiny_cnn(num_classes):
    net = nn.HybridSequential()
    net.add(_conv_bn(16, 3), nn.MaxPool2D(2), _conv_bn(32, 3), nn.GlobalAvgPool2D(), nn.Flatten(),
            nn.Dense(num_classes))
    return net


def _digits_mlp(num_classes):
    net = nn.HybridSequential()
    net.add(nn.Flatten(), nn.Dense(64, activation="relu"), nn.Dense(num_classes))
    return net


def _alexnet(num_classes):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(64, 11, strides=4, padding=2, activation="relu"), nn.MaxPool2D(3, 2),
            nn.Conv2D(192, 5, padding=2, activation="relu"), nn.MaxPool2D(3, 2))
    for filters in (384, 256, 256):
        net.add(nn.Conv2D(filters, 3, padding=1, activation="relu"))
    net.add(nn.MaxPool2D(3, 2), _AdaptiveAvgPool(6))
    _classifier_head(net, num_classes, hidden=(4096, 4096), dropout_first=True)
    return net


def _vgg16(num_classes):
    net = nn.HybridSequential()
    for filters, repeats in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(repeats):
            net.add(nn.Conv2D(filters, 3, padding=1, activation="relu"))
        net.add(nn.MaxPool2D(2))
    net.add(_AdaptiveAvgPool(7))
    _classifier_head(net, num_classes, hidden=(4096, 4096))
    return net


def _resnet(num_classes, blocks, bottleneck):
    net = nn.HybridSequential()
    net.add(_conv_bn(64, 7, stride=2), nn.MaxPool2D(3, 2, 1))
    for width, stride, projection in resnet_units(blocks, bottleneck):
        shortcut = _conv_bn(width * (4 if bottleneck else 1), 1, stride=stride, act=None) if projection else None
        body = nn.HybridSequential()
        if bottleneck:  # v1.5: the stride sits in the 3x3 conv
            body.add(_conv_bn(width, 1), _conv_bn(width, 3, stride=stride), _conv_bn(width * 4, 1, act=None))
        else:
            body.add(_conv_bn(width, 3, stride=stride), _conv_bn(width, 3, act=None))
        net.add(_Residual(body, shortcut))
    net.add(nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(num_classes))
    return net


def _mobilenet_v2(num_classes):
    net = nn.HybridSequential()
    net.add(_conv_bn(32, 3, stride=2, act="relu6"))
    for in_ch, t, c, stride in mobilenet_v2_units():
        body = nn.HybridSequential()
        if t != 1:
            body.add(_conv_bn(in_ch * t, 1, act="relu6"))
        body.add(_conv_bn(in_ch * t, 3, stride=stride, act="relu6", groups=in_ch * t), _conv_bn(c, 1, act=None))
        net.add(_Residual(body, None, relu=False) if (stride == 1 and in_ch == c) else body)
    net.add(_conv_bn(1280, 1, act="relu6"), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dropout(0.2),
            nn.Dense(num_classes))
    return net


def _inception(c1, c3r, c3, c5r, c5, pool_proj):
    conv = functools.partial(_conv_bn, eps=GOOGLENET_BN_EPS)
    pool = nn.HybridSequential()
    pool.add(nn.MaxPool2D(3, 1, 1, ceil_mode=True), conv(pool_proj, 1))
    b2, b3 = nn.HybridSequential(), nn.HybridSequential()
    b2.add(conv(c3r, 1), conv(c3, 3))
    b3.add(conv(c5r, 1), conv(c5, 3))  # torchvision uses 3x3 here (a kept quirk)
    return _Concat(conv(c1, 1), b2, b3, pool)


def _googlenet(num_classes):
    net, conv = nn.HybridSequential(), functools.partial(_conv_bn, eps=GOOGLENET_BN_EPS)
    pool = lambda: nn.MaxPool2D(3, 2, ceil_mode=True)  # noqa: E731
    net.add(conv(64, 7, stride=2), pool(), conv(64, 1), conv(192, 3), pool(),
            _inception(64, 96, 128, 16, 32, 32), _inception(128, 128, 192, 32, 96, 64), pool())
    for cfg in ((192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64),
                (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128)):
        net.add(_inception(*cfg))
    net.add(nn.MaxPool2D(2, 2, ceil_mode=True), _inception(256, 160, 320, 32, 128, 128),
            _inception(384, 192, 384, 48, 128, 128), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dropout(0.2),
            nn.Dense(num_classes))
    return net


_CNNS = {
    "tiny_cnn": _tiny_cnn,
    "digits_mlp": _digits_mlp,
    "alexnet": _alexnet,
    "vgg16": _vgg16,
    "googlenet": _googlenet,
    **{name: functools.partial(lambda k, spec: _resnet(k, *spec), spec=spec) for name, spec in RESNETS.items()},
    "mobilenet_v2": _mobilenet_v2,
}


def _cnn(name: str, num_classes: int) -> HybridBlock:
    return _CNNS[name](num_classes)


# Gluon builders per model family (bench/models/families.py): (name, classes) -> a block. MXNet runs the CNNs only
# (the transformer families declare why).
GLUON_BUILDERS = FamilyBuilders("Gluon")
GLUON_BUILDERS.add("cnn", _cnn)


def build_gluon_model(name: str) -> HybridBlock:
    """Return an uninitialised NCHW Gluon block for catalogue model `name`, built by its family's builder."""
    build, spec = GLUON_BUILDERS.for_model(name)
    return build(name, spec.num_classes)


def _blocks(block):
    """A block and its children, depth first, in registration order (torchvision's order for these definitions)."""
    yield block
    for child in block._children.values():
        yield from _blocks(child)


def load_cnn_weights(mx, net, ctx) -> None:
    """Give an initialised Gluon CNN (its shapes resolved) the catalogue's seeded weights: its layers of each kind in
    registration order. Gluon's layouts are torch's (convolution (out, in / groups, kh, kw), dense (out, in))."""
    layers = []
    for block in _blocks(net):
        if isinstance(block, nn.BatchNorm):
            layers.append(("bn", [block.gamma, block.beta, block.running_mean, block.running_var]))
        elif isinstance(block, (nn.Conv2D, nn.Dense)):
            kind = "linear" if isinstance(block, nn.Dense) else \
                ("depthwise" if block._kwargs["num_group"] > 1 else "conv")
            layers.append((kind, [block.weight] + ([block.bias] if block.bias is not None else [])))
    drawn = in_order((kind, tuple(params[0].shape), len(params) == 2) for kind, params in layers)
    for (_, params), arrays in zip(layers, drawn, strict=True):
        for param, value in zip(params, arrays, strict=True):
            param.set_data(mx.nd.array(value, ctx=ctx))
