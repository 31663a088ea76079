"""Sandblaster L-BFGS (Dean et al. 2012): a batch method whose coordinator asks the workers for the gradient over
the whole training set each iteration; its step is not a batch, so its rate is read from accuracy over time."""

from ..errors import ConfigError
from .base import BATCH_METHOD, Strategy, register

RECIPE = "L-BFGS(lr=1, history 10, strong-Wolfe line search, full-batch gradient)"


def _check(config) -> None:
    # its workers evaluate the gradient over the digits training set (bench/adapters/torch/sandblaster.py)
    if config.model != "digits_mlp" or config.mode != "training":
        raise ConfigError("sandblaster trains digits_mlp on scikit-learn's digits: model digits_mlp, training")
    if config.nodes != 1 or config.cluster:
        raise ConfigError("sandblaster runs its coordinator, server and workers on one machine here: nodes 1")


SANDBLASTER = register(Strategy("sandblaster", "Sandblaster L-BFGS", "Sandblaster L-BFGS", BATCH_METHOD,
                                recipe=RECIPE, rate_is_images=False, line="-.", check=_check, batch_method_section=True,
                                global_step="one L-BFGS iteration (its gradient evaluations over the whole training "
                                            "set), slowest process"))
