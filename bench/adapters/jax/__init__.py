"""JAX (through Keras 3's JAX backend): the adapter."""
