"""MXNet 1.9 (Gluon), run in its own environment: the adapter and its model definitions."""

from . import adapter  # noqa: F401  (registers the adapter)
