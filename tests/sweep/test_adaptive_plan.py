"""The sequential repetition plan (`repeats: adaptive`): which config gets the next process, from synthetic records."""

import json
import math

import numpy as np
import pytest

from bench.cli import main
from bench.config import make_config
from bench.errors import ConfigError
from bench.results.record import Record
from bench.stats.judge import Judge
from bench.sweep.plan import clean_process_values, next_process
from bench.sweep.profiles import load_profile
from tests.conftest import bench_cli
from tests.synthetic import record

# Two comparison groups (batch 1 and batch 8), each torch vs tensorflow; a solo config (mxnet alone at batch 4).
CONFIGS = {(fw, bs): make_config(framework=fw, model="resnet50", batch_size=bs, protocol="seed")
           for fw, bs in (("torch", 1), ("tensorflow", 1), ("torch", 8), ("tensorflow", 8))}


def _values(spread: dict, n: int = 3, seed: int = 0) -> dict[str, list[float]]:
    """config key -> n per-process values around a mean with a relative spread."""
    rng = np.random.default_rng(seed)
    return {CONFIGS[k].key: list(mean * (1 + sd * rng.standard_normal(n))) for k, (mean, sd) in spread.items()}


def _next(values, budget=1e9, max_repeats=6, cost=lambda c: 10.0, processes=None):
    processes = processes or {k: len(v) for k, v in values.items()}
    return next_process(CONFIGS.values(), values, processes, cost, budget, max_repeats, Judge())


def test_the_undecided_comparison_gets_the_next_process_where_the_cap_leaves_room_to_decide_it():
    # batch 1: torch 2x tensorflow, tight (decided); batch 8: 10 vs 10.4 with 5% spread (straddles 1x), which
    # about 6 more processes a side would decide: a cap of 10 leaves room for them, a cap of 6 does not
    values = _values({("torch", 1): (20, 0.01), ("tensorflow", 1): (10, 0.01),
                      ("torch", 8): (10, 0.05), ("tensorflow", 8): (10.4, 0.05)})
    extra = _next(values, max_repeats=10)
    assert extra is not None and extra.config.batch_size == 8
    assert extra.reason.startswith("undecided: ") and "more process" in extra.reason
    assert extra.partner is not None and extra.partner.batch_size == 8  # the other side runs beside it
    assert _next(values, max_repeats=6) is None  # more processes within the cap would not decide it: none go


def test_page_one_rows_come_before_other_undecided_pairs_and_a_decided_row_asks_for_nothing():
    # one group of three frameworks: torch 20, tensorflow 10 and jax 10.3, all with 5% spread. The page-1 row
    # (torch vs the runner-up) is decided; jax vs torch is too; nothing asks for more
    trio = {fw: make_config(framework=fw, model="resnet50", batch_size=16, protocol="seed")
            for fw in ("torch", "tensorflow", "jax")}
    rng = np.random.default_rng(4)
    values = {trio[fw].key: list(m * np.exp(0.05 * rng.standard_normal(3)))
              for fw, m in (("torch", 20), ("tensorflow", 10), ("jax", 10.3))}
    assert next_process(trio.values(), values, {k: 3 for k in values}, lambda c: 1.0, 1e9, 8, Judge()) is None
    # torch 10.8 vs tensorflow 10 (page 1, undecided, a few more processes would decide it) and jax 7 (decided
    # against torch): the page-1 pair asks
    values = {trio[fw].key: list(m * np.exp(0.05 * rng.standard_normal(3)))
              for fw, m in (("torch", 10.8), ("tensorflow", 10), ("jax", 7))}
    extra = next_process(trio.values(), values, {k: 3 for k in values}, lambda c: 1.0, 1e9, 8, Judge())
    assert extra is not None and extra.config.framework in ("torch", "tensorflow") and extra.score >= 2


def test_nothing_more_when_every_comparison_is_decided():
    values = _values({("torch", 1): (20, 0.01), ("tensorflow", 1): (10, 0.01),
                      ("torch", 8): (30, 0.01), ("tensorflow", 8): (10, 0.01)})
    assert _next(values) is None


def test_the_budget_and_max_repeats_stop_the_plan():
    values = _values({("torch", 1): (10, 0.05), ("tensorflow", 1): (10.1, 0.05),
                      ("torch", 8): (10, 0.05), ("tensorflow", 8): (10.1, 0.05)})
    assert _next(values, budget=9.0) is None  # one more process costs 10 s
    assert _next(values, max_repeats=3) is None  # every config already has 3
    # only the cheap group fits: batch 8 costs more than the budget left
    extra = _next(values, budget=15.0, cost=lambda c: 10.0 if c.batch_size == 1 else 20.0)
    assert extra.config.batch_size == 1


def test_a_config_with_one_clean_process_comes_first():
    values = _values({("torch", 1): (20, 0.01), ("tensorflow", 1): (10, 0.01),
                      ("torch", 8): (10, 0.05), ("tensorflow", 8): (10.2, 0.05)})
    values[CONFIGS[("torch", 1)].key] = values[CONFIGS[("torch", 1)].key][:1]  # two disturbed, left out
    extra = _next(values, processes={k: 3 for k in values})
    assert extra.config.batch_size == 1 and math.isinf(extra.score) and "fewer than two" in extra.reason


def test_a_solo_config_asks_for_more_only_while_its_own_interval_is_wide():
    solo = make_config(framework="mxnet", model="resnet50", batch_size=4, protocol="seed")
    for spread, wanted in ((0.2, True), (0.001, False)):
        values = {solo.key: list(10 * (1 + spread * np.random.default_rng(1).standard_normal(3)))}
        extra = next_process([solo], values, {solo.key: 3}, lambda c: 1.0, 1e9, 6, Judge())
        assert (extra is not None) == wanted, (spread, extra)
        if wanted:
            assert "target" in extra.reason


def test_clean_values_take_the_latest_attempt_and_leave_disturbed_processes_out():
    disturbed = [{"name": "disturbed", "reason": "other processes took 40% of the CPUs"}]
    records = [Record.from_json(r) for r in (
        record(repeat=0, ips=10, seed=1, created="2026-01-01T00:00:00Z"),
        record(repeat=1, ips=50, seed=2, flags=disturbed, created="2026-01-01T00:00:01Z"),
        record(repeat=2, ips=40, seed=3, flags=disturbed, created="2026-01-01T00:00:02Z"),
        record(repeat=2, ips=11, seed=4, created="2026-01-01T00:00:03Z"))]  # the retry of repeat 2
    for r, attempt in zip(records, (0, 0, 0, 1)):
        r.attempt = attempt
    [(key, values)] = clean_process_values(records).items()
    assert key == records[0].config_key and sorted(round(v) for v in values) == [10, 11]


@pytest.mark.parametrize("text, needle", [
    ("repeats: adaptive\nmin_repeats: 4\nmax_repeats: 3\n", "'min_repeats' (4) is larger than 'max_repeats' (3)"),
    ("repeats: 3\nmax_repeats: 5\n", "applies only with 'repeats: adaptive'"),
    ("repeats: sometimes\n", "or 'adaptive', got 'sometimes'"),
    ("repeats: adaptive\nmax_repeats: 1\n", "'max_repeats' must be a number from 2 to 100"),
])


def test_bad_sequential_settings_are_refused_by_name(tmp_path, text, needle):
    path = tmp_path / "p.yaml"
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\n" + text)
    with pytest.raises(ConfigError, match=None) as exc:
        load_profile(str(path))
    assert needle in str(exc.value)


def test_adaptive_and_fixed_repeats_load(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: adaptive\nmax_repeats: 5\n")
    p = load_profile(str(path))
    assert (p.adaptive, p.repeats, p.max_repeats) == (True, 2, 5)
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: 4\n")
    p = load_profile(str(path))
    assert (p.adaptive, p.repeats, p.max_repeats) == (False, 4, 4)


def test_the_runner_queues_the_next_repeat_of_the_undecided_config(tmp_path):
    from bench.sweep.policies import adaptive_task
    from tests.synthetic import write

    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [torch, tensorflow]\nmodels: [resnet50]\nbatch_sizes: [1, 8]\n"
                       "repeats: adaptive\nmax_repeats: 12\nsettings: {protocol: seed}\n")
    p = load_profile(str(profile))
    means = {("torch", 1): 20, ("tensorflow", 1): 10, ("torch", 8): 10, ("tensorflow", 8): 11.2}
    write([record(framework=fw, batch_size=bs, repeat=r, ips=means[fw, bs] * (1 + 0.05 * (r - 1) * (-1) ** len(fw)),
                  seed=r)
           for (fw, bs) in means for r in range(3)], tmp_path / "results")
    tasks, why = adaptive_task(p, tmp_path / "results", list(p.configs), lambda t: 10.0, 1e9)
    assert {t.config.batch_size for t in tasks} == {8} and {t.repeat for t in tasks} == {3}
    assert why.startswith("undecided: ")
    assert adaptive_task(p, tmp_path / "results", list(p.configs), lambda t: 10.0, 5.0) is None  # over budget


def test_an_adaptive_sweep_runs_the_rounds_then_says_why_each_extra_process_ran(tmp_path):
    """A real sweep of the harness's own null framework: 2 rounds, then extra processes only where the plan asks,
    each named in the summary and the manifest; the summary ends with estimate vs actual and the overhead table."""

    from tests.conftest import TEST_HOST

    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: adaptive\nmax_repeats: 3\nretries: 0\n"
                       "settings: {protocol: seed, warmup: 1, iterations: 5, phase_iterations: 0, image_size: 32}\n")
    results = tmp_path / "results"
    proc = bench_cli("sweep", "--profile", str(profile), "--results-dir", str(results))
    assert proc.returncode == 0, proc.stderr[-2000:]
    [manifest] = [json.loads(p.read_text()) for p in (results / TEST_HOST / "sweeps").glob("*.json")]
    records = list((results / TEST_HOST / "records").glob("*.json"))
    extra = manifest["extra_processes"]
    assert manifest["adaptive"] == {"min_repeats": 2, "max_repeats": 3} and len(records) == 2 + len(extra) <= 3
    assert all(e["repeat"] == 2 and e["reason"] for e in extra)
    assert len(manifest["process_walls"]) == len(records) and manifest["runs_s"] > 0
    assert manifest["estimate_error"] == pytest.approx((manifest["estimate_s"] - manifest["runs_s"])
                                                       / manifest["runs_s"])
    assert "estimate error" in proc.stdout and "where each process's seconds went" in proc.stdout
    assert "timed loop (the measurement)" in proc.stdout
    assert proc.stdout.count("extra process:") == len(extra)


def test_a_persistently_loaded_machine_is_said_early_with_the_cost_of_its_retries():
    from bench.sweep.plan import busy_warning

    assert busy_warning(3, 3, 60.0) is None  # too few runs to tell
    assert busy_warning(10, 4, 60.0) is None  # most runs clean: retries are the cheap fix
    text = busy_warning(10, 6, 150.0)
    assert "6 of the 10 runs" in text and "2.5 min" in text and "resumes where it stopped" in text


def test_the_estimate_counts_the_extra_processes_an_adaptive_sweep_usually_gets_here():
    """The printed estimate is of the whole sweep: the share of possible extra processes this host's finished
    adaptive sweeps of the profile ran (else the measured default), at their cost, within the budget left."""
    from bench.sweep.plan import EXTRA_SHARE, expected_extra_s, extra_share

    def manifest(extras, status="finished", profile="quick"):
        order = [{"config_key": k} for k in ("a", "b", "a", "b")]
        return {"profile": profile, "status": status, "adaptive": {"min_repeats": 2, "max_repeats": 4},
                "order": order, "extra_processes": [{}] * extras}

    assert extra_share([], "quick") == EXTRA_SHARE
    # unfinished, other profiles and fixed-repeat sweeps teach nothing; two configs x 2 possible extras each
    assert extra_share([manifest(4, "interrupted"), manifest(4, profile="other"),
                        {"profile": "quick", "status": "finished", "adaptive": None}], "quick") == EXTRA_SHARE
    assert extra_share([manifest(1), manifest(3)], "quick") == pytest.approx(0.5)
    configs = ["x", "y"]
    cost = {"x": 10.0, "y": 30.0}.get
    assert expected_extra_s(configs, cost, 2, 4, 0.5, 1e9) == pytest.approx(40.0)  # (10 + 30) x 2 x 0.5
    assert expected_extra_s(configs, cost, 2, 4, 0.5, 25.0) == 25.0  # never past the budget left
    assert expected_extra_s(configs, cost, 2, 4, 0.5, -5.0) == 0.0  # the rounds already fill it
    assert expected_extra_s(configs, cost, 3, 3, 0.5, 1e9) == 0.0  # no room above min_repeats


def test_a_plan_prints_the_rounds_and_the_expected_extras_apart():
    from bench.sweep.runner import estimate_line

    assert estimate_line({"estimate_s": 600.0, "rounds_s": 600.0, "extra_s": 0.0}) == "estimated 10.0 min"
    line = estimate_line({"estimate_s": 900.0, "rounds_s": 600.0, "extra_s": 300.0})
    assert line.startswith("estimated 15.0 min (10.0 for the rounds, ~5.0 for the extra processes")


def test_the_equivalence_margin_is_a_checked_profile_setting(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nequivalence_margin: 0.1\n")
    assert load_profile(str(path)).equivalence_margin == 0.1
    path.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nequivalence_margin: 2\n")
    with pytest.raises(ConfigError, match="'equivalence_margin' must be a number from 0.005 to 0.5, got 2"):
        load_profile(str(path))


def test_a_config_whose_interval_rests_on_one_degree_of_freedom_gets_its_third_process_first():
    """Sweep 3 of 2026-11-28: PyTorch training batch 16 measured 4.6 and 5.8 img/s, a spread the sweep's prior
    did not fit, so page 1 read [0.49-2.28] on one degree of freedom, while the plan gave its 8 extra processes to a
    cheaper comparison it called undecidable (ONNX Runtime 1.02x OpenVINO)."""
    configs = {(fw, bs): make_config(framework=fw, model="resnet50", batch_size=bs, protocol="seed", mode=mode)
               for fw, bs, mode in (("torch", 16, "training"), ("tensorflow", 16, "training"),
                                    ("onnxruntime", 8, "inference"), ("openvino", 8, "inference"))}
    quiet = {f"quiet{i}": [10.0 * (1 + 0.01 * i), 10.0 * (1 + 0.01 * i) * 1.02] for i in range(12)}
    values = {configs["torch", 16].key: [4.6, 5.8], configs["tensorflow", 16].key: [5.0, 5.1],
              configs["onnxruntime", 8].key: [25.0, 25.5, 26.0, 25.2],
              configs["openvino", 8].key: [24.8, 25.9, 25.1, 25.6]}
    every = list(configs.values()) + [make_config(framework="torch", model="resnet50", batch_size=100 + i,
                                                  protocol="seed") for i in range(12)]
    values.update({c.key: quiet[f"quiet{i}"] for i, c in enumerate(every[4:])})
    cost = {c.key: (60.0 if c.mode == "training" else 5.0) for c in every}  # the cheap pair would win a tie
    extra = next_process(every, values, {k: len(v) for k, v in values.items()}, lambda c: cost[c.key], 1e9, 6,
                         Judge())
    assert extra is not None and extra.config.key == configs["torch", 16].key
    assert "1 degree of freedom" in extra.reason


def test_repeats_above_an_adaptive_profiles_max_repeats_says_which_wins(tmp_path, capsys):
    profile = tmp_path / "p.yaml"
    profile.write_text("frameworks: [null]\nmodels: [tiny_cnn]\nrepeats: adaptive\nmin_repeats: 2\nmax_repeats: 3\n"
                       "retries: 0\n")
    code = main(["sweep", "--profile", str(profile), "--list", "--repeats", "4", "--results-dir", str(tmp_path)])
    assert code == 0 and "--repeats 4 is above the profile's max_repeats 3: --repeats wins" in capsys.readouterr().out
