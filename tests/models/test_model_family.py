"""A model family is one registered object (bench/models/families.py): adding one is its declaration, its catalogue
entry and one builder per framework that runs it; nothing else in the package learns of it, and a framework without a
builder for it skips its runs, saying so."""

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.config import make_config
from bench.errors import ConfigError
from bench.models import FAMILIES, MODELS, ModelFamily, ModelSpec, family_of, get_model
from bench.models.families import TOKENS
from bench.runs.single import execute

TOY_VOCAB = 50


def _toy_bag(name: str, num_classes: int):
    """The toy family's one PyTorch builder: the mean of its token embeddings, then a linear classifier."""
    from torch import nn

    return nn.Sequential(nn.EmbeddingBag(TOY_VOCAB, 8, mode="mean"), nn.Linear(8, num_classes))


@pytest.fixture
def toy_family():
    """A family of bag-of-tokens classifiers, only PyTorch (and the runtimes that run PyTorch's export) building it."""
    from bench.adapters.torch.models import TORCH_BUILDERS

    family = ModelFamily(name="toy_bag", kind="bag-of-tokens", inputs=TOKENS, vocab=lambda model: TOY_VOCAB,
                         flops_definition="the toy family's PyTorch builder")
    FAMILIES.add(family.name, family)
    MODELS.add("toy_bag_small", ModelSpec(name="toy_bag_small", num_classes=3, family=family.name, tiny=True,
                                          default_sequence_length=12, max_sequence_length=24, shared_weights=False))
    TORCH_BUILDERS.add(family.name, _toy_bag)
    try:
        yield family
    finally:
        TORCH_BUILDERS.remove(family.name)
        MODELS.remove("toy_bag_small")
        FAMILIES.remove(family.name)


def test_every_catalogue_model_names_a_registered_family_and_asks_it_for_its_unit():
    for name in MODELS:
        family = family_of(name)
        assert FAMILIES.get(get_model(name).family) is family
        assert family.sample_unit == ("sequences" if family.tokens else "images")
    assert {family_of(m).name for m in MODELS} == {"cnn", "vit", "bert"}


def test_an_unknown_family_is_refused_naming_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown model family 'rnn'; valid choices: bert, cnn, vit"):
        ModelSpec(name="an_rnn", family="rnn")


def test_a_frameworks_refusal_of_a_family_is_its_adapters_declaration():
    assert "no maintained transformer" in ADAPTERS.get("mxnet").model_refusal("tiny_bert")
    assert ADAPTERS.get("tensorflow").model_refusal("tiny_bert", "int8").startswith(
        "tensorflow int8 takes no token model: ")
    assert ADAPTERS.get("tensorflow").model_refusal("tiny_bert", "fp32") is None
    assert ADAPTERS.get("torch").model_refusal("tiny_bert", "int8") is None


def _flops_counted_here(results_dir, model: str, input_size: int) -> dict:
    """The FLOP count a run reads from its host's cache, counted in this process (where the toy family is registered)
    by the function the fresh `python -m bench flops` process runs."""
    from bench.measurement.flops import FLOPS_FILE, count_forward_flops
    from bench.results.store import atomic_write_json, host_dir

    counted = count_forward_flops(model, input_size)
    host_dir(results_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_json(host_dir(results_dir) / FLOPS_FILE, {f"{model}|{input_size}": counted})
    return counted


def test_a_toy_family_runs_through_the_harness_with_only_its_declaration_and_one_builder(toy_family, tmp_path):
    counted = _flops_counted_here(tmp_path, "toy_bag_small", 12)
    assert counted["flops"] == 2 * 8 * 3 and "the toy family's PyTorch builder" in counted["method"]  # the linear
    config = make_config(framework="torch", model="toy_bag_small", mode="inference", batch_size=4, protocol="seed",
                         warmup=1, iterations=3)
    assert (config.sequence_length, config.image_size, config.input_size) == (12, None, 12)
    r = execute(config, tmp_path)
    assert r["status"] == "ok", r.get("reason")
    assert r["summary"]["sample_unit"] == "sequences" and r["summary"]["n"] == 3
    assert r["settings"]["layout"].startswith("token ids (batch, sequence)")
    assert "attention" not in r["settings"]  # the family declares none
    batch = family_of("toy_bag_small").synthetic_batch("toy_bag_small", 4, 12, np.random.default_rng(0))
    assert batch.shape == (4, 12) and batch.dtype == np.int64 and batch.max() < TOY_VOCAB

    trained = execute(make_config(framework="torch", model="toy_bag_small", mode="training", batch_size=4,
                                  protocol="seed", warmup=1, iterations=2), tmp_path)
    assert trained["status"] == "ok" and trained["fairness"]["weights_changed"] is True

    # ONNX Runtime runs the family through PyTorch's export, its input named as a token model's
    exported = execute(make_config(framework="onnxruntime", model="toy_bag_small", mode="inference", batch_size=4,
                                   protocol="seed", warmup=1, iterations=2), tmp_path)
    assert exported["status"] == "ok", exported.get("reason")
    assert exported["summary"]["sample_unit"] == "sequences" and exported["settings"]["export"]

    skipped = execute(make_config(framework="tensorflow", model="toy_bag_small", mode="inference", batch_size=4),
                      tmp_path)
    assert skipped["status"] == "skipped"
    assert skipped["reason"] == "Keras has no builder for the toy_bag family (toy_bag_small); it builds bert, cnn, vit"


def test_a_toy_family_takes_its_sizes_from_its_declaration(toy_family):
    with pytest.raises(ConfigError, match="sequence_length 25 does not suit toy_bag_small; it accepts 1 to 24"):
        make_config(framework="torch", model="toy_bag_small", sequence_length=25)
    with pytest.raises(ConfigError, match="image_size 32 does not suit toy_bag_small"):
        make_config(framework="torch", model="toy_bag_small", image_size=32)
