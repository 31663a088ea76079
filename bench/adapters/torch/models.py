"""PyTorch model builders: torchvision for catalogue models holding the catalogue's seeded weights (the CNNs' from
bench/models/cnn_weights.py, the ViTs' from bench/models/transformers.py), BERT written here from
nn.TransformerEncoderLayer, a small CNN for tests."""

from __future__ import annotations

from ...models.catalogue import get_model
from ...models.cnn_weights import in_order
from ...models.transformers import (
    BERT_DROPOUT,
    BERT_LAYER_NORM_EPS,
    bert_shape,
    bert_weights,
    vit_shape,
    vit_weights,
)
from ..builders import FamilyBuilders


def _tiny_cnn(num_classes: int):
    from torch import nn

    def block(cin: int, cout: int) -> list:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(
        *block(3, 16),
        nn.MaxPool2d(2),
        *block(16, 32),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, num_classes),
    )


def _digits_mlp(num_classes: int, image_size: int = 8):
    from torch import nn

    return nn.Sequential(nn.Flatten(), nn.Linear(3 * image_size * image_size, 64), nn.ReLU(),
                         nn.Linear(64, num_classes))


def _vit(name: str, num_classes: int):
    """torchvision's VisionTransformer in `name`'s shape, holding the catalogue's seeded weights
    (bench/models/transformers.py): the same arrays every framework loads."""
    import torch
    from torchvision.models.vision_transformer import VisionTransformer

    s = vit_shape(name)
    model = VisionTransformer(image_size=s.image_size, patch_size=s.patch_size, num_layers=s.layers, num_heads=s.heads,
                              hidden_dim=s.hidden, mlp_dim=s.mlp, num_classes=num_classes)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in vit_weights(name, num_classes).items()})
    return model


def _bert(name: str, num_classes: int):
    """BERT for sequence classification (bench/models/transformers.py) on token ids, holding the catalogue's seeded
    weights: embeddings, post-norm nn.TransformerEncoderLayers (exact GELU, LayerNorm eps 1e-12; its inference fast
    path and scaled_dot_product_attention as torch chooses), the pooler and the classifier."""
    import torch
    from torch import nn

    s = bert_shape(name)

    class Embeddings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(s.vocab, s.hidden)
            self.position = nn.Embedding(s.max_positions, s.hidden)
            self.token_type = nn.Embedding(s.type_vocab, s.hidden)
            self.norm = nn.LayerNorm(s.hidden, eps=BERT_LAYER_NORM_EPS)
            self.dropout = nn.Dropout(BERT_DROPOUT)

        def forward(self, ids):  # one segment (token type 0), positions 0..n-1
            x = self.word(ids) + self.position.weight[: ids.shape[1]] + self.token_type.weight[0]
            return self.dropout(self.norm(x))

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = Embeddings()
            layer = nn.TransformerEncoderLayer(s.hidden, s.heads, s.mlp, BERT_DROPOUT, activation="gelu",
                                               layer_norm_eps=BERT_LAYER_NORM_EPS, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, s.layers, enable_nested_tensor=False)
            self.pooler = nn.Linear(s.hidden, s.hidden)
            self.dropout = nn.Dropout(BERT_DROPOUT)
            self.classifier = nn.Linear(s.hidden, num_classes)

        def forward(self, ids):
            x = self.encoder(self.embeddings(ids))
            return self.classifier(self.dropout(torch.tanh(self.pooler(x[:, 0]))))

    model = Bert()
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in bert_weights(name, num_classes).items()})
    return model


def _cnn(name: str, num_classes: int):
    """A CNN of the catalogue: torchvision's, holding the catalogue's seeded weights, or a small one for tests."""
    if name == "tiny_cnn":
        return _tiny_cnn(num_classes)
    if name == "digits_mlp":
        return _digits_mlp(num_classes)
    import torchvision.models as tvm

    kwargs = {"weights": None, "num_classes": num_classes}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(tvm, name)(**kwargs)
    if get_model(name).shared_weights:
        load_cnn_weights(model)
    return model


# PyTorch builders per model family (bench/models/families.py): (name, classes) -> an nn.Module
TORCH_BUILDERS = FamilyBuilders("PyTorch")
TORCH_BUILDERS.add("cnn", _cnn)
TORCH_BUILDERS.add("vit", _vit)
TORCH_BUILDERS.add("bert", _bert)


def build_torch_model(name: str):
    """Return an untrained torch.nn.Module for catalogue model `name` (random init, no download), built by its
    family's builder."""
    build, spec = TORCH_BUILDERS.for_model(name)
    return build(name, spec.num_classes)


def cnn_layer_kind(module) -> str | None:
    """A module's kind in bench/models/cnn_weights.py (None: it holds no weights)."""
    from torch import nn

    if isinstance(module, nn.Conv2d):
        return "depthwise" if module.groups > 1 else "conv"
    if isinstance(module, nn.BatchNorm2d):
        return "bn"
    return "linear" if isinstance(module, nn.Linear) else None


def load_cnn_weights(model) -> None:
    """Give a torchvision CNN the catalogue's seeded weights: its layers of each kind in registration order."""
    import torch

    layers = [(kind, [module.weight, module.bias, module.running_mean, module.running_var] if kind == "bn"
               else [module.weight] + ([module.bias] if module.bias is not None else []))
              for module in model.modules() if (kind := cnn_layer_kind(module))]
    drawn = in_order((kind, tuple(targets[0].shape), len(targets) == 2) for kind, targets in layers)
    with torch.no_grad():
        for (_, targets), arrays in zip(layers, drawn, strict=True):
            for target, value in zip(targets, arrays, strict=True):
                target.copy_(torch.from_numpy(value))
