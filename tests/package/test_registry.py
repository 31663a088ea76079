"""Registries: decorator registration, glob listing, duplicate and unknown names."""

import pytest

from bench.adapters import ADAPTERS
from bench.errors import ConfigError
from bench.models import MODELS, list_models
from bench.registry import Registry


def test_register_list_and_filter():
    reg: Registry[int] = Registry("thing")

    @reg.register("resnet50")
    def _a():
        return 1

    reg.add("resnet152", 2)
    reg.add("vgg16", 3)
    assert reg.names("resnet*") == ["resnet152", "resnet50"]
    assert reg.get("vgg16") == 3 and "vgg16" in reg


def test_duplicate_names_are_rejected():
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="duplicate thing name 'a'"):
        reg.add("a", 2)


def test_unknown_name_lists_valid_choices():
    with pytest.raises(ConfigError, match="unknown model 'nope'; valid choices: alexnet"):
        MODELS.get("nope")


def test_catalogue_and_adapters():
    assert {"alexnet", "googlenet", "vgg16", "resnet50", "resnet152", "mobilenet_v2", "tiny_cnn"} <= set(MODELS)
    assert "tiny_cnn" not in list_models(include_tiny=False)
    assert MODELS.get("resnet50").published_params_millions == 25.56
    assert set(ADAPTERS) == {"torch", "tensorflow", "jax", "onnxruntime", "openvino", "mxnet", "null"}
    for name in ADAPTERS:
        assert ADAPTERS.get(name).engines, name
