"""The 2019 study's GPUs (Tesla P100 and T4: its own tables, and the single-GPU published figures for them) beside
this project's GPU runs, at the same model, mode, framework, precision and batch size."""

from __future__ import annotations

import pandas as pd

from ..adapters import framework_of
from ..host.devices import is_gpu

# The GPUs the 2019 study measured (its results/p100.txt and t4.txt); published figures for them are set beside too.
STUDY_GPUS = ("P100", "T4")
KEYS = ["framework", "model", "mode", "precision", "batch_size"]


def _study_gpu(hardware: pd.Series) -> pd.Series:
    return hardware.str.contains("|".join(rf"\b{g}\b" for g in STUDY_GPUS), regex=True)


def references(seed: pd.DataFrame | None, published: pd.DataFrame | None) -> pd.DataFrame:
    """The P100 and T4 numbers, one shape: the 2019 study's (fp32; its 'training' had no optimizer update) and the
    published single-GPU ones."""
    parts = []
    if seed is not None and not seed.empty:
        s = seed[_study_gpu(seed["hardware"])]
        parts.append(s.assign(precision="fp32", then="2019 study")[["hardware", "then", *KEYS, "images_per_sec"]])
    if published is not None and not published.empty:
        single = pd.to_numeric(published["accelerators"], errors="coerce") == 1
        p = published[single & _study_gpu(published["hardware"])]
        p = p.assign(batch_size=pd.to_numeric(p["batch_per_device"], errors="coerce"), then=p["source"])
        parts.append(p[["hardware", "then", *KEYS, "images_per_sec"]])
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out.assign(framework=out["framework"].map(framework_of))


def gpu_then_and_now(configs: pd.DataFrame, seed: pd.DataFrame | None, published: pd.DataFrame | None) -> pd.DataFrame:
    """Each GPU config measured here beside every P100 / T4 number at its framework, model, mode, precision and
    batch: the images/s of both and how many times faster this GPU is. Empty without GPU configs or matches."""
    if configs is None or configs.empty or "device" not in configs:
        return pd.DataFrame()
    gpu = configs[configs["device"].map(is_gpu)]
    then = references(seed, published)
    if gpu.empty or then.empty:
        return pd.DataFrame()
    here = gpu[["platform", *KEYS, "images_per_sec_median"]]
    both = here.merge(then, on=KEYS)
    if both.empty:
        return pd.DataFrame()
    both = both.sort_values(["model", "mode", "framework", "precision", "batch_size", "hardware"])
    return pd.DataFrame({
        "model": both["model"], "mode": both["mode"], "framework": both["framework"],
        "precision": both["precision"], "batch": both["batch_size"].astype(int),
        "measured here": both["platform"], "images/s here": both["images_per_sec_median"].round(1),
        "then: GPU": both["hardware"], "images/s then": both["images_per_sec"].round(1),
        "here / then": (both["images_per_sec_median"] / both["images_per_sec"]).map("{:.1f}x".format),
        "then: source": both["then"]}).reset_index(drop=True)
