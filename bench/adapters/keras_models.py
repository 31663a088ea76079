"""Keras 3 model builders written to match torchvision layer for layer, holding the catalogue's seeded weights.

keras.applications differs from torchvision (ResNet v1 with conv bias, a different MobileNetV2
stem, no AlexNet/GoogLeNet), so parameter counts and FLOPs would not match; these definitions
do, and with the same weights they compute torchvision's outputs (bench/measurement/outputs_check.py). A CNN's
layers of each kind are created in the order torchvision registers them (a residual block's main path before its
projection shortcut), which is how `load_cnn_weights` finds each one's arrays (bench/models/cnn_weights.py).
"""

from __future__ import annotations

import functools
import re

from ..models.architecture import BATCH_NORM, GOOGLENET_BN_EPS, RESNETS, mobilenet_v2_units, resnet_units
from ..models.catalogue import get_model
from ..models.cnn_weights import in_order
from ..models.transformers import (
    BERT_DROPOUT,
    BERT_LAYER_NORM_EPS,
    LAYER_NORM_EPS,
    attention_dropout,
    bert_shape,
    bert_weights,
    vit_shape,
    vit_weights,
)
from .builders import FamilyBuilders


def _layers():
    import keras

    return keras.layers


def _conv_bn(x, filters, kernel, stride=1, act="relu", groups=1, eps=BATCH_NORM["epsilon"]):
    """Convolution, BatchNorm and activation, padded as torchvision pads: kernel // 2 on every side. Keras' "same"
    pads a strided convolution asymmetrically (ResNet's 7x7 stem on 224: 2 above and left, 3 below and right,
    against torchvision's 3 and 3), which samples other pixels: a strided one is padded explicitly instead."""
    L = _layers()
    padding = "same"
    if stride > 1 and kernel > 1:
        x = L.ZeroPadding2D(kernel // 2)(x)
        padding = "valid"
    if groups > 1:
        x = L.DepthwiseConv2D(kernel, strides=stride, padding=padding, use_bias=False)(x)
    else:
        x = L.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=False)(x)
    x = L.BatchNormalization(**{**BATCH_NORM, "epsilon": eps})(x)
    if act == "relu":
        x = L.ReLU()(x)
    elif act == "relu6":
        x = L.ReLU(max_value=6.0)(x)
    return x


def adaptive_pool_matrix(n_in: int, n_out: int):
    """torch's AdaptiveAvgPool over one axis as an (n_out, n_in) matrix: output i averages inputs
    floor(i * n_in / n_out) to ceil((i + 1) * n_in / n_out) - 1."""
    import numpy as np

    m = np.zeros((n_out, n_in), np.float32)
    for i in range(n_out):
        start, end = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        m[i, start:end] = 1.0 / (end - start)
    return m


@functools.cache
def _adaptive_pool_layer():
    """A layer computing torch's AdaptiveAvgPool2d on NHWC maps: the averaging matrix over the rows and the columns."""
    import keras

    class AdaptiveAvgPool(keras.layers.Layer):
        def __init__(self, size: int, **kwargs):
            super().__init__(**kwargs)
            self.size = size

        def call(self, x):
            ops = keras.ops
            rows = ops.cast(adaptive_pool_matrix(x.shape[1], self.size), x.dtype)
            cols = ops.cast(adaptive_pool_matrix(x.shape[2], self.size), x.dtype)
            return ops.einsum("bhwc,ih,jw->bijc", x, rows, cols)

    return AdaptiveAvgPool


def _adaptive_pool(x, size: int):
    """torch AdaptiveAvgPool2d((size, size)): identity at the default input (AlexNet's and VGG's maps are then 6x6
    and 7x7 already), its averaging windows otherwise."""
    if x.shape[1] == size and x.shape[2] == size:
        return x
    return _adaptive_pool_layer()(size)(x)


def _classifier_head(x, num_classes, hidden, dropout=0.5, dropout_first=False):
    """Flatten, the hidden linear layers with ReLU and dropout (after each, as VGG; before each, as AlexNet), the
    classifier."""
    L = _layers()
    x = L.Flatten()(L.Permute((3, 1, 2))(x))  # torch flattens (C, H, W): the same order, so the same weights
    for width in hidden:
        x = L.Dropout(dropout)(x) if dropout_first else x
        x = L.Dense(width, activation="relu")(x)
        x = x if dropout_first else L.Dropout(dropout)(x)
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
    return _classifier_head(x, num_classes, hidden=(4096, 4096), dropout_first=True)


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
    # torchvision's MaxPool2d(3, 2, padding=1): one pixel on every side (zeros equal its -inf after the ReLU)
    x = L.MaxPooling2D(3, strides=2)(L.ZeroPadding2D(1)(x))
    for width, stride, projection in resnet_units(blocks, bottleneck):
        if bottleneck:  # v1.5: the stride sits in the 3x3 conv
            y = _conv_bn(x, width, 1)
            y = _conv_bn(y, width, 3, stride=stride)
            y = _conv_bn(y, width * 4, 1, act=None)
        else:
            y = _conv_bn(x, width, 3, stride=stride)
            y = _conv_bn(y, width, 3, act=None)
        # the projection after the main path, as torchvision registers its `downsample`
        shortcut = _conv_bn(x, width * (4 if bottleneck else 1), 1, stride=stride, act=None) if projection else x
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
    L, conv = _layers(), functools.partial(_conv_bn, eps=GOOGLENET_BN_EPS)
    b1 = conv(x, c1, 1)
    b2 = conv(conv(x, c3r, 1), c3, 3)
    b3 = conv(conv(x, c5r, 1), c5, 3)  # torchvision uses 3x3 here (a kept quirk)
    b4 = conv(L.MaxPooling2D(3, strides=1, padding="same")(x), pool_proj, 1)
    return L.Concatenate()([b1, b2, b3, b4])


def _googlenet(x, num_classes):
    L, conv = _layers(), functools.partial(_conv_bn, eps=GOOGLENET_BN_EPS)
    pool = lambda t: L.MaxPooling2D(3, strides=2, padding="same")(t)  # noqa: E731  (torch's ceil_mode)
    x = pool(conv(x, 64, 7, stride=2))
    x = pool(conv(conv(x, 64, 1), 192, 3))
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


@functools.cache
def _tokens_layer():
    """A layer that prepends the class token and adds the position embeddings (torchvision's `class_token` and
    `encoder.pos_embedding`): Keras has no layer holding either."""
    import keras

    class ClassTokenAndPositions(keras.layers.Layer):
        def build(self, input_shape):
            _, n, d = input_shape
            self.class_token = self.add_weight(shape=(1, 1, d), initializer="zeros", name="class_token")
            self.positions = self.add_weight(shape=(1, n + 1, d), initializer="zeros", name="positions")

        def call(self, x):
            ops = keras.ops
            token = ops.broadcast_to(ops.cast(self.class_token, x.dtype), (ops.shape(x)[0], 1, ops.shape(x)[2]))
            return ops.concatenate([token, x], axis=1) + ops.cast(self.positions, x.dtype)

    return ClassTokenAndPositions


def _vit(x, num_classes, name):
    """torchvision's VisionTransformer layer for layer (pre-norm blocks, exact GELU, the head on the class token);
    `load_vit_weights` gives it the catalogue's weights."""
    L, s = _layers(), vit_shape(name)
    x = L.Conv2D(s.hidden, s.patch_size, strides=s.patch_size, name="conv_proj")(x)
    x = L.Reshape(((s.image_size // s.patch_size) ** 2, s.hidden))(x)  # row-major patches, as torch's flatten(2)
    x = _tokens_layer()(name="tokens")(x)
    for i in range(s.layers):
        y = L.LayerNormalization(epsilon=LAYER_NORM_EPS, name=f"block{i}_ln1")(x)
        y = L.MultiHeadAttention(s.heads, s.hidden // s.heads, name=f"block{i}_attention")(y, y)
        x = L.Add()([x, y])
        y = L.LayerNormalization(epsilon=LAYER_NORM_EPS, name=f"block{i}_ln2")(x)
        y = L.Dense(s.mlp, activation="gelu", name=f"block{i}_mlp1")(y)  # keras' gelu is exact unless asked
        x = L.Add()([x, L.Dense(s.hidden, name=f"block{i}_mlp2")(y)])
    x = L.LayerNormalization(epsilon=LAYER_NORM_EPS, name="ln")(x)
    return L.Dense(num_classes, name="head")(x[:, 0])


def _linear(w: dict, prefix: str) -> list:
    """A torch Linear's weights as a Dense layer's: (out, in) -> (in, out), and the bias."""
    return [w[prefix + ".weight"].T, w[prefix + ".bias"]]


def _attention(w: dict, prefix: str, d: int, heads: int) -> list:
    """A torch nn.MultiheadAttention's weights (`prefix`in_proj_weight/bias, out_proj) as a Keras MultiHeadAttention's:
    query, key and value kernels (in, heads, head width) with their biases (heads, head width), then the output's
    kernel (heads, head width, out) and bias."""
    qkv, qkv_bias = w[prefix + "in_proj_weight"], w[prefix + "in_proj_bias"]
    per_head = []
    for k in range(3):
        per_head += [qkv[k * d:(k + 1) * d].T.reshape(d, heads, d // heads),
                     qkv_bias[k * d:(k + 1) * d].reshape(heads, d // heads)]
    return per_head + [w[prefix + "out_proj.weight"].T.reshape(heads, d // heads, d), w[prefix + "out_proj.bias"]]


def load_vit_weights(model, name: str, num_classes: int) -> None:
    """Set a Keras ViT's weights to the catalogue's (torchvision's names and layouts mapped onto Keras')."""
    w, s = vit_weights(name, num_classes), vit_shape(name)
    d, heads = s.hidden, s.heads
    linear = functools.partial(_linear, w)

    model.get_layer("conv_proj").set_weights([w["conv_proj.weight"].transpose(2, 3, 1, 0), w["conv_proj.bias"]])
    model.get_layer("tokens").set_weights([w["class_token"], w["encoder.pos_embedding"]])
    for i in range(s.layers):
        p = f"encoder.layers.encoder_layer_{i}."
        model.get_layer(f"block{i}_ln1").set_weights([w[p + "ln_1.weight"], w[p + "ln_1.bias"]])
        model.get_layer(f"block{i}_ln2").set_weights([w[p + "ln_2.weight"], w[p + "ln_2.bias"]])
        model.get_layer(f"block{i}_attention").set_weights(_attention(w, p + "self_attention.", d, heads))
        model.get_layer(f"block{i}_mlp1").set_weights(linear(p + "mlp.0"))
        model.get_layer(f"block{i}_mlp2").set_weights(linear(p + "mlp.3"))
    model.get_layer("ln").set_weights([w["encoder.ln.weight"], w["encoder.ln.bias"]])
    model.get_layer("head").set_weights(linear("heads.head"))


@functools.cache
def _bert_embeddings_layer():
    """A layer holding BERT's word, position and token-type embeddings, summing a token's word embedding, its
    position's (0..n-1) and token type 0's, as the PyTorch definition does (one segment)."""
    import keras

    class BertEmbeddings(keras.layers.Layer):
        def __init__(self, vocab: int, positions: int, types: int, hidden: int, **kwargs) -> None:
            super().__init__(**kwargs)
            self.sizes = (vocab, positions, types, hidden)

        def build(self, input_shape):
            vocab, positions, types, d = self.sizes
            self.word = self.add_weight(shape=(vocab, d), initializer="zeros", name="word")
            self.position = self.add_weight(shape=(positions, d), initializer="zeros", name="position")
            self.token_type = self.add_weight(shape=(types, d), initializer="zeros", name="token_type")

        def call(self, ids):
            ops = keras.ops
            n = ops.shape(ids)[1]
            x = ops.take(self.word, ids, axis=0) + self.position[:n] + self.token_type[0]
            return ops.cast(x, self.compute_dtype)

    return BertEmbeddings


def _bert(ids, num_classes, name, training: bool = False):
    """The PyTorch BERT (bench/adapters/torch/models.py) layer for layer: embeddings, LayerNorm, post-norm blocks
    (attention, add, LayerNorm; exact-GELU MLP, add, LayerNorm; BERT's dropout 0.1 where torch has it), the tanh
    pooler on the first token and the classifier; `load_bert_weights` gives it the catalogue's weights."""
    L, s = _layers(), bert_shape(name)
    d, eps, drop = s.hidden, BERT_LAYER_NORM_EPS, BERT_DROPOUT
    x = _bert_embeddings_layer()(s.vocab, s.max_positions, s.type_vocab, d, name="embeddings")(ids)
    x = L.Dropout(drop)(L.LayerNormalization(epsilon=eps, name="embeddings_ln")(x))
    for i in range(s.layers):
        y = L.MultiHeadAttention(s.heads, d // s.heads, dropout=attention_dropout(name, training),
                                 name=f"block{i}_attention")(x, x)
        x = L.LayerNormalization(epsilon=eps, name=f"block{i}_ln1")(L.Add()([x, L.Dropout(drop)(y)]))
        y = L.Dropout(drop)(L.Dense(s.mlp, activation="gelu", name=f"block{i}_mlp1")(x))
        y = L.Dropout(drop)(L.Dense(d, name=f"block{i}_mlp2")(y))
        x = L.LayerNormalization(epsilon=eps, name=f"block{i}_ln2")(L.Add()([x, y]))
    x = L.Dropout(drop)(L.Dense(d, activation="tanh", name="pooler")(x[:, 0]))
    return L.Dense(num_classes, name="classifier")(x)


def load_bert_weights(model, name: str, num_classes: int) -> None:
    """Set a Keras BERT's weights to the catalogue's (the PyTorch definition's names and layouts mapped onto
    Keras')."""
    w, s = bert_weights(name, num_classes), bert_shape(name)
    linear = functools.partial(_linear, w)
    model.get_layer("embeddings").set_weights([w["embeddings.word.weight"], w["embeddings.position.weight"],
                                              w["embeddings.token_type.weight"]])
    model.get_layer("embeddings_ln").set_weights([w["embeddings.norm.weight"], w["embeddings.norm.bias"]])
    for i in range(s.layers):
        p = f"encoder.layers.{i}."
        model.get_layer(f"block{i}_attention").set_weights(_attention(w, p + "self_attn.", s.hidden, s.heads))
        model.get_layer(f"block{i}_ln1").set_weights([w[p + "norm1.weight"], w[p + "norm1.bias"]])
        model.get_layer(f"block{i}_mlp1").set_weights(linear(p + "linear1"))
        model.get_layer(f"block{i}_mlp2").set_weights(linear(p + "linear2"))
        model.get_layer(f"block{i}_ln2").set_weights([w[p + "norm2.weight"], w[p + "norm2.bias"]])
    model.get_layer("pooler").set_weights(linear("pooler"))
    model.get_layer("classifier").set_weights(linear("classifier"))


_CNNS = {
    "tiny_cnn": _tiny_cnn,
    "digits_mlp": _digits_mlp,
    "alexnet": _alexnet,
    "vgg16": _vgg16,
    "googlenet": _googlenet,
    **{name: functools.partial(lambda x, k, spec: _resnet(x, k, *spec), spec=spec) for name, spec in RESNETS.items()},
    "mobilenet_v2": _mobilenet_v2,
}


def _cnn_model(keras, inputs, name: str, num_classes: int, training: bool):
    """A CNN of the catalogue, holding its seeded weights where it has them (the smoke-test CNN and the digits MLP
    keep Keras' own initialisation)."""
    model = keras.Model(inputs, _CNNS[name](inputs, num_classes), name=name)
    if get_model(name).shared_weights:
        load_cnn_weights(model)
    return model


def _vit_model(keras, inputs, name: str, num_classes: int, training: bool):
    model = keras.Model(inputs, _vit(inputs, num_classes, name), name=name)
    load_vit_weights(model, name, num_classes)  # the one seeded set of weights every framework loads
    return model


def _bert_model(keras, inputs, name: str, num_classes: int, training: bool):
    model = keras.Model(inputs, _bert(inputs, num_classes, name, training), name=name)
    load_bert_weights(model, name, num_classes)
    return model


# Keras builders per model family (bench/models/families.py): (keras, its Input, name, classes, training) -> the model
KERAS_BUILDERS = FamilyBuilders("Keras")
KERAS_BUILDERS.add("cnn", _cnn_model)
KERAS_BUILDERS.add("vit", _vit_model)
KERAS_BUILDERS.add("bert", _bert_model)


def build_keras_model(name: str, input_size: int, training: bool = False):
    """Return an untrained keras.Model for catalogue model `name`: channels-last images of side `input_size`, or
    int32 token ids of sequence length `input_size`, as its family's batch is shaped; `training`: built for training
    (BERT's attention dropout)."""
    import keras

    build, spec = KERAS_BUILDERS.for_model(name)
    family = spec.model_family
    inputs = keras.Input(family.batch_shape(name, 1, input_size, "NHWC")[1:],
                         dtype="int32" if family.tokens else None)
    return build(keras, inputs, name, spec.num_classes, training)


# each weighted layer class: its kind (bench/models/cnn_weights.py) and how torch's weight is transposed into its
# kernel (convolution (kh, kw, in, out), depthwise (kh, kw, channels, 1), dense (in, out); BatchNorm: as torch's)
_CNN_KINDS = {"Conv2D": ("conv", (2, 3, 1, 0)), "DepthwiseConv2D": ("depthwise", (2, 3, 0, 1)),
              "BatchNormalization": ("bn", None), "Dense": ("linear", (1, 0))}


def _created(layer) -> int:
    """When a layer was created, among its class's: Keras names them conv2d, conv2d_1, ... in creation order."""
    return int(re.fullmatch(r".*?(?:_(\d+))?", layer.name).group(1) or 0)


def load_cnn_weights(model) -> None:
    """Give a Keras CNN the catalogue's seeded weights (bench/models/cnn_weights.py): its layers of each kind in
    creation order, which is torchvision's registration order; torch's layouts mapped onto Keras' (convolution
    kernels (kh, kw, in, out), depthwise ones (kh, kw, channels, 1), dense kernels (in, out))."""
    layers = sorted((layer for layer in model.layers if type(layer).__name__ in _CNN_KINDS),
                    key=lambda layer: (type(layer).__name__, _created(layer)))
    kinds = [_CNN_KINDS[type(layer).__name__] for layer in layers]

    def torch_shape(layer, layout) -> tuple[int, ...]:  # the kernel's shape with `layout` undone
        if layout is None:
            return tuple(layer.gamma.shape)
        kernel = tuple(layer.kernel.shape)
        return tuple(kernel[layout.index(axis)] for axis in range(len(layout)))

    drawn = in_order((kind, torch_shape(layer, layout), layout is not None and layer.use_bias)
                     for layer, (kind, layout) in zip(layers, kinds, strict=True))
    for layer, (_, layout), arrays in zip(layers, kinds, drawn, strict=True):
        layer.set_weights(arrays if layout is None else [arrays[0].transpose(layout)] + arrays[1:])


def keras_batch(x):
    """A batch drawn as the PyTorch adapter draws it (bench/models/inputs.py) in the Keras models' layout: NCHW images
    to NHWC, int64 token ids to int32 (the models' input dtype)."""
    import numpy as np

    return x.astype(np.int32) if x.ndim == 2 else np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def build_in_policy(keras, model: str, input_size: int, policy: str, training: bool = False):
    """The untrained Keras model, its layers in dtype `policy` (set only while building, so nothing built later
    inherits it): TensorFlow's and JAX's runs build through this one place."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        return build_keras_model(model, input_size, training)
    finally:
        keras.config.set_dtype_policy(previous)


def keras_attention(backend: str, gpu: bool, dropout: float = 0.0) -> dict:
    """How Keras 3 runs a transformer's attention on `backend` (the record's `attention` section): MultiHeadAttention
    calls keras.ops.dot_product_attention (no dropout, no scores returned), which each backend implements its own
    way; with attention dropout (BERT in training) it computes einsum, softmax, dropout, einsum itself."""
    if dropout:
        return {"implementation": f"keras MultiHeadAttention with attention dropout {dropout:g}: its own einsum, "
                                  "softmax, dropout, einsum",
                "fused": False,
                "evidence": "Keras 3 calls keras.ops.dot_product_attention only without attention dropout"}
    if backend == "jax":
        return {"implementation": "keras MultiHeadAttention -> keras.ops.dot_product_attention -> "
                                  "jax.nn.dot_product_attention",
                "fused": None if gpu else False,
                "evidence": "jax.nn.dot_product_attention implementation 'xla': einsum, softmax, einsum as XLA fuses "
                            "them (cuDNN flash attention only on a GPU, where Keras' checks pass)"}
    return {"implementation": "keras MultiHeadAttention -> keras.ops.dot_product_attention (TensorFlow backend)",
            "fused": False,
            "evidence": "einsum, softmax, einsum as TensorFlow ops (Keras' TensorFlow backend has no fused attention "
                        "kernel)"}
