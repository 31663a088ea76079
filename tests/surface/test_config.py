"""RunConfig validation: every bad input names the bad value and the valid choices; exit code 2; nothing written."""

import pytest

from bench import ConfigError
from bench.config import make_config
from bench.host.devices import gpus
from tests.conftest import bench_cli

BAD_INPUTS = [
    (dict(framework="caffe2"), "caffe2", "tensorflow"),
    (dict(model="resnet9000"), "resnet9000", "vgg16"),
    (dict(mode="testing"), "testing", "training"),
    (dict(precision="int4"), "int4", "bf16"),
    (dict(device="tpu"), "tpu", "cpu"),
    (dict(engine="xla"), "xla", "eager"),
    (dict(protocol="fast"), "fast", "adaptive"),
    (dict(data="disk"), "disk", "host"),
    (dict(batch_size=0), "0", "> 0"),
    (dict(batch_size=-3), "-3", "> 0"),
    (dict(threads=0), "0", "> 0"),
    (dict(model="alexnet", image_size=32), "32", "63"),
    (dict(iterations=0), "0", "> 0"),
    (dict(time_budget_s=float("nan")), "nan", "finite"),
    (dict(time_budget_s=float("inf")), "inf", "finite"),
    (dict(ci_target=float("nan")), "nan", "finite"),
    (dict(seed=-1), "-1", ">= 0"),
    (dict(seed=2**40), str(2**40), "<="),
]


def _config(**over):
    base = dict(framework="torch", model="resnet50", mode="inference")
    return make_config(**{**base, **over})


@pytest.mark.parametrize("over,bad,valid", BAD_INPUTS)
def test_bad_input_names_value_and_choices(over, bad, valid):
    with pytest.raises(ConfigError) as err:
        _config(**over)
    assert bad in str(err.value) and valid in str(err.value)


@pytest.mark.skipif(bool(gpus()), reason="this machine has a GPU")
def test_gpu_asked_for_where_none_exists():
    with pytest.raises(ConfigError, match="no GPU"):
        _config(device="cuda")


def test_unknown_setting_is_rejected_by_name():
    with pytest.raises(ConfigError, match="batchsize"):
        _config(batchsize=4)


def test_defaults_are_resolved_and_config_is_immutable():
    c = _config()
    assert c.engine == "eager" and c.image_size == 224 and c.threads >= 1 and c.device == "cpu"
    assert (c.warmup, c.iterations) == (50, 10)
    seed = _config(protocol="seed")
    assert (seed.warmup, seed.iterations) == (10, 20)
    with pytest.raises(AttributeError):
        c.batch_size = 8  # frozen


def test_config_key_is_stable_and_distinguishes_configs():
    assert _config().key == _config().key
    assert _config().key != _config(batch_size=8).key


@pytest.mark.parametrize("args", [
    ("--framework", "torch", "--model", "resnet50", "--batch-size", "0"),
    ("--framework", "mxnet2", "--model", "resnet50"),
    ("--framework", "torch", "--model", "resnet50", "--precision", "fp8"),
    ("--framework", "torch", "--model", "alexnet", "--image-size", "16"),
    ("--framework", "torch", "--model", "resnet50", "--threads", "0"),
    ("--framework", "torch", "--model", "resnet50", "--device", "cuda:7"),
    ("--framework", "torch", "--model", "resnet50", "--time-budget-s", "nan"),
    ("--framework", "torch", "--model", "resnet50", "--time-budget-s", "inf"),
    ("--framework", "torch", "--model", "resnet50", "--ci-target", "nan"),
    ("--framework", "torch", "--model", "resnet50", "--seed", "-5"),
])


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, args):
    proc = bench_cli("run", *args, results=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert not any(tmp_path.rglob("*")), "nothing may be written for bad input"


def test_distributed_runs_on_a_gpu_are_refused_not_faked(monkeypatch):
    # A GPU distributed config on a machine without the GPUs it needs is refused, never run on CPU workers.
    from bench.host import devices

    monkeypatch.setattr(devices, "gpus", lambda: [{"index": 0, "name": "a GPU"}])
    with pytest.raises(ConfigError, match="NCCL cannot run two ranks on one GPU.*backend gloo"):
        make_config(framework="torch", model="tiny_cnn", mode="training", device="cuda", strategy="allreduce",
                    workers=2)
