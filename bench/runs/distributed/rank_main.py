"""Every distributed rank's entry point (torchrun's module, each TF_CONFIG task): spec, config, the adapter's rank."""

from __future__ import annotations

from ...adapters import ADAPTERS
from ...config import make_config
from ...ranks import rankio


def main() -> None:
    spec = rankio.read_spec()
    config = make_config(**spec["config"])
    ADAPTERS.get(config.framework).run_rank(config, spec)


if __name__ == "__main__":
    main()
