"""Keras 3 model builders written to match torchvision layer for layer.

keras.applications differs from torchvision (ResNet v1 with conv bias, a different MobileNetV2
stem, no AlexNet/GoogLeNet), so parameter counts and FLOPs would not match; these definitions
do, which is what the cross-framework parity check requires.
"""

from __future__ import annotations

import functools

from ..models.architecture import RESNETS, mobilenet_v2_units, resnet_units
from ..models.catalogue import get_model

_BN = dict(epsilon=1e-5, momentum=0.9)  # torch BatchNorm2d defaults (momentum 0.1 = keras 0.9)


def _layers():
    import keras

    return keras.layers


def _conv_bn(x, filters, kernel, stride=1, act="relu", groups=1):
    L = _layers()
    if groups > 1:
        x = L.DepthwiseConv2D(kernel, strides=stride, padding="same", use_bias=False)(x)
    else:
        x = L.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False)(x)
    x = L.BatchNormalization(**_BN)(x)
    if act == "relu":
        x = L.ReLU()(x)
    elif act == "relu6":
        x = L.ReLU(max_value=6.0)(x)
    return x


def _adaptive_pool(x, size: int):
    """torch AdaptiveAvgPool2d((size, size)): identity at the default input, resize otherwise."""
    if x.shape[1] == size and x.shape[2] == size:
        return x
    return _layers().Resizing(size, size, interpolation="bilinear")(x)


def _classifier_head(x, num_classes, hidden, dropout=0.5):
    L = _layers()
    x = L.Flatten()(x)
    for width in hidden:
        x = L.Dense(width, activation="relu")(x)
        x = L.Dropout(dropout)(x)
    return L.Dense(num_classes)(x)


def _tiny_cnn(x, num_classes):
    L = _layers()
    x = _conv_bn(x, 16, 3)
    x = L.MaxPooling2D(2)(x)
    x = _conv_bn(x, 32, 3)
    x = L.GlobalAveragePooling2D()(x)
    return L.Dense(num_classes)(x)


def _digits_mlp(x, num_classes):
    L = _layers()
    return L.Dense(num_classes)(L.Dense(64, activation="relu")(L.Flatten()(x)))


def _alexnet(x, num_classes):
    L = _layers()
    x = L.ZeroPadding2D(2)(x)
    x = L.Conv2D(64, 11, strides=4, activation="relu")(x)
    x = L.MaxPooling2D(3, strides=2)(x)
    x = L.Conv2D(192, 5, padding="same", activation="relu")(x)
    x = L.MaxPooling2D(3, strides=2)(x)
    for filters in (384, 256, 256):
        x = L.Conv2D(filters, 3, padding="same", activation="relu")(x)
    x = L.MaxPooling2D(3, strides=2)(x)
    x = _adaptive_pool(x, 6)
    x = L.Dropout(0.5)(x)
    return _classifier_head(x, num_classes, hidden=(4096, 4096))


def _vgg16(x, num_classes):
    L = _layers()
    for filters, repeats in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(repeats):
            x = L.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = L.MaxPooling2D(2)(x)
    x = _adaptive_pool(x, 7)
    return _classifier_head(x, num_classes, hidden=(4096, 4096))


def _resnet(x, num_classes, blocks, bottleneck):
    L = _layers()
    x = _conv_bn(x, 64, 7, stride=2)
    x = L.MaxPooling2D(3, strides=2, padding="same")(x)
    for width, stride, projection in resnet_units(blocks, bottleneck):
        shortcut = _conv_bn(x, width * (4 if bottleneck else 1), 1, stride=stride, act=None) if projection else x
        if bottleneck:  # v1.5: the stride sits in the 3x3 conv
            y = _conv_bn(x, width, 1)
            y = _conv_bn(y, width, 3, stride=stride)
            y = _conv_bn(y, width * 4, 1, act=None)
        else:
            y = _conv_bn(x, width, 3, stride=stride)
            y = _conv_bn(y, width, 3, act=None)
        x = L.ReLU()(L.Add()([y, shortcut]))
    x = L.GlobalAveragePooling2D()(x)
    return L.Dense(num_classes)(x)


def _mobilenet_v2(x, num_classes):
    L = _layers()
    x = _conv_bn(x, 32, 3, stride=2, act="relu6")
    for in_ch, t, c, stride in mobilenet_v2_units():
        y = x
        if t != 1:
            y = _conv_bn(y, in_ch * t, 1, act="relu6")
        y = _conv_bn(y, in_ch * t, 3, stride=stride, act="relu6", groups=in_ch * t)
        y = _conv_bn(y, c, 1, act=None)
        x = L.Add()([x, y]) if (stride == 1 and in_ch == c) else y
    x = _conv_bn(x, 1280, 1, act="relu6")
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dropout(0.2)(x)
    return L.Dense(num_classes)(x)


def _inception(x, c1, c3r, c3, c5r, c5, pool_proj):
    L = _layers()
    b1 = _conv_bn(x, c1, 1)
    b2 = _conv_bn(_conv_bn(x, c3r, 1), c3, 3)
    b3 = _conv_bn(_conv_bn(x, c5r, 1), c5, 3)  # torchvision uses 3x3 here (a kept quirk)
    b4 = _conv_bn(L.MaxPooling2D(3, strides=1, padding="same")(x), pool_proj, 1)
    return L.Concatenate()([b1, b2, b3, b4])


def _googlenet(x, num_classes):
    L = _layers()
    pool = lambda t: L.MaxPooling2D(3, strides=2, padding="same")(t)  # noqa: E731
    x = pool(_conv_bn(x, 64, 7, stride=2))
    x = pool(_conv_bn(_conv_bn(x, 64, 1), 192, 3))
    x = _inception(x, 64, 96, 128, 16, 32, 32)
    x = pool(_inception(x, 128, 128, 192, 32, 96, 64))
    for cfg in ((192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64),
                (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64)):
        x = _inception(x, *cfg)
    x = _inception(x, 256, 160, 320, 32, 128, 128)
    x = L.MaxPooling2D(2, strides=2, padding="same")(x)
    x = _inception(x, 256, 160, 320, 32, 128, 128)
    x = _inception(x, 384, 192, 384, 48, 128, 128)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dropout(0.2)(x)
    return L.Dense(num_classes)(x)


_BUILDERS = {
    "tiny_cnn": _tiny_cnn,
    "digits_mlp": _digits_mlp,
    "alexnet": _alexnet,
    "vgg16": _vgg16,
    "googlenet": _googlenet,
    **{name: functools.partial(lambda x, k, spec: _resnet(x, k, *spec), spec=spec) for name, spec in RESNETS.items()},
    "mobilenet_v2": _mobilenet_v2,
}


def build_keras_model(name: str, image_size: int):
    """Return an untrained channels-last keras.Model for catalogue model `name`."""
    import keras

    spec = get_model(name)
    inputs = keras.Input((image_size, image_size, 3))
    return keras.Model(inputs, _BUILDERS[name](inputs, spec.num_classes), name=name)


def build_in_policy(keras, model: str, image_size: int, policy: str):
    """The untrained Keras model, its layers in dtype `policy` (set only while building, so nothing built later
    inherits it): TensorFlow's and JAX's runs build through this one place."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        return build_keras_model(model, image_size)
    finally:
        keras.config.set_dtype_policy(previous)
