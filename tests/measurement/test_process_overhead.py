"""What a sweep's process spends besides its timed loop (issue 28: the timed loop's share of the wall time): no step
run twice for the phase pass, no whole-batch step before the loop, a kernel that starts without a debugger or history.
"""

import sys

import pytest

from bench.adapters.base import Workload, subtractive_phases
from bench.config import make_config
from bench.results.record import Record, Samples, Startup
from bench.runs import single
from bench.sweep import kernel_launcher
from bench.sweep.plan import estimate_run_s


class _Phased(Workload):
    """A workload with a phase pass, which counts its calls."""

    def __init__(self, config, subtractive=False):
        self.config, self.subtractive, self.calls = config, subtractive, []

    def step(self):
        self.calls.append("step")

    def phases(self, iterations, step_s=()):
        self.calls.append(("phases", iterations, tuple(step_s)))
        return {"forward": [0.5] * iterations, "backward": [1.0] * iterations, "update": [0.1] * iterations}


class _NoPass(_Phased):
    phases = Workload.phases  # TFLite, the null adapter: no phase pass


def _config(**kw):
    return make_config(**{"framework": "torch", "model": "tiny_cnn", "batch_size": 2, "image_size": 32,
                          "phase_iterations": 2, **kw})


@pytest.mark.parametrize("kw,subtractive,expected", [
    ({}, False, "forward"), ({"data": "host"}, False, None), ({"mode": "training"}, True, "step"),
    ({"mode": "training"}, False, None), ({"mode": "training", "data": "host"}, True, None)])


def test_a_phase_is_the_timed_loops_step_only_where_the_step_is_that_phase_alone(kw, subtractive, expected):
    assert _Phased(_config(**kw), subtractive).loop_phase() == expected
    assert _NoPass(_config(**kw), subtractive).loop_phase() is None


def _record_after_loop(config, timed):
    r = Record.new(config, 0, 0, None)
    r.samples, r.startup = Samples(warmup_s=[9.0], timed_s=timed), Startup()
    return r


def test_an_inference_steps_forward_phase_is_the_timed_loop_itself():
    # before: the pass ran the step again (ResNet-50 inference at batch 32: 2.5 s, a step more than the loop timed)
    w = _Phased(_config())
    r = _record_after_loop(w.config, [1.0, 1.2, 1.1])
    single._phases(r, w, w.config)
    assert w.calls == [] and r.phases.samples_s == {"forward": [1.0, 1.2, 1.1]} and r.phases.iterations == 3
    assert r.phases.median_ms == {"forward": pytest.approx(1100.0)} and "timed loop" in r.phases.method
    host = _Phased(_config(data="host"))  # a host-fed step holds its copy, which the pass times apart
    single._phases(_record_after_loop(host.config, [1.0]), host, host.config)
    assert host.calls == [("phases", 2, ())]


def test_a_subtractive_pass_hands_the_timed_loops_steps_to_the_adapter():
    w = _Phased(_config(mode="training"), subtractive=True)
    r = _record_after_loop(w.config, [2.0, 2.2])
    single._phases(r, w, w.config)
    assert w.calls == [("phases", 2, (2.0, 2.2))] and "timed loop's median" in r.phases.method


def test_the_subtractive_split_neither_warms_nor_times_the_step_the_loop_timed():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in ("forward", "forward_backward", "step")}
    raw = subtractive_phases(lambda: None, 2, fns["forward"], fns["forward_backward"], fns["step"],
                             step_s=[3.0, 5.0, 4.0])
    assert "step" not in calls and calls.count("forward") == 3 and calls.count("forward_backward") == 3
    assert set(raw) == {"forward", "backward", "update"} and len(raw["update"]) == 2
    assert all(u + b + f == pytest.approx(4.0) for f, b, u in zip(raw["forward"], raw["backward"], raw["update"]))
    calls.clear()  # without the loop's steps (host- or file-fed): the step is warmed and timed as before
    subtractive_phases(lambda: None, 2, fns["forward"], fns["forward_backward"], fns["step"])
    assert calls.count("step") == 3


def test_the_estimate_charges_no_phase_pass_to_an_inference_step_on_device_data():
    flops, peak = 4e9, 100e9
    device, host = _config(model="resnet50", phase_iterations=5), _config(model="resnet50", phase_iterations=5,
                                                                           data="host")
    assert estimate_run_s(device, 0, [], flops, peak) == pytest.approx(estimate_run_s(device, 1, [], flops, peak))
    assert estimate_run_s(host, 0, [], flops, peak) > estimate_run_s(host, 1, [], flops, peak)


def test_torch_inference_checks_for_autograd_on_one_image_of_an_eager_model():
    # the whole batch through the model before the loop cost a step (ResNet-50 at batch 32: ~2 s of start-up)
    from bench.adapters import ADAPTERS

    w = ADAPTERS.get("torch").prepare(_config(batch_size=4))
    assert w.settings["autograd_in_inference"] is False
    assert w.autograd_probe(w.module).shape[0] == 1
    assert w.autograd_probe(object()).shape[0] == 4  # a compiled model sees only the run's batch shape


def test_the_kernel_starts_without_a_debugger_or_an_input_history(monkeypatch):
    from ipykernel import kernelapp

    seen = {}
    monkeypatch.setattr(kernelapp, "launch_new_instance",
                        lambda: seen.update(argv=list(sys.argv), debugpy=sys.modules.get("debugpy", "absent")))
    monkeypatch.setattr(sys, "argv", ["launcher", "-f", "kernel.json"])
    monkeypatch.delenv("BENCH_KERNEL_LOG", raising=False)
    monkeypatch.setitem(sys.modules, "debugpy", None)  # so that the test's end restores whatever was there
    monkeypatch.delitem(sys.modules, "debugpy")
    kernel_launcher.main()
    assert seen == {"argv": ["ipykernel_launcher", "--HistoryManager.enabled=False", "-f", "kernel.json"],
                    "debugpy": None}
    with pytest.raises(ImportError):
        import debugpy  # noqa: F401
