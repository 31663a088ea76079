"""Architecture tables shared by the hand-written model definitions (Keras, Gluon), taken from torchvision."""

from __future__ import annotations

from collections.abc import Iterator

BATCH_NORM = dict(epsilon=1e-5, momentum=0.9)  # torch BatchNorm2d's defaults (its momentum 0.1 is Keras'/Gluon's 0.9)
GOOGLENET_BN_EPS = 1e-3  # torchvision's GoogLeNet (BasicConv2d) sets its BatchNorms' epsilon to 0.001

# MobileNetV2's inverted-residual stages: expansion t, output channels c, repeats n, first stride s.
MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1))


# Units per stage and whether they are bottlenecks (torchvision's ResNet v1.5 family).
RESNETS = {"resnet18": ((2, 2, 2, 2), False), "resnet50": ((3, 4, 6, 3), True), "resnet152": ((3, 8, 36, 3), True)}


def resnet_units(blocks: tuple[int, ...], bottleneck: bool) -> Iterator[tuple[int, int, bool]]:
    """Each residual unit of a ResNet after the stem: (width, stride, whether its shortcut is a projection)."""
    expansion = 4 if bottleneck else 1
    in_ch = 64
    for stage, n in enumerate(blocks):
        width = 64 * 2**stage
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            yield width, stride, stride != 1 or in_ch != width * expansion
            in_ch = width * expansion


def mobilenet_v2_units() -> Iterator[tuple[int, int, int, int]]:
    """Each inverted-residual unit: (input channels, expansion, output channels, stride)."""
    in_ch = 32
    for t, c, n, s in MOBILENET_V2_STAGES:
        for i in range(n):
            yield in_ch, t, c, s if i == 0 else 1
            in_ch = c
