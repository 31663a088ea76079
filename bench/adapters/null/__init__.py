"""The null framework: measures the harness's own overhead."""

from . import adapter  # noqa: F401  (registers the adapter)
