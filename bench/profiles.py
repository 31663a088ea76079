"""Sweep profiles (profiles/*.yaml): named presets expanded into validated RunConfigs before any run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import devices
from .adapters import ADAPTERS
from .config import RunConfig, make_config
from .errors import ConfigError
from .paths import PROJECT_ROOT

PROFILES_DIR = PROJECT_ROOT / "profiles"
KEYS = {"description", "frameworks", "models", "modes", "batch_sizes", "precisions", "devices", "engines",
        "settings"}


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    configs: tuple[RunConfig, ...]


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def _path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise ConfigError(f"unknown profile {name_or_path!r}; valid choices: {', '.join(available_profiles())}")
    return path


def _devices(listed: list[str]) -> list[str]:
    out = []
    for d in listed:
        out += [f"cuda:{g['index']}" for g in devices.gpus()] if d == "all-gpus" else [d]
    return out


def load_profile(name_or_path: str) -> Profile:
    """Read and expand a profile; every config is validated here, so a bad one fails before any run."""
    path = _path(name_or_path)
    spec = yaml.safe_load(path.read_text()) or {}
    unknown = sorted(set(spec) - KEYS)
    if unknown:
        raise ConfigError(f"profile {path.name}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(KEYS))}")
    settings = spec.get("settings") or {}
    # YAML reads a bare `null` as None; in a frameworks list it can only mean the null framework.
    frameworks = ["null" if fw is None else fw for fw in spec.get("frameworks", ["torch"])]
    configs = []
    for fw, model, mode, bs, precision, device in itertools.product(
            frameworks, spec.get("models", []), spec.get("modes", ["inference"]),
            spec.get("batch_sizes", [32]), spec.get("precisions", ["fp32"]), _devices(spec.get("devices", ["cpu"]))):
        engines = spec.get("engines", "default")
        for engine in (ADAPTERS.get(fw).engines if engines == "all" else
                       [None] if engines == "default" else engines):
            try:
                configs.append(make_config(framework=fw, model=model, mode=mode, batch_size=bs,
                                           precision=precision, device=device, engine=engine, **settings))
            except ConfigError as exc:
                raise ConfigError(f"profile {path.name}: {exc}") from None
    if not configs:
        raise ConfigError(f"profile {path.name} expands to no runs")
    return Profile(path.stem, spec.get("description", ""), tuple(configs))
