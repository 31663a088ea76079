"""TensorFlow (Keras 3): the adapter and its distributed tasks (MultiWorkerMirrored, ParameterServer)."""

from . import adapter  # noqa: F401  (registers the adapter)
