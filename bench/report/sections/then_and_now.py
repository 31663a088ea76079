"""The 2019 study's published measurements beside this project's, for the models it measured."""

from __future__ import annotations

from ..gpu_then_and_now import gpu_then_and_now
from ..published import then_and_now
from .base import Section, optional

INTRO = ("Its published measurements (dashed) beside this project's (solid) for the models it measured (VGG16, "
         "ResNet-152: profile `full`; where they were not run here, this section is left out and *Study coverage* "
         "gives the command). Its 'training' had no optimizer update, so its training numbers are not directly "
         "comparable with a full training step.")


GPU_INTRO = ("The 2019 study's GPUs (Tesla P100 and T4: its own numbers, and published single-GPU figures for them) "
             "beside the GPUs measured here, at the same framework, model, mode, precision and batch size (left out "
             "where no GPU ran; the `gpu` profile measures them). The 2019 'training' had no optimizer update.")


def render(d) -> Section:
    return (optional("Then and now: the 2019 study", then_and_now(d.configs, d.seed), INTRO, "then_and_now")
            + optional("Then and now on GPUs: P100 and T4 beside these GPUs", gpu_then_and_now(d.configs, d.seed,
                                                                                             d.published), GPU_INTRO,
                       level=3))
