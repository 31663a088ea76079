"""Whole numbers from any source (a flag, a profile key, an environment variable a launcher reads), checked as values:
one message shape naming the source, the value and the valid range, before any work (ConfigError: exit 2)."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ConfigError


def integer(value: object, what: str, low: int, high: int | None = None) -> int:
    """`value` (an int, or the text of one: an environment variable's) as an int from `low` to `high`; else a
    ConfigError naming `what` (the flag, key or variable) and the valid range."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit() and value.strip().isascii():
        number = int(value.strip())
    if number is None or number < low or (high is not None and number > high):
        valid = f"from {low} to {high}" if high is not None else f"{low} or more"
        raise ConfigError(f"invalid {what} {value!r}; it must be a whole number {valid}")
    return number


def env_integer(env: Mapping[str, str], name: str, low: int, high: int | None = None,
                default: int | None = None) -> int | None:
    """The environment variable `name` as an int from `low` to `high` (checked as `integer`); `default` when unset
    or empty."""
    text = env.get(name)
    return default if text is None or text == "" else integer(text, name, low, high)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 config', '2 configs' (or the given plural: '2 retries'): a count with its noun."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def listed(items) -> str:
    """'1', '1 and 2', '1, 2 and 4': items in one phrase."""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def sentence(phrase: str) -> str:
    """A table cell's phrase as a sentence of its own: capitalised, with a full stop."""
    return phrase[:1].upper() + phrase[1:] + "."
