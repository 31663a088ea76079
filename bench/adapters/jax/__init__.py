"""JAX (through Keras 3's JAX backend): the adapter."""

from . import adapter  # noqa: F401  (registers the adapter)
