"""Framework adapters: one package per framework under bench/adapters/, each registering itself on import.

Adding a framework is adding a package here whose adapter class carries `@register`: this module imports every
package it finds, so nothing else names the framework. No framework itself is imported until a run prepares.
"""

import importlib
import pkgutil

from .base import ADAPTERS, Adapter, Workload, register

for _package in pkgutil.iter_modules(__path__):
    if _package.ispkg:
        importlib.import_module(f"{__name__}.{_package.name}")


def measures_a_framework(name: str) -> bool:
    """False for the harness-overhead adapter ('null'); True for every framework, known here or not
    (a record from a newer checkout)."""
    return name not in ADAPTERS or ADAPTERS.get(name).measures_a_framework


def declared(name: str, attribute: str, default=None):
    """What framework `name` declares as `attribute` (dotted for its distributed runs: "distributed.own_collectives"),
    or `default` for a name no adapter here answers to (a record from another checkout)."""
    if name not in ADAPTERS:
        return default
    owner = ADAPTERS.get(name)
    *path, last = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    return getattr(owner, last, default)


def says_out_of_memory(text: str) -> bool:
    """Whether a failure's text is an out-of-memory error in any framework's words (the markers adapters declare),
    compared lower case without spaces or underscores."""
    flat = text.lower().replace(" ", "").replace("_", "")
    return any(marker in flat for name in ADAPTERS for marker in ADAPTERS.get(name).oom_markers)


def reference_adapter() -> Adapter:
    """The framework the tools use where one must be picked (the FLOP counter, fidelity's default, the link probe)."""
    return next(ADAPTERS.get(n) for n in ADAPTERS if ADAPTERS.get(n).reference)


def framework_of(name: str) -> str:
    """A framework's registered name from any name its published rows use ('pytorch' -> 'torch'); else unchanged."""
    lowered = name.lower()
    return next((n for n in ADAPTERS if lowered == n or lowered in ADAPTERS.get(n).aliases), name)


__all__ = ["ADAPTERS", "Adapter", "Workload", "declared", "framework_of", "measures_a_framework", "reference_adapter",
           "register", "says_out_of_memory"]
