"""What every framework's int8 path shares: the calibration and held-out sets (procedural ImageNet-normalised images
for an image model, uniform token ids for a token model), how a quantisation is described in the record, and the
fp32/int8 logits its agreement is judged on.

Weights are random (no download here), so the images are what gives activations realistic ranges: calibration runs
on one seeded set that is never measured, agreement on another seed's set that calibration never saw. A token model
has no such images: its two sets are token ids drawn from two seeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..models import family_of
from ..models.inputs import synthetic_batch

CALIBRATION_SEED, HELD_OUT_SEED = 3301, 3302  # two sets of the procedural generator, never the same images
CALIBRATION_COUNT, HELD_OUT_COUNT = 32, 32
# torchvision's ImageNet normalisation (the catalogue's models are torchvision's, the Keras and Gluon ones match them)
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def normalise(images: np.ndarray, layout: str = "NCHW") -> np.ndarray:
    """uint8 NHWC images as the models expect them: float32 in [0, 1], ImageNet mean and std, in `layout`."""
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if layout == "NCHW" else x)


def _cache_dir() -> Path:
    return Path(os.environ.get("BENCH_IMAGE_CACHE") or Path.home() / ".cache" / "dlbench" / "images") / "arrays"


def quantised_cache_root() -> Path:
    """Where quantised models are kept between processes (BENCH_INT8_CACHE overrides; beside the image cache)."""
    return Path(os.environ.get("BENCH_INT8_CACHE") or Path.home() / ".cache" / "dlbench" / "int8")


def fingerprint(array: np.ndarray) -> str:
    """A short hash of an array's bytes and shape (the calibration images a quantised model was made from)."""
    return hashlib.sha256(array.tobytes() + str(array.shape).encode()).hexdigest()[:16]


def file_fingerprint(path: Path | str) -> str:
    """A short hash of a file's bytes: the fp32 model a quantised one was made from (its weights and graph), so that
    a cached quantisation of other weights is never served for this model."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cached_build(inputs: dict, build: Callable[[Path], None], root: Path | None = None) -> tuple[Path, bool]:
    """The folder `build(folder)` fills for `inputs` (every explicit input of the quantisation: tool and version,
    model, weights' seed, image size, the fp32 model file's fingerprint, the calibration images' fingerprint,
    settings), built once and kept; returns (folder, whether it was already there). Built in a private folder and
    renamed into place, so a concurrent process sees a whole model or none."""
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:20]
    root = root or quantised_cache_root()
    folder = root / key
    if (folder / "inputs.json").exists():
        return folder, True
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}-"))
    try:
        build(tmp)
        (tmp / "inputs.json").write_text(json.dumps(inputs, sort_keys=True, indent=1, default=str))
        os.replace(tmp, folder)
    except OSError:  # another process put it there first: use theirs
        if not (folder / "inputs.json").exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder, False


def image_set(seed: int, count: int, size: int) -> np.ndarray:
    """`count` procedural images of set `seed` at size x size (uint8 NHWC), drawn once and cached (each process
    that quantises would otherwise redraw them: about 0.15 s an image at 224x224)."""
    path = _cache_dir() / f"procedural-{seed}-{count}-{size}.npy"
    try:
        return np.load(path)
    except (OSError, ValueError):
        pass
    # lazily, as a framework is: the images need Pillow, which an interpreter that only runs (a GPU container: `bench
    # gpucheck`) may lack; only quantising draws them
    from ..images.procedural import sample_arrays

    images = sample_arrays(count, seed, size, size)
    try:  # atomic: a concurrent process reads the whole file or none
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as tmp:
            np.save(tmp, images)
        os.replace(tmp.name, path)
    except OSError:
        pass  # a read-only cache: the images are still right, only not kept
    return images


@dataclass(frozen=True)
class ImageSets:
    """The calibration set (never measured) and the held-out agreement set, as uint8 NHWC arrays."""

    calibration: np.ndarray
    held_out: np.ndarray
    calibration_seed: int = CALIBRATION_SEED
    held_out_seed: int = HELD_OUT_SEED

    @classmethod
    def for_size(cls, size: int, calibration_count: int = CALIBRATION_COUNT,
                 held_out_count: int = HELD_OUT_COUNT) -> ImageSets:
        return cls(image_set(CALIBRATION_SEED, calibration_count, size), image_set(HELD_OUT_SEED, held_out_count, size))

    def inputs(self, which: str, layout: str = "NCHW") -> np.ndarray:
        """Set `which` ("calibration" or "held_out") as the model reads it: normalised float32 in `layout`."""
        return normalise(getattr(self, which), layout)

    def describe(self) -> dict:
        """The record's description of the two sets."""
        return {"source": "bench.images.procedural.sample_arrays (procedural ImageNet-like JPEGs, centre-cropped and "
                          "resized), ImageNet mean/std normalisation",
                "calibration": {"seed": self.calibration_seed, "images": len(self.calibration)},
                "held_out": {"seed": self.held_out_seed, "images": len(self.held_out)}}


@dataclass(frozen=True)
class TokenSets:
    """A token model's calibration set (never measured) and held-out agreement set: int64 token ids, uniform over
    its vocabulary, of its sequence length (bench/models/inputs.py)."""

    calibration: np.ndarray
    held_out: np.ndarray
    calibration_seed: int = CALIBRATION_SEED
    held_out_seed: int = HELD_OUT_SEED

    @classmethod
    def for_model(cls, model: str, length: int, calibration_count: int = CALIBRATION_COUNT,
                  held_out_count: int = HELD_OUT_COUNT) -> TokenSets:
        draw = lambda seed, n: synthetic_batch(model, n, length, np.random.default_rng(seed))  # noqa: E731
        return cls(draw(CALIBRATION_SEED, calibration_count), draw(HELD_OUT_SEED, held_out_count))

    def inputs(self, which: str, layout: str = "NCHW") -> np.ndarray:
        """Set `which` as the model reads it: the token ids themselves (a layout is an image's)."""
        return getattr(self, which)

    def describe(self) -> dict:
        return {"source": "uniform token ids over the model's vocabulary (bench/models/inputs.py)",
                "calibration": {"seed": self.calibration_seed, "sequences": len(self.calibration),
                                "length": int(self.calibration.shape[1])},
                "held_out": {"seed": self.held_out_seed, "sequences": len(self.held_out),
                             "length": int(self.held_out.shape[1])}}


def input_sets(model: str, input_size: int) -> ImageSets | TokenSets:
    """The calibration and held-out sets of `model` at `input_size` (an image's side, or a sequence length)."""
    if family_of(model).tokens:
        return TokenSets.for_model(model, input_size)
    return ImageSets.for_size(input_size)


def batches(x: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`x` cut into consecutive batches (the last may be shorter)."""
    return [x[i:i + batch_size] for i in range(0, len(x), batch_size)]


def full_batches(x: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`x` cut into batches of exactly `batch_size`, the last filled by wrapping to the start (for a graph exported
    at the run's batch size); at least one batch."""
    count = max(1, -(-len(x) // batch_size)) * batch_size
    return batches(np.resize(x, (count, *x.shape[1:])), batch_size)


def logits_of(predict: Callable[[np.ndarray], np.ndarray], x: np.ndarray, batch_size: int) -> np.ndarray:
    """The model's logits for every sample of `x`, `batch_size` at a time, as float32 (N, classes)."""
    return np.concatenate([np.asarray(predict(b), dtype=np.float32).reshape(len(b), -1)
                           for b in batches(x, batch_size)])


@dataclass
class Quantised:
    """What an int8 workload reports of its quantisation: the tool and method, the calibration set, the seconds it
    took (apart from the steady state, like compile time), and the held-out logits of fp32 and int8 that the
    agreement check compares (bench/measurement/agreement.py; not kept in the record)."""

    tool: str
    method: str
    sets: dict
    quantise_s: float
    fp32_reference: str
    fp32_logits: np.ndarray = field(repr=False)
    int8_logits: np.ndarray = field(repr=False)
    details: dict = field(default_factory=dict)

    def describe(self) -> dict:
        """The record's `settings["int8"]` (the agreement is added by the run)."""
        return {"tool": self.tool, "method": self.method, "sets": self.sets, "quantise_s": self.quantise_s,
                "fp32_reference": self.fp32_reference, **self.details}


class Stopwatch:
    """Seconds since it was made (the quantisation's own time, recorded apart from the timed loop)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0
