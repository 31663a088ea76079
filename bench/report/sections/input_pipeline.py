"""Does the input pipeline bound training here? Files through each framework's own pipeline against synthetic data."""

from __future__ import annotations

import pandas as pd

from ...stats.printed import ratio_interval
from ..input_pipeline import (
    CLAIM_2019,
    CLAIM_HKBU,
    QUESTION_CPU,
    claim_summary,
    claim_verdicts,
    direction,
    input_figure,
    loader_ceilings,
)
from .base import Figures, Section, Table, Text, heading, number

INTRO = ("Every other run feeds random tensors already in memory, as the 2019 study did. Here the same configs read "
         "JPEG files (a procedural, ImageNet-like set made here, about 110 KB a file, or `--data-dir` images) "
         "through each framework's own input pipeline, decoding and augmenting (RandomResizedCrop to the model's "
         "size, flip, the same normalisation) inside the measured step: PyTorch's DataLoader with decode_jpeg and "
         "transforms v2; TensorFlow's tf.data; JAX through tf.data (it has no loader of its own and none is "
         "installed here); MXNet's gluon.data DataLoader (its wait for a batch shows inside its step's sync, not as "
         "data wait); ONNX Runtime and OpenVINO fed by torchvision's decode pool. Every framework reads the "
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
        "size": number(r["image_size"], ".0f"),
        "images/s synthetic": number(r["synthetic_ips"], ".1f"), "images/s files": number(r["files_ips"], ".1f"),
        "files / synthetic [95% CI]": (ratio_interval(r["ratio"], r["ci_low"], r["ci_high"])
                                       if r["ci_low"] == r["ci_low"] and r["ci_low"] is not None else ""),
        "verdict": direction(r["verdict"], r["ratio"], d.judge), "data wait": number(r["data_wait_share"], ".1%"),
        "loader alone img/s (per core)": (f"{r['ceiling_ips']:.0f} ({number(r['ceiling_per_core'], '.0f')})"
                                          if r["ceiling_ips"] == r["ceiling_ips"] else ""),
        "workers / cores": f"{number(r['loader_workers'], '.0f')} / {number(r['cores'], '.0f')}",
        "files skipped": number(r["skipped"], ".0f")}
        for _, r in t.sort_values(["model", "image_size", "mode", "framework"], kind="stable").iterrows()])
    ran = ", ".join(sorted(set(t["framework"])))
    here = (f"Measured here: {ran} ({', '.join(sorted(set(t['model'])))}); every framework's loader, ResNet-50 "
            "beside ResNet-18 in training and inference: `make sweep PROFILE=input && make render` (about 20 "
            "minutes here); AlexNet too and every model at 224x224: PROFILE=input-full.")
    out = Section([heading("Does the input pipeline bound training here?", INTRO), Text(_question(t) + " " + here),
                   Table(shown)])
    ceilings = _ceilings(t)
    if ceilings is not None:
        out += Section([heading("The loader alone, per framework", CEILING_TEXT, level=3), Table(ceilings)])
    figure = input_figure(t)
    if figure is not None:
        out += Section([Figures(figure, "input_pipeline")])
    claims = claim_verdicts(t, d.judge)
    if not claims.empty:
        said = [f"**{study}**: {text}." for study in ("2019", "HKBU") if (text := claim_summary(claims, study))]
        out += Section([heading("The two claims", "Each row's files-vs-synthetic verdict is the project's four "
                                f"at {d.judge.within}. The 2019 study's claim (*{CLAIM_2019}*) holds where the two "
                                f"differ by less than the margin; HKBU's (*{CLAIM_HKBU}*) holds for a shallow network "
                                "where synthetic data wins. Both are about GPUs: on a CPU the 2019 claim is not "
                                f"testable, and the rows answer instead *{QUESTION_CPU}*", level=3),
                        Text(" ".join(said)),
                        Table(claims.assign(claim=claims["claim"].str.split(":").str[0]))])
    return out


CEILING_TEXT = ("Images/s of each framework's pipeline with no model (decoding, the random crop to the size, flip and "
                "normalisation), at 0 workers (the main process), 1 and 2 workers or parallel calls, after one warm "
                "batch; *per core* is the rate at one worker. The median over the framework's configs of that size "
                "(the model does not enter it). ONNX Runtime's and OpenVINO's loader is PyTorch's DataLoader (their "
                "decode pool).")


def _ceilings(t: pd.DataFrame) -> pd.DataFrame | None:
    c = loader_ceilings(t)
    if c.empty:
        return None
    return pd.DataFrame([{
        "framework": r["framework"], "crop": f"{int(r['image_size'])}x{int(r['image_size'])}",
        "0 workers img/s": number(r["ceiling_w0"], ".0f"), "1 worker img/s": number(r["ceiling_w1"], ".0f"),
        "2 workers img/s": number(r["ceiling_w2"], ".0f"), "per core img/s": number(r["ceiling_per_core"], ".0f"),
        "cores": number(r["cores"], ".0f")} for _, r in c.iterrows()])
