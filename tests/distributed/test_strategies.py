"""Strategies as registered objects (bench/strategies/): what the config, the record, the plan and the report ask of
a strategy is declared once, and a new strategy is one module."""

import pytest

from bench import strategies
from bench.config import PIPELINE_STRATEGIES, STRATEGIES, make_config
from bench.errors import ConfigError
from bench.ranks.stages import PIPELINE_CHUNKS
from bench.strategies.base import Strategy, register


def test_the_registry_lists_every_strategy_in_the_reports_order():
    assert STRATEGIES[0] == "none" and STRATEGIES[1] == "independent" and STRATEGIES[-1] == "sandblaster"
    assert PIPELINE_STRATEGIES == ("model_parallel", "gpipe", "1f1b", "interleaved_1f1b", "interleaved_zb", "zbv")
    assert PIPELINE_CHUNKS == {"interleaved_1f1b": 2, "interleaved_zb": 2, "zbv": 2}


def test_an_unknown_strategy_is_refused_naming_the_valid_ones():
    with pytest.raises(ConfigError, match="invalid strategy 'ring'; valid choices: none, independent"):
        strategies.strategy("ring")


def test_what_follows_from_a_strategy_is_its_own_declaration():
    s = strategies.strategy
    assert not s("none").distributed and s("independent").baseline
    assert s("allreduce").overlap_baseline == "allreduce_nosync" and s("allreduce").link_model == "ring"
    assert s("ps_sync").synchronous and not s("ps_async").synchronous and s("ps_async").link_model == "ps"
    assert s("gpipe").micro_batch_sweep and not s("model_parallel").micro_batched and s("zbv").chunks_per_worker == 2
    assert not s("sandblaster").rate_is_images and s("sandblaster").recipe.startswith("L-BFGS")
    assert strategies.has(["independent", "gpipe"], lambda x: x.pipeline) == [False, True]


def test_a_strategys_own_checks_run_on_every_config():
    with pytest.raises(ConfigError, match="model_parallel feeds one whole batch at a time"):
        make_config(framework="torch", model="resnet18", mode="training", strategy="model_parallel", workers=2,
                    micro_batches=4, batch_size=16)
    with pytest.raises(ConfigError, match="sandblaster trains digits_mlp"):
        make_config(framework="torch", model="resnet18", mode="training", strategy="sandblaster", workers=2)
    c = make_config(framework="torch", model="resnet18", mode="training", strategy="gpipe", workers=2,
                    micro_batches=4, batch_size=16)
    assert c.global_batch == 16 and c.strategy_of.title == "GPipe"


def test_a_new_strategy_is_one_registration(monkeypatch):
    monkeypatch.setattr(strategies.base, "REGISTRY", dict(strategies.REGISTRY))  # this test's registry only
    new = register(Strategy("hierarchical", "hierarchical all-reduce", "hierarchical all-reduce",
                            strategies.DATA_PARALLEL, link_model="ring", synchronous=True))
    assert strategies.base.strategy("hierarchical") is new and new.communicates and not new.pipeline
    assert strategies.base.names()[-1] == "hierarchical"
