"""The model catalogue: which CNNs and transformers exist, their published cost, and the inputs they accept (images of
a side, or sequences of token ids of a length)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

from ..registry import Registry
from .families import FAMILIES, ModelFamily


@dataclass(frozen=True)
class ModelSpec:
    """What the harness knows about one model before any framework is imported."""

    name: str
    num_classes: int = 1000
    default_image_size: int = 224
    min_image_size: int = 32
    max_image_size: int = 4096
    published_gmacs_224: float | None = None
    published_params_millions: float | None = None
    source: str = ""
    tiny: bool = False  # a model for tests, not in published figures
    note: str = ""
    # its family (bench/models/families.py): what it reads, its sample unit, its batch, its FLOP definition
    family: str = "cnn"
    default_sequence_length: int | None = None
    max_sequence_length: int | None = None
    # one seeded set of weights every framework loads (bench/models/cnn_weights.py for a CNN,
    # bench/models/transformers.py for a transformer), so its outputs are compared with PyTorch's before any timing;
    # False: each framework's own initialiser (the smoke-test CNN and the digits MLP, whose distributed runs record
    # accuracy over time from their framework's initialisation)
    shared_weights: bool = True

    def __post_init__(self) -> None:
        FAMILIES.get(self.family)  # an unknown family fails here, naming the valid ones

    @property
    def model_family(self) -> ModelFamily:
        """Its family's declaration."""
        return FAMILIES.get(self.family)

    @property
    def input_sizes(self) -> tuple[int, int]:
        """The least and the most input size: an image's side, or a token model's sequence length."""
        return (1, self.max_sequence_length) if self.model_family.tokens else (self.min_image_size, self.max_image_size)

    @property
    def default_input_size(self) -> int:
        """Its default input size: an image's side, or a token model's sequence length."""
        return self.default_sequence_length if self.model_family.tokens else self.default_image_size


MODELS: Registry[ModelSpec] = Registry("model")


def _published() -> dict[str, dict[str, str]]:
    """Published costs (copied from the reference data, source column kept)."""
    text = resources.files("bench.data").joinpath("model_costs.csv").read_text()
    return {row["model"]: row for row in csv.DictReader(text.splitlines())}


def _register_catalogue() -> None:
    published = _published()
    # min_image_size: the smallest input for which every layer still has a non-empty output.
    real = {
        "alexnet": dict(min_image_size=63),
        "googlenet": dict(note="torchvision variant: BN, 3x3 in the '5x5' branch, no aux heads"),
        "vgg16": dict(),
        "resnet18": dict(),
        "resnet50": dict(note="ResNet v1.5 (stride in the 3x3 conv), convs without bias"),
        "resnet152": dict(note="ResNet v1.5 (stride in the 3x3 conv), convs without bias"),
        "mobilenet_v2": dict(),
    }
    for name, extra in real.items():
        row = published.get(name)
        MODELS.add(
            name,
            ModelSpec(
                name=name,
                published_gmacs_224=float(row["forward_gmacs_224"]) if row else None,
                published_params_millions=float(row["params_millions"]) if row else None,
                source=row["source"] if row else "",
                **extra,
            ),
        )
    MODELS.add(
        "tiny_cnn",
        ModelSpec(
            name="tiny_cnn",
            num_classes=10,
            default_image_size=32,
            min_image_size=8,
            tiny=True,
            shared_weights=False,
            note="two conv+BN+ReLU blocks, global pool, linear: for tests",
        ),
    )
    MODELS.add(
        "digits_mlp",
        ModelSpec(
            name="digits_mlp",
            num_classes=10,
            default_image_size=8,
            min_image_size=8,
            max_image_size=8,
            tiny=True,
            shared_weights=False,
            note="MLP 192-64-10 on scikit-learn's 8x8 digits (grey replicated to 3 channels): "
                 "accuracy over time in distributed runs",
        ),
    )


    MODELS.add("vit_b16", ModelSpec(
        name="vit_b16", min_image_size=224, max_image_size=224, family="vit",
        published_gmacs_224=float(published["vit_b16"]["forward_gmacs_224"]),
        published_params_millions=float(published["vit_b16"]["params_millions"]), source=published["vit_b16"]["source"],
        note="ViT-B/16 (torchvision's VisionTransformer): 16x16 patches, 12 pre-norm blocks of 12 heads, width 768"))
    MODELS.add("tiny_vit", ModelSpec(
        name="tiny_vit", num_classes=10, default_image_size=32, min_image_size=32, max_image_size=32, tiny=True,
        family="vit", note="a 2-block ViT (8x8 patches, 4 heads, width 64) on 32x32 images: for tests"))
    bert = published["bert_base"]
    MODELS.add("bert_base", ModelSpec(
        name="bert_base", num_classes=2, family="bert", default_sequence_length=128,
        max_sequence_length=512, published_params_millions=float(bert["params_millions"]), source=bert["source"],
        note="BERT-base (12 post-norm blocks of 12 heads, width 768, vocabulary 30522) with a 2-class "
             "sequence-classification head, on token ids: one segment, no padding"))
    MODELS.add("tiny_bert", ModelSpec(
        name="tiny_bert", num_classes=2, family="bert", default_sequence_length=16,
        max_sequence_length=64, tiny=True,
        note="a 2-block BERT (4 heads, width 64, vocabulary 1000) on 16-token sequences: for tests"))


_register_catalogue()


def get_model(name: str) -> ModelSpec:
    return MODELS.get(name)


def family_of(model: str) -> ModelFamily:
    """Catalogue model `model`'s family."""
    return MODELS.get(model).model_family


def list_models(pattern: str = "*", include_tiny: bool = True) -> list[str]:
    return [n for n in MODELS.names(pattern) if include_tiny or not MODELS.get(n).tiny]
