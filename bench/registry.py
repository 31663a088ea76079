"""A name -> object registry with decorator registration and glob filtering (timm's pattern)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps unique names to entries; rejects duplicates; unknown names raise ConfigError."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"duplicate {self.kind} name {name!r}")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> T:
        """Take entry `name` out (a test's own entry, added for the test alone)."""
        return self._entries.pop(name)

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`."""
        return lambda entry: self.add(name, entry)

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; valid choices: {', '.join(self.names())}"
            ) from None

    def names(self, pattern: str = "*") -> list[str]:
        return sorted(n for n in self._entries if fnmatch.fnmatchcase(n, pattern))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
