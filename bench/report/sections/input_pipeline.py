"""Does the input pipeline bound training here? Files through each framework's own pipeline against synthetic data."""

from __future__ import annotations

import pandas as pd

from ..input_pipeline import claim_verdicts, input_figure
from .base import Figures, Section, Table, Text, heading, number

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
    shown = pd.DataFrame([{
        "framework": r["framework"], "model": r["model"], "mode": r["mode"], "batch": int(r["batch_size"]),
        "images/s synthetic": number(r["synthetic_ips"], ".1f"), "images/s files": number(r["files_ips"], ".1f"),
        "files / synthetic [95% CI]": (f"{r['ratio']:.2f}x [{r['ci_low']:.2f}-{r['ci_high']:.2f}]"
                                       if r["ci_low"] == r["ci_low"] and r["ci_low"] is not None else ""),
        "verdict": r["verdict"], "data wait": number(r["data_wait_share"], ".1%"),
        "loader alone img/s (per core)": (f"{r['ceiling_ips']:.0f} ({number(r['ceiling_per_core'], '.0f')})"
                                          if r["ceiling_ips"] == r["ceiling_ips"] else ""),
        "workers / cores": f"{number(r['loader_workers'], '.0f')} / {number(r['cores'], '.0f')}",
        "files skipped": number(r["skipped"], ".0f")} for _, r in t.iterrows()])
    ran = ", ".join(sorted(set(t["framework"])))
    here = (f"Measured here: {ran} ({', '.join(sorted(set(t['model'])))}); every framework, ResNet-50 and AlexNet "
            "beside ResNet-18: `make sweep PROFILE=input && make render`.")
    out = Section([heading("Does the input pipeline bound training here?", INTRO), Text(_question(t) + " " + here),
                   Table(shown)])
    figure = input_figure(t)
    if figure is not None:
        out += Section([Figures(figure, "input_pipeline")])
    claims = claim_verdicts(t, d.margin)
    if not claims.empty:
        out += Section([heading("The two claims", "The 2019 study's holds where files and synthetic data are "
                                f"equivalent within +-{d.margin:.0%}; HKBU's holds for a shallow network where "
                                "synthetic data is decidedly faster.", level=3), Table(claims)])
    return out
