"""Caches of compiled artefacts shared by fresh processes (the ONNX export, OpenVINO's compiled blobs, XLA's and
Inductor's compilation caches), and how a run tells whether its build came from one.

The folder lives outside the clone, beside the cached environments (~/.cache/dlbench/compile; BENCH_COMPILE_CACHE
moves it, "off" turns every cache off): a fresh clone and `make clean` keep it, and the results folder stays data
that can be merged between machines, not machine-local binaries. A cached build is never a different measurement:
the ONNX export is keyed by everything that decides its bytes (model, batch, input shape, opset, seed, the
torch/onnx versions and the model code), and the frameworks' own caches key by graph and compile options inside a
folder per framework version. Each record says per run which caches its build used and whether it hit or missed
(`startup.build_cache`); the sweep manifest lists the folders (`compile_caches`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path

ENV = "BENCH_COMPILE_CACHE"
HIT, MISS = "hit", "miss"


def cache_root() -> Path | None:
    """The caches' folder; None when BENCH_COMPILE_CACHE is "off" (every build from scratch)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() == "off":
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "dlbench" / "compile"


def package_version(name: str) -> str:
    """A package's installed version without importing it (a cache key must not cost the import it saves)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def cache_dir(kind: str, version: str) -> Path | None:
    """The folder of one framework's cache at one version (created); None when caching is off."""
    root = cache_root()
    if root is None:
        return None
    path = root / f"{kind}-{version}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_key(**facts: object) -> str:
    """A key that changes with every fact given (sorted, so the order of the facts does not matter)."""
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def source_digest(*paths: Path) -> str:
    """The digest of the code that builds an artefact: an edit to a model's definition is a new key."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _entries(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


class FolderWatch:
    """A framework's own cache folder watched across a build: an entry written is a miss; none written into a
    folder that already held entries is a hit. Read after the first iteration, where lazy compilers (XLA,
    Inductor) compile."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.before = folder, _entries(folder)

    def outcome(self) -> str:
        after = _entries(self.folder)
        return MISS if after > self.before or self.before == 0 else HIT


Outcome = str | Callable[[], str]


def outcomes(caches: Mapping[str, Outcome] | None) -> dict[str, str] | None:
    """A workload's caches as the record keeps them ({cache: "hit" | "miss"}); None when it used none."""
    if not caches:
        return None
    return {name: value() if callable(value) else value for name, value in caches.items()}


def configure_xla(jax) -> FolderWatch | None:
    """XLA's persistent compilation cache for this jax version, every compilation kept (the defaults skip those
    under a second, which on a CPU is most of them)."""
    folder = cache_dir("xla", f"jax{package_version('jax')}-jaxlib{package_version('jaxlib')}")
    if folder is None:
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return FolderWatch(folder)


def configure_inductor() -> FolderWatch | None:
    """Inductor's caches (FX graph cache, kernels; Triton's on a GPU) in a folder per torch version, set before
    the first torch.compile reads them (its default, under /tmp, is neither shared knowingly nor listed)."""
    folder = cache_dir("inductor", f"torch{package_version('torch')}")
    if folder is None:
        return None
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(folder))
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TRITON_CACHE_DIR", str(folder / "triton"))
    return FolderWatch(Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]))


def openvino_cache() -> tuple[dict[str, str], FolderWatch | None]:
    """OpenVINO's compile options for its model cache (CACHE_DIR: compiled blobs keyed by the model and the
    options), and the watch that tells a hit from a miss."""
    folder = cache_dir("openvino", package_version("openvino"))
    if folder is None:
        return {}, None
    return {"CACHE_DIR": str(folder)}, FolderWatch(folder)


def listing() -> dict[str, str]:
    """The cache folders that exist, for the sweep manifest ({cache: folder})."""
    root = cache_root()
    if root is None or not root.is_dir():
        return {}
    return {p.name: str(p) for p in sorted(root.iterdir()) if p.is_dir()}
