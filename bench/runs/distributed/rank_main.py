"""Every distributed rank's entry point (torchrun's module, each TF_CONFIG task): its adapter's ranks, the rank loop."""

from __future__ import annotations

from ...adapters import ADAPTERS
from ...config import make_config
from ...ranks import rankio
from .rank_loop import run_group


def main() -> None:
    spec = rankio.read_spec()
    config = make_config(**spec["config"])
    group = ADAPTERS.get(config.framework).distributed.rank_group(config, spec)
    if group is not None:  # a server task has served until the launcher stopped it
        run_group(group, config, spec)


if __name__ == "__main__":
    main()
