"""Sweep profiles (profiles/*.yaml): named presets expanded into validated RunConfigs before any run.

Besides the axes (frameworks x models x modes x batch sizes x precisions x devices x engines) a
profile says how to repeat: `repeats` fresh processes per config, interleaved in an order shuffled
per round with `order_seed` (or `repeats: adaptive`: `min_repeats` rounds, then one process at a time to the
config whose comparison is least decided, up to `max_repeats` and the budget), `retries` for a disturbed run,
and `budget_minutes` for the whole sweep
(the planner drops the lowest-priority configs to fit). Priority is the order the profile lists
models, modes and batch sizes in: earlier is more important. `also` lists further blocks, each a
mapping of axes that replace the top-level ones (and `settings` over the top-level ones), expanded after the main
block (lower priority): e.g. a few VGG16 inference batch sizes beside a full ResNet-50 grid. `distributed` lists
blocks of data-parallel training runs (frameworks x models x batch sizes x strategies x workers x bucket sizes,
with their own `settings` over the top-level ones), expanded last; a strategy a framework does not
implement is left out and listed in `not_applicable`. `memory` lists blocks of largest-batch searches
(frameworks x models x modes x precisions x devices, with `memory_cap_gb` and `max_batch`; bench/runs/maxbatch.py),
run after the timed runs. `slurm` holds the Slurm executor's job options (bench/sweep/executors.py: partition,
time_limit, cpus_per_task, gpus_per_task, exclusive, constraint, parallel), used by `bench sweep --executor slurm`,
whose options override them. Every item and setting of every block is checked as the command line checks it, and
errors name the block, the key and the value; a framework with none of a block's listed engines is left out with
the reason (never run at its default engine instead).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import strategies
from ..adapters import ADAPTERS, reference_adapter
from ..config import FIELDS, RunConfig, check_value, make_config
from ..errors import ConfigError
from ..host import devices
from ..paths import PROJECT_ROOT
from ..runs import maxbatch
from ..stats.judge import Judge
from ..stats.verdicts import DEFAULT_MARGIN
from .executors import slurm_options

PROFILES_DIR = PROJECT_ROOT / "profiles"
AXES = {"frameworks": str, "models": str, "modes": str, "batch_sizes": int, "precisions": str, "devices": str}
DEFAULT_AXES = {"frameworks": [reference_adapter().name], "modes": ["inference"], "batch_sizes": [32],
                "precisions": ["fp32"], "devices": ["cpu"]}
# name -> (type, lower bound, upper bound, default)
REPETITION = {"repeats": (int, 1, 100, 3), "retries": (int, 0, 10, 1), "order_seed": (int, 0, 2**31 - 1, 0),
              "budget_minutes": ((int, float), 0, 10_000, 0),
              # two frameworks are called equivalent when the whole interval of their ratio lies within +-this
              "equivalence_margin": ((int, float), 0.005, 0.5, DEFAULT_MARGIN)}
ADAPTIVE = "adaptive"  # `repeats: adaptive`: min_repeats rounds, then processes where comparisons are undecided
SEQUENTIAL = {"min_repeats": (int, 2, 100, 2), "max_repeats": (int, 2, 100, 6)}
KEYS = {"description", "engines", "settings", "also", "distributed", "memory", "slurm", *AXES, *REPETITION, *SEQUENTIAL}
DIST_AXES = {"frameworks": str, "models": str, "batch_sizes": int, "strategies": str, "workers": int,
             "bucket_mbs": (int, float), "devices": str}
DIST_KEYS = {*DIST_AXES, "settings"}
MEMORY_AXES = {k: v for k, v in AXES.items() if k != "batch_sizes"}
MEMORY_LIMITS = ("memory_cap_gb", "max_batch")
# The RunConfig field each list key's items are values of (checked as the command line checks that field).
AXIS_FIELDS = {"frameworks": "framework", "models": "model", "modes": "mode", "batch_sizes": "batch_size",
               "precisions": "precision", "devices": "device", "strategies": "strategy", "workers": "workers",
               "bucket_mbs": "bucket_mb"}
ALL_GPUS = "all-gpus"  # a device list item: every GPU this machine has (none on a CPU-only machine)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    configs: tuple[RunConfig, ...]  # in priority order
    repeats: int = 3  # with `adaptive`: the rounds every config gets first (min_repeats)
    adaptive: bool = False  # further processes go to undecided comparisons (bench/sweep/plan.py: next_process)
    max_repeats: int = 3  # with `adaptive`: the most processes a config gets
    retries: int = 1
    order_seed: int = 0
    budget_minutes: float = 0.0  # 0: no budget
    equivalence_margin: float = DEFAULT_MARGIN  # bench/stats/verdicts.py: "equivalent" within +-this
    not_applicable: tuple[str, ...] = ()  # what the profile asked for that a framework cannot run, and why
    # largest-batch searches: (config at batch 1, memory cap in bytes or None for the default, max batch)
    memory_searches: tuple[tuple[RunConfig, int | None, int], ...] = ()
    slurm: tuple[tuple[str, object], ...] = ()  # the `slurm` block's (key, value) pairs, validated

    @property
    def judge(self) -> Judge:
        """What the adaptive plan judges this profile's comparisons by (its equivalence margin)."""
        return Judge(self.equivalence_margin)


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def _path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"profile file {name_or_path!r} does not exist or is not a file")
        return path
    path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown profile {name_or_path!r}; valid choices: {', '.join(available_profiles())}")
    return path


def _read(path: Path) -> dict:
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"profile {path.name}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ConfigError(f"profile {path.name}: not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise ConfigError(f"profile {path.name}: expected a mapping of settings at the top, got {type(spec).__name__}")
    return spec


def _block_names(spec: dict) -> list[tuple[str, str, dict]]:
    """(kind, name, block) of every block: the top level, then each `also`, `distributed`, `memory` block."""
    blocks = [("main", "top level", spec)]
    for kind in ("also", "distributed", "memory"):
        blocks += [(kind, f"{kind} block {i}", b) for i, b in enumerate(spec.get(kind) or [], 1)]
    return blocks


def _check_structure(name: str, spec: dict) -> None:
    """Types and ranges of every key of every block, with the file, the block, the key and the value: each item and
    setting is checked as the command line checks it (`check_value`), so what one refuses the other refuses."""
    unknown = sorted(set(map(str, spec)) - KEYS)
    if unknown:
        raise ConfigError(f"profile {name}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(KEYS))}")
    for kind in ("also", "distributed", "memory"):
        blocks = spec.get(kind, [])
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise ConfigError(f"profile {name}: '{kind}' must be a list of mappings, got {blocks!r}")
    allowed = {"also": {*AXES, "engines", "settings"}, "distributed": DIST_KEYS,
               "memory": {*MEMORY_AXES, *MEMORY_LIMITS, "engines"}}
    for kind, block_name, block in _block_names(spec):
        where = f"profile {name}: {block_name}"
        if kind in allowed:
            extra = sorted(set(map(str, block)) - allowed[kind])
            if extra:
                article = "an" if kind == "also" else "a"
                raise ConfigError(f"{where}: {article} '{kind}' block may set only "
                                  f"{', '.join(sorted(allowed[kind]))}; got {', '.join(extra)}")
        _check_axes(where, block, DIST_AXES if kind == "distributed" else MEMORY_AXES if kind == "memory" else AXES)
        if kind in ("main", "also", "distributed"):
            _check_settings(where, block.get("settings", {}), distributed=kind == "distributed")
        if kind != "distributed":
            frameworks = block.get("frameworks", spec.get("frameworks", DEFAULT_AXES["frameworks"]))
            _check_engines(where, block.get("engines", spec.get("engines", "default") if kind == "also" else
                                            "default"), frameworks)
        if kind == "memory":
            for key in MEMORY_LIMITS:
                if key in block:
                    _refused(where, key, maxbatch.check_limit, key, block[key])
    if "slurm" in spec:
        if not isinstance(spec["slurm"], dict):
            raise ConfigError(f"profile {name}: 'slurm' must be a mapping of job options, got {spec['slurm']!r}")
        slurm_options(spec["slurm"], f"profile {name}: 'slurm'")
    for key, (typ, low, high, _) in REPETITION.items():
        if key == "repeats" and spec.get(key) == ADAPTIVE:
            continue
        if key in spec and not _number_in(spec[key], typ, low, high):
            also = f" or '{ADAPTIVE}'" if key == "repeats" else ""
            raise ConfigError(f"profile {name}: '{key}' must be a number from {low} to {high}{also}, got {spec[key]!r}")
    for key, (typ, low, high, _) in SEQUENTIAL.items():
        if key in spec and spec.get("repeats") != ADAPTIVE:
            raise ConfigError(f"profile {name}: '{key}' applies only with 'repeats: {ADAPTIVE}' "
                              f"(got repeats: {spec.get('repeats', REPETITION['repeats'][3])!r})")
        if key in spec and not _number_in(spec[key], typ, low, high):
            raise ConfigError(f"profile {name}: '{key}' must be a number from {low} to {high}, got {spec[key]!r}")
    if spec.get("repeats") == ADAPTIVE:
        low, high = (spec.get(k, SEQUENTIAL[k][3]) for k in SEQUENTIAL)
        if low > high:
            raise ConfigError(f"profile {name}: 'min_repeats' ({low}) is larger than 'max_repeats' ({high})")


def _refused(where: str, key: str, check, *args) -> None:
    """Run `check(*args)`; its ConfigError names the block and key it came from."""
    try:
        check(*args)
    except ConfigError as exc:
        raise ConfigError(f"{where}: '{key}': {exc}") from None


def _number_in(value, typ, low, high) -> bool:
    """A finite number of type `typ` (not a bool) from `low` to `high`."""
    return isinstance(value, typ) and not isinstance(value, bool) and math.isfinite(value) and low <= value <= high


def _framework(item) -> str:
    # YAML reads a bare `null` as None; in a frameworks list it can only mean the null framework.
    return "null" if item is None else item


def _check_axes(where: str, spec: dict, axes: dict) -> None:
    for key, typ in axes.items():
        if key not in spec:
            continue
        value = spec[key]
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: '{key}' must be a non-empty list, got {value!r}")
        for item in value:
            if key == "frameworks" and item is None:
                continue
            if not isinstance(item, typ) or isinstance(item, bool):
                kind = typ.__name__ if isinstance(typ, type) else "number"
                raise ConfigError(f"{where}: every item of '{key}' must be a {kind}, got {item!r}")
            if not (key == "devices" and item == ALL_GPUS):
                _refused(where, key, check_value, AXIS_FIELDS[key], _framework(item) if key == "frameworks" else item)


def _check_engines(where: str, engines, frameworks: list) -> None:
    """`default`, `all`, or engine names each of which one of the block's frameworks has."""
    if not (engines in ("default", "all") or (isinstance(engines, list) and engines
                                               and all(isinstance(e, str) for e in engines))):
        raise ConfigError(f"{where}: 'engines' must be 'default', 'all' or a list of engine names, got {engines!r}")
    if not isinstance(engines, list):
        return
    names = [_framework(fw) for fw in frameworks]
    known = list(dict.fromkeys(e for fw in names for e in ADAPTERS.get(fw).engines))
    unknown = [e for e in engines if e not in known]
    if unknown:
        raise ConfigError(f"{where}: 'engines': {', '.join(map(repr, unknown))} is no engine of "
                          f"{', '.join(names)}; valid choices: {', '.join(known)}")


def _check_settings(where: str, settings, distributed: bool = False) -> None:
    settings = settings or {}
    if not isinstance(settings, dict):
        raise ConfigError(f"{where}: 'settings' must be a mapping, got {settings!r}")
    # The fields a block's lists say (and a distributed block's own lists): a setting would say them twice.
    axis_fields = {"engine", *(AXIS_FIELDS[k] for k in (*AXES, *DIST_AXES))}
    clash = sorted(set(map(str, settings)) & axis_fields)
    if clash:
        lists = sorted(DIST_AXES) if distributed else [*sorted(AXES), "engines", "a distributed block's "
                                                        + ", ".join(sorted(set(DIST_AXES) - set(AXES)))]
        raise ConfigError(f"{where}: 'settings' may not set {', '.join(clash)}: use the list keys ({', '.join(lists)})")
    unknown = sorted(set(map(str, settings)) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}; valid: "
                          f"{', '.join(sorted(set(FIELDS) - axis_fields))}")
    for key, value in settings.items():
        if isinstance(value, (list, dict)):
            raise ConfigError(f"{where}: setting '{key}' must be a single value, got {value!r}")
        _refused(where, f"settings: {key}", check_value, key, value)


def _devices(listed: list[str]) -> tuple[list[str], list[str]]:
    """The devices a block lists, `all-gpus` as one GPU of each model this machine has (identical GPUs would only
    repeat the same measurement; the manifest records how many there are), and a line for each GPU left out."""
    out, same = [], []
    for d in listed:
        if d != ALL_GPUS:
            out.append(d)
            continue
        first: dict[tuple[str, str], str] = {}
        for g in devices.gpus():
            kind = (g["name"], g.get("memory", ""))
            if kind in first:
                same.append(f"cuda:{g['index']}: a {g['name']} like {first[kind]}, which runs for both "
                            "(identical GPUs run once)")
            else:
                first[kind] = f"cuda:{g['index']}"
                out.append(first[kind])
    return list(dict.fromkeys(out)), same


def _expand(where: str, axes: dict, engines, settings: dict) -> tuple[list[RunConfig], list[str]]:
    """One block's configs in priority order: model, mode, batch size as listed; frameworks innermost,
    so a comparison group (the same config in every framework) sits together and is kept or dropped whole.
    Combinations a framework declares it cannot run here are left out, each with the reason."""
    frameworks = [_framework(fw) for fw in axes["frameworks"]]
    device_list, left_out = _devices(axes["devices"])
    configs = []
    for model, mode, bs, precision, device, fw in itertools.product(
            axes["models"], axes["modes"], axes["batch_sizes"], axes["precisions"], device_list, frameworks):
        adapter = ADAPTERS.get(fw)
        reason = adapter.model_refusal(model, precision) or adapter.not_applicable(mode, precision, device)
        if isinstance(engines, list):  # a listed engine applies to the frameworks that have it
            names = [e for e in engines if e in adapter.engines_for(mode, precision)]
            if not names:  # never the default engine in place of the ones asked for
                reason = reason or (f"{fw} has none of the engines {', '.join(engines)} "
                                    f"(it has {', '.join(adapter.engines)})")
        else:
            names = list(adapter.engines_for(mode, precision)) if engines == "all" else [None]
        if reason:
            left_out.append(f"{fw} {mode} {precision} {device}: {reason}")
            continue
        for engine in names:
            try:
                configs.append(make_config(framework=fw, model=model, mode=mode, batch_size=bs,
                                           precision=precision, device=device, engine=engine, **settings))
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
    return configs, left_out


def _rank_devices(listed: list[str]) -> tuple[list[tuple[str, int]], list[str]]:
    """A distributed block's devices as (device, GPUs there): `cpu`, or `all-gpus` for GPU ranks (one GPU each, from
    cuda:0 up), which a machine without a GPU leaves out with a line saying so."""
    out, left_out = [], []
    for d in listed:
        if d != ALL_GPUS:
            out.append((d, len(devices.gpus()) if devices.is_gpu(d) else 0))
        elif devices.gpus():
            out.append(("cuda:0", len(devices.gpus())))
        else:
            left_out.append("distributed runs on all-gpus: this machine has no GPU")
    return out, left_out


def _expand_distributed(where: str, block: dict, settings: dict) -> tuple[list[RunConfig], list[str]]:
    """A distributed block's training configs; (framework, strategy) pairs not implemented are left out, and so
    are GPU runs of more workers than this machine has GPUs (a profile says 1..N for whatever N a host has)."""
    configs = []
    merged = {**settings, **(block.get("settings") or {})}
    rank_devices, skipped = _rank_devices(block.get("devices", ["cpu"]))
    for model, bs, strategy, workers, bucket, (device, gpus), fw in itertools.product(
            block.get("models", ["resnet18"]), block.get("batch_sizes", [16]),
            block.get("strategies", [strategies.ALL_REDUCE]), block.get("workers", [2]),
            block.get("bucket_mbs", [None]), rank_devices,
            [_framework(fw) for fw in block.get("frameworks", DEFAULT_AXES["frameworks"])]):
        if strategies.strategy(strategy).distributed and strategy not in ADAPTERS.get(fw).distributed.strategies:
            skipped.append(f"{fw} {strategy}: {fw} does not implement {strategy} (it has: "
                           f"{', '.join(ADAPTERS.get(fw).distributed.strategies) or 'no distributed runs'})")
            continue
        if devices.is_gpu(device) and workers > gpus:
            skipped.append(f"{fw} {strategy} {workers} workers on GPUs: this machine has {gpus}")
            continue
        try:
            configs.append(make_config(framework=fw, model=model, mode="training", batch_size=bs, strategy=strategy,
                                       workers=workers, bucket_mb=bucket, device=device, **merged))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return configs, list(dict.fromkeys(skipped))


def slurm_block(name_or_path: str) -> dict:
    """A profile's `slurm` block as written (checked when the profile loads): what its jobs ask the scheduler for,
    needed before the profile is expanded for the machines they will run on."""
    block = _read(_path(name_or_path)).get("slurm") or {}
    return block if isinstance(block, dict) else {}


def load_profile(name_or_path: str) -> Profile:
    """Read and expand a profile; every config is validated here, so a bad one fails before any run."""
    path = _path(name_or_path)
    spec = _read(path)
    _check_structure(path.name, spec)
    main = {k: spec.get(k, DEFAULT_AXES.get(k, [])) for k in AXES}
    settings = spec.get("settings") or {}
    configs = []
    skipped: list[str] = []
    searches = []
    for kind, block_name, block in _block_names(spec):
        where = f"profile {path.name}: {block_name}"
        if kind in ("main", "also"):
            axes = {**main, **{k: block[k] for k in AXES if k in block}}
            more, left_out = _expand(where, axes, block.get("engines", spec.get("engines", "default")),
                                     {**settings, **(block.get("settings") or {})})
            configs += more
        elif kind == "distributed":
            more, left_out = _expand_distributed(where, block, settings)
            configs += more
        else:
            axes = {**main, **{k: block[k] for k in MEMORY_AXES if k in block}, "batch_sizes": [1]}
            more, left_out = _expand(where, axes, block.get("engines", "default"), settings)
            cap = block.get("memory_cap_gb")
            searches += [(c, maxbatch.host_cap(c.device, int(cap * 2**30) if cap else None),
                          block.get("max_batch", 256)) for c in more]
        skipped += left_out
    if not configs and not searches:  # a profile of largest-batch searches alone has no timed runs
        raise ConfigError(f"profile {path.name} expands to no runs (is 'models' empty?)")
    repetition = {k: spec.get(k, default) for k, (_, _, _, default) in REPETITION.items()}
    if repetition["repeats"] == ADAPTIVE:
        repetition.update(repeats=spec.get("min_repeats", SEQUENTIAL["min_repeats"][3]), adaptive=True,
                          max_repeats=spec.get("max_repeats", SEQUENTIAL["max_repeats"][3]))
    else:
        repetition["max_repeats"] = repetition["repeats"]
    return Profile(path.stem, str(spec.get("description", "")), tuple(dict.fromkeys(configs)), **repetition,
                   not_applicable=tuple(dict.fromkeys(skipped)), memory_searches=tuple(dict.fromkeys(searches)),
                   slurm=tuple((spec.get("slurm") or {}).items()))
