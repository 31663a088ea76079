"""Does the input pipeline bound training here? Files through each framework's own pipeline against synthetic data."""

from __future__ import annotations

import pandas as pd

from ..input_pipeline import claim_verdicts, input_figure
from .base import Figures, Section, Table, Text, heading

INTRO = ("Every other run feeds random tensors already in memory, as the 2019 study did. Here the same configs read "
         "JPEG files (a procedural, ImageNet-like set made here, about 110 KB a file, or `--data-dir` images) "
         "through each framework's own input pipeline, decoding and augmenting (RandomResizedCrop to the model's "
         "size, flip, the same normalisation) inside the measured step: PyTorch's DataLoader with decode_jpeg and "
         "transforms v2; TensorFlow's tf.data; JAX through tf.data (it has no loader of its own and none is "
         "installed here); ONNX Runtime and OpenVINO fed by torchvision's decode pool. Every framework reads the "
         "same files in the same order (the record's checksum says so). *files / synthetic* is the ratio of "
         "images/s with its 95% interval; *data wait* is the share of the step spent waiting for the next batch; "
         "the dashed line is the loader alone (no model) at its best of 0, 1 and 2 workers; *per core* is its rate "
         "at one worker. Loader and compute share the cores by one rule for every framework (the step keeps its "
         "threads; the loader gets max(1, min(8, cores // 4)) workers beside them).")


def _question(t: pd.DataFrame) -> str:
    gpu = t["platform"].str.contains("GPU|NVIDIA|cuda", case=False).any()
    if gpu:
        return ("On a GPU the question is whether the loader, on the host's cores, keeps the GPU fed: where the "
                "loader alone is slower than the synthetic step, it cannot.")
    return ("On a CPU the question is whether decoding competes with compute for the same cores: a shallow network "
            "at a small batch makes it visible.")


def render(d) -> Section:
    t = d.inputs
    if t is None or t.empty:
        return Section()
    shown = t[["framework", "model", "mode", "batch_size", "synthetic_ips", "files_ips", "ratio", "ci_low", "ci_high",
               "verdict", "data_wait_share", "ceiling_ips", "ceiling_per_core", "loader_workers", "cores",
               "skipped"]].rename(columns={
        "synthetic_ips": "images/s synthetic", "files_ips": "images/s files", "ratio": "files / synthetic",
        "data_wait_share": "data wait", "ceiling_ips": "loader alone (img/s)", "ceiling_per_core": "per core",
        "loader_workers": "workers", "skipped": "files skipped"})
    out = Section([heading("Does the input pipeline bound training here?", INTRO), Text(_question(t)), Table(shown)])
    figure = input_figure(t)
    if figure is not None:
        out += Section([Figures(figure, "input_pipeline")])
    claims = claim_verdicts(t, d.margin)
    if not claims.empty:
        out += Section([heading("The two claims", "The 2019 study's holds where files and synthetic data are "
                                f"equivalent within +-{d.margin:.0%}; HKBU's holds for a shallow network where "
                                "synthetic data is decidedly faster.", level=3), Table(claims)])
    return out
