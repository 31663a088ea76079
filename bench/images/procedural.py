"""A procedural, ImageNet-like JPEG data set made offline: seeded, byte-identical per seed, with its manifest.

No download is possible here and random-noise JPEGs decode atypically (no smooth regions, huge files), so each image
is drawn as photographs are built up: a smooth two-colour gradient, a few filled shapes (some with their own
gradient), a line of text, a mild blur and sensor-like noise, then JPEG-encoded. Image i depends only on (seed, i),
so a larger set starts with the smaller one's files. Sizes follow ImageNet's common shapes (500x375 and its
neighbours); quality and noise are tuned so the mean file is about 110 KB (ImageNet's mean is about 108 KB).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, features
from PIL import __version__ as PIL_VERSION

from ..errors import ConfigError

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
# ImageNet's most common (width, height) shapes; the generator picks one per image.
SHAPES = ((500, 375), (375, 500), (500, 333), (500, 400), (333, 500), (500, 500))
TARGET_MEAN_BYTES = 110_000
HISTOGRAM_BINS = 16


def default_cache_root() -> Path:
    """Outside the clone, beside the cached environments (BENCH_IMAGE_CACHE overrides)."""
    return Path(os.environ.get("BENCH_IMAGE_CACHE") or Path.home() / ".cache" / "dlbench" / "images")


@dataclass(frozen=True)
class ImageSetSpec:
    """What defines a generated set; its hash names the cache folder."""

    count: int = 2000
    seed: int = 2019
    classes: int = 10
    quality: int = 94
    noise_sigma: float = 4.0
    texture_sigma: float = 27.0
    scale: float = 1.0  # tests use small images (e.g. 0.125: about 62x47)

    def __post_init__(self) -> None:
        if self.count < 1 or self.classes < 1 or not 0 < self.scale <= 1 or not 1 <= self.quality <= 100:
            raise ConfigError(f"invalid image set {self}: count and classes >= 1, 0 < scale <= 1, 1 <= quality <= 100")

    def key(self) -> str:
        text = json.dumps({**asdict(self), "encoder": encoder_name(), "v": MANIFEST_VERSION}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class ImageSetManifest:
    """What the record keeps about a set: how it was made and what it holds."""

    count: int
    total_bytes: int
    mean_bytes: float
    seed: int
    encoder: str
    spec: dict
    files_sha256: str  # over the relative paths and each file's bytes, in order
    pixel_histograms: dict[str, list[int]] = field(default_factory=dict)  # per channel, HISTOGRAM_BINS bins
    version: int = MANIFEST_VERSION


def encoder_name() -> str:
    return f"Pillow {PIL_VERSION} (libjpeg {features.version('jpg')})"


def _gradient(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    a, b = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    angle = rng.uniform(0, 2 * np.pi)
    y, x = np.mgrid[0:height, 0:width]
    t = (np.cos(angle) * x / max(width, 1) + np.sin(angle) * y / max(height, 1))
    t = (t - t.min()) / max(float(np.ptp(t)), 1e-9)
    return a[None, None, :] * (1 - t[..., None]) + b[None, None, :] * t[..., None]


def render(seed: int, index: int, scale: float = 1.0, noise_sigma: float = 4.0,
           texture_sigma: float = 27.0) -> Image.Image:
    """Image `index` of set `seed`: the same pixels every time."""
    rng = np.random.default_rng([seed, index])
    width, height = SHAPES[int(rng.integers(len(SHAPES)))]
    width, height = max(8, round(width * scale)), max(8, round(height * scale))
    image = Image.fromarray(_gradient(rng, height, width).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = rng.uniform(-0.2, 0.9) * width, rng.uniform(-0.2, 0.9) * height
        x1, y1 = x0 + rng.uniform(0.1, 0.6) * width, y0 + rng.uniform(0.1, 0.6) * height
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        kind = int(rng.integers(3))
        if kind == 0:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        elif kind == 1:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
        else:
            points = [(float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1))) for _ in range(int(rng.integers(3, 7)))]
            draw.polygon(points, fill=colour)
    words = " ".join("".join(chr(int(c)) for c in rng.integers(97, 123, int(rng.integers(3, 9)))) for _ in range(3))
    draw.text((float(rng.uniform(0, 0.6) * width), float(rng.uniform(0, 0.9) * height)), words,
              fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
    image = image.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.5, 1.5)) * scale))
    # texture at a few pixels' scale (surfaces, foliage, fabric) plus sensor noise: what makes photographs compress to
    # ~100 KB; white noise alone would be atypical
    coarse = rng.normal(0, 1, (max(2, height // 2), max(2, width // 2), 3)).astype(np.float32)
    texture = np.stack([np.asarray(Image.fromarray(coarse[..., c]).resize((width, height), Image.BILINEAR))
                        for c in range(3)], axis=-1)
    pixels = (np.asarray(image, dtype=np.float32) + texture_sigma * texture
              + rng.normal(0, noise_sigma, (height, width, 3)))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def jpeg_bytes(spec: ImageSetSpec, index: int) -> bytes:
    buffer = io.BytesIO()
    image = render(spec.seed, index, spec.scale, spec.noise_sigma, spec.texture_sigma)
    image.save(buffer, format="JPEG", quality=spec.quality)
    return buffer.getvalue()


def relative_path(spec: ImageSetSpec, index: int) -> str:
    """ImageFolder layout: one folder per class, classes assigned round-robin."""
    return f"class_{index % spec.classes:03d}/img_{index:06d}.jpg"


def write_image_set(spec: ImageSetSpec, root: Path | None = None) -> tuple[Path, ImageSetManifest]:
    """The set's folder (made once, reused after) and its manifest; the manifest is written last, atomically."""
    folder = (root or default_cache_root()) / f"procedural-{spec.key()}"
    manifest_path = folder / MANIFEST_NAME
    if manifest_path.is_file():
        return folder, ImageSetManifest(**json.loads(manifest_path.read_text()))
    digest, total = hashlib.sha256(), 0
    histograms = np.zeros((3, HISTOGRAM_BINS), dtype=np.int64)
    for index in range(spec.count):
        data = jpeg_bytes(spec, index)
        path = folder / relative_path(spec, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        digest.update(relative_path(spec, index).encode() + b"\0" + data)
        total += len(data)
        pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        for channel in range(3):
            histograms[channel] += np.histogram(pixels[..., channel], bins=HISTOGRAM_BINS, range=(0, 256))[0]
    manifest = ImageSetManifest(
        count=spec.count, total_bytes=total, mean_bytes=total / spec.count, seed=spec.seed, encoder=encoder_name(),
        spec=asdict(spec), files_sha256=digest.hexdigest(),
        pixel_histograms={name: histograms[i].tolist() for i, name in enumerate("RGB")})
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(manifest), indent=1))
    tmp.replace(manifest_path)
    return folder, manifest


def sample_arrays(count: int, seed: int, height: int, width: int) -> np.ndarray:
    """`count` images of set `seed`, JPEG round-tripped, centre-cropped and resized to (height, width): uint8 NHWC.

    For calibration and agreement checks (int8) that need realistic activations without files on disk: the same
    pixels the data set's files decode to, so calibration and measurement images come from one generator.
    """
    spec = ImageSetSpec(count=count, seed=seed)
    out = np.empty((count, height, width, 3), dtype=np.uint8)
    for index in range(count):
        image = Image.open(io.BytesIO(jpeg_bytes(spec, index))).convert("RGB")
        side = min(image.size)
        left, top = (image.width - side) // 2, (image.height - side) // 2
        image = image.crop((left, top, left + side, top + side)).resize((width, height), Image.BILINEAR)
        out[index] = np.asarray(image)
    return out
