"""PyTorch model builders: torchvision for catalogue models (its VisionTransformer with the catalogue's seeded weights
for the transformers), a small CNN for tests."""

from __future__ import annotations

from ...models.catalogue import get_model
from ...models.transformers import VITS, vit_shape, vit_weights


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


def build_torch_model(name: str):
    """Return an untrained torch.nn.Module for catalogue model `name` (random init, no download)."""
    spec = get_model(name)
    if name in VITS:
        return _vit(name, spec.num_classes)
    if name == "tiny_cnn":
        return _tiny_cnn(spec.num_classes)
    if name == "digits_mlp":
        return _digits_mlp(spec.num_classes)
    import torchvision.models as tvm

    kwargs = {"weights": None, "num_classes": spec.num_classes}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=True)
    return getattr(tvm, name)(**kwargs)
