"""bench: honest, reproducible throughput measurements of deep-learning frameworks on CNNs."""

import os

# CUDA numbers GPUs fastest first by default, nvidia-smi and NVML in PCI bus order: in bus order, cuda:N is
# nvidia-smi's row N (under CUDA_VISIBLE_DEVICES, its N-th listed GPU), in this process and every child it starts,
# before any framework initialises CUDA. A user's explicit order is kept (bench.host.devices then says where NVML's
# number is unknown).
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")

# Importing the package imports nothing else: loading a record (bench.results) must not import the config layer and
# with it every adapter. A run is described by bench.config.RunConfig (make_config).
from .errors import ConfigError, UnsupportedError
from .version import __version__

__all__ = ["ConfigError", "UnsupportedError", "__version__"]
