"""TensorFlow (Keras 3): the adapter and its distributed tasks (MultiWorkerMirrored, ParameterServer)."""
