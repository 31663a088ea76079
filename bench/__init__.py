"""bench: honest, reproducible throughput measurements of deep-learning frameworks on CNNs."""

__version__ = "0.1.0"

from .config import RunConfig, make_config  # noqa: E402
from .errors import ConfigError, UnsupportedError  # noqa: E402

__all__ = ["RunConfig", "make_config", "ConfigError", "UnsupportedError", "__version__"]
