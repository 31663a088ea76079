"""Exceptions that the harness turns into exit codes and record statuses."""


class BenchError(Exception):
    """Base class for every error the harness raises on purpose."""


class ConfigError(BenchError, ValueError):
    """A bad input: names the bad value and the valid choices. Nothing has run or been written."""


class UnsupportedError(BenchError):
    """The combination is valid but this framework/device cannot run it; becomes a `skipped` record."""


class FrameworkUnavailableError(UnsupportedError):
    """The framework is not installed or does not import; becomes a `skipped` record."""


class SchemaError(BenchError, ValueError):
    """A record does not match the result schema."""
