"""bench: honest, reproducible throughput measurements of deep-learning frameworks on CNNs."""


from .config import RunConfig, make_config
from .errors import ConfigError, UnsupportedError
from .version import __version__

__all__ = ["RunConfig", "make_config", "ConfigError", "UnsupportedError", "__version__"]
