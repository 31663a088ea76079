"""Figure conventions: one colour per framework, flagged numbers visible, legends off the data, no paths."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from bench.adapters.base import SPARE_COLOURS  # noqa: E402
from bench.report import figures as F  # noqa: E402
from bench.report import published as P  # noqa: E402
from bench.report import style as S  # noqa: E402

PLATFORM = "Test CPU /home/someone/results/host1 [test-host]"


def configs() -> pd.DataFrame:
    """2 frameworks x 2 batch sizes (+ batch 1), one model and mode; tensorflow at batch 32 is flagged."""
    rows = []
    for series, framework, scale in (("torch", "torch", 1.0), ("tensorflow", "tensorflow", 0.8)):
        for bs in (1, 8, 32):
            ips = scale * 10 * bs ** 0.5
            flags = "disturbed, batch_jump" if (framework, bs) == ("tensorflow", 32) else ""
            rows.append({"platform": PLATFORM, "model": "resnet50", "mode": "inference", "precision": "fp32",
                         "batch_size": bs, "series": series, "framework": framework, "status": "ok",
                         "images_per_sec_median": ips, "images_per_sec_ci_low": 0.9 * ips,
                         "images_per_sec_ci_high": 1.1 * ips, "latency_ms_p50": 1e3 * bs / ips,
                         "latency_ms_p90": 1.2e3 * bs / ips, "latency_ms_p99": 1.5e3 * bs / ips,
                         "peak_memory_bytes": 2.0**28 * bs, "utilisation": 0.01 * bs,
                         "phase_forward_ms": 2.0 * bs, "phase_h2d_ms": 0.5 * bs, "phase_backward_ms": np.nan,
                         "flags": flags, "sound": not flags})
    return pd.DataFrame(rows)


PUBLISHED = pd.DataFrame([
    {"model": "resnet50", "mode": "training", "framework": "tensorflow", "hardware": "Tesla V100 16GB",
     "accelerators": "8", "precision": "fp16", "batch_per_device": "256", "images_per_sec": 6000.0, "source": "a"},
    {"model": "resnet50", "mode": "training", "framework": "tensorflow", "hardware": "Tesla V100 16GB",
     "accelerators": "8", "precision": "fp16", "batch_per_device": "128", "images_per_sec": 5500.0, "source": "b"},
    {"model": "resnet50", "mode": "training", "framework": "pytorch", "hardware": "Tesla V100 16GB",
     "accelerators": "1", "precision": "fp16", "batch_per_device": "256", "images_per_sec": 900.0, "source": "c"},
    {"model": "resnet50", "mode": "training", "framework": "tensorflow", "hardware": "Tesla V100 16GB",
     "accelerators": "1", "precision": "fp16", "batch_per_device": "256", "images_per_sec": 1000.0, "source": "d"},
    {"model": "resnet50", "mode": "inference", "framework": "tensorflow", "hardware": "Tesla V100 16GB",
     "accelerators": "1", "precision": "fp32", "batch_per_device": "64", "images_per_sec": 1200.0, "source": "e"},
    {"model": "resnet50", "mode": "inference", "framework": "tensorflow", "hardware": "Tesla V100 16GB",
     "accelerators": "1", "precision": "fp16", "batch_per_device": "64", "images_per_sec": 2400.0, "source": "f"},
])

SEED = pd.DataFrame([{"hardware": "Tesla P100", "framework": fw, "model": "resnet50", "mode": "inference",
                      "batch_size": bs, "images_per_sec": ips}
                     for fw, ips in (("tensorflow", 100.0), ("pytorch", 120.0), ("caffe2", 90.0)) for bs in (8, 32)])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _figs(result) -> list:
    return [f for f in (result if isinstance(result, list) else [result]) if f is not None]


def _all_figures(df: pd.DataFrame) -> dict[str, list]:
    return {"per_hardware": F.per_hardware(df), "per_framework": F.per_framework(df, common_batch=32),
            "latency": _figs(F.latency_batch1(df)), "memory": F.memory_vs_batch(df),
            "utilisation": _figs(F.utilisation(df)), "phases": _figs(F.phase_breakdown(df)),
            "published": _figs(P.published_overlay(df, PUBLISHED)), "then_and_now": _figs(P.then_and_now(df, SEED))}


def _texts(fig) -> list[str]:
    fig.canvas.draw()  # tick labels exist only once drawn
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _colour_by_label(fig) -> dict[str, set[str]]:
    """Legend label -> the colours of the artists drawn under it (lines and bars) on every axes."""
    out: dict[str, set[str]] = {}
    for ax in fig.axes:
        for artist in ax.lines:
            out.setdefault(artist.get_label(), set()).add(to_hex(artist.get_color()))
        for label, bar in _bars(ax):
            out.setdefault(label, set()).add(to_hex(bar.get_facecolor()))
    return out


def _bars(ax) -> list[tuple[str, Rectangle]]:
    """(legend label, bar) for every bar: ax.bar labels the container, not its patches."""
    return [(c.get_label(), bar) for c in ax.containers if isinstance(c, BarContainer) for bar in c.patches]


def test_every_artist_of_a_framework_has_its_colour_in_every_figure():
    df = configs()
    figs = _all_figures(df)
    assert all(figs.values()), [k for k, v in figs.items() if not v]
    expected = {"torch": S.FRAMEWORK_COLOURS["torch"], "tensorflow": S.FRAMEWORK_COLOURS["tensorflow"]}
    for name in ("per_hardware", "latency", "memory", "utilisation"):
        for fig in figs[name]:
            seen = _colour_by_label(fig)
            for series, colour in expected.items():
                assert seen.get(series) == {colour}, (name, series, seen.get(series))
    for fig in figs["then_and_now"]:
        seen = _colour_by_label(fig)
        for label, colours in seen.items():
            for fw in ("torch", "tensorflow", "caffe2"):
                if f": {fw}," in label:
                    assert colours == {S.FRAMEWORK_COLOURS[fw]}, (label, colours)
        assert any("2019 published: torch" in lab for lab in seen)  # 'pytorch' is torch's colour and name
        dashed = {lab for ax in fig.axes for lab in [ln.get_label() for ln in ax.lines if ln.get_linestyle() == "--"]}
        assert dashed and all(lab.startswith("2019 published") for lab in dashed)
    fig = figs["published"][0]
    points = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() in ("o", "D")]
    assert points and {to_hex(ln.get_markeredgecolor()) for ln in points} <= {S.FRAMEWORK_COLOURS["torch"],
                                                                               S.FRAMEWORK_COLOURS["tensorflow"]}
    # points on its log axis, never bars: a log axis has no zero for a bar to start from
    assert not [p for ax in fig.axes for p in ax.patches if isinstance(p, Rectangle)]


def test_framework_variants_share_the_colour_and_differ_in_style():
    styles = [S.series_style(s, "torch") for s in ("torch", "torch bf16", "torch/compile", "torch/compile bf16")]
    assert {s["color"] for s in styles} == {S.FRAMEWORK_COLOURS["torch"]}
    assert len({(s["ls"], s["marker"]) for s in styles}) == 4
    assert len({s["hatch"] for s in styles}) == 4 and styles[0]["hatch"] is None
    # tensorflow's eager engine is named only when it is not the default (graph), so it is a variant too.
    assert S.series_style("tensorflow/eager", "tensorflow")["ls"] != S.series_style("tensorflow", "tensorflow")["ls"]
    assert S.series_style("mystery", "mystery")["color"] == S.FALLBACK_COLOUR
    assert S.series_style("x", "pytorch")["color"] == S.FRAMEWORK_COLOURS["torch"]
    assert S.series_style("caffe2")["color"] == S.FRAMEWORK_COLOURS["caffe2"]
    # a precision alone (no engine) is a variant too: same colour and line, its own marker and hatch
    bf16, default = S.series_style("tensorflow bf16", "tensorflow"), S.series_style("tensorflow", "tensorflow")
    assert bf16["color"] == default["color"] and bf16["ls"] == default["ls"]
    assert bf16["marker"] != default["marker"] and bf16["hatch"] and not default["hatch"]
    framework_colours = [c for k, c in S.FRAMEWORK_COLOURS.items() if k != "other"]
    assert len(set(framework_colours)) == len(framework_colours)


def test_an_unknown_framework_s_colour_is_no_framework_s():
    """The fallback colour is neither a declared framework's nor one a new framework package may be given."""
    declared = {to_hex(c) for k, c in S.FRAMEWORK_COLOURS.items() if k != "other"}
    assert S.FALLBACK_COLOUR not in declared | {to_hex(c) for c in SPARE_COLOURS}


def test_phase_colours_share_nothing_with_frameworks():
    assert set(S.PHASE_ORDER) <= set(S.PHASE_COLOURS)
    framework = {to_hex(c) for c in S.FRAMEWORK_COLOURS.values()}
    assert not framework & {to_hex(c) for c in S.PHASE_COLOURS.values()}
    fig = F.phase_breakdown(configs())
    drawn = {to_hex(p.get_facecolor()) for ax in fig.axes for p in ax.patches}
    assert drawn and not drawn & framework


def test_flagged_points_are_hollow_with_a_note():
    for fig in F.per_hardware(configs()) + F.memory_vs_batch(configs()):
        hollow = [ln for ax in fig.axes for ln in ax.lines
                  if ln.get_markerfacecolor() == "none" and len(ln.get_xdata())]
        # at batch 32, dodged along the log2 axis by a few percent (F.DODGE) so frameworks do not hide each other
        (x,) = hollow[0].get_xdata() if len(hollow) == 1 else (None, None)
        assert x is not None and abs(x / 32 - 1) < 0.2
        assert to_hex(hollow[0].get_markeredgecolor()) == S.FRAMEWORK_COLOURS["tensorflow"]
        # Only the flagged point is hollow: the tensorflow line marks its clean points filled.
        tf = next(ln for ax in fig.axes for ln in ax.lines if ln.get_label() == "tensorflow")
        assert list(tf.get_markevery()) == [True, True, False]
        assert S.FLAGGED_NOTE in _texts(fig)
    clean = configs().assign(flags="", sound=True)
    for fig in F.per_hardware(clean):
        assert S.FLAGGED_NOTE not in _texts(fig)
        assert not [ln for ax in fig.axes for ln in ax.lines if ln.get_markerfacecolor() == "none"]


def test_flagged_bars_are_hatched_and_marked():
    df = configs()
    flagged = (df["framework"] == "torch") & (df["batch_size"] == 1)
    df.loc[flagged, "flags"] = "cv_outlier"
    df.loc[flagged, "sound"] = False  # a throughput flag: kept out of the findings
    fig = F.latency_batch1(df)
    bars = {label: p for ax in fig.axes for label, p in _bars(ax)}
    assert S.FLAGGED_HATCH in (bars["torch"].get_hatch() or "")
    assert not bars["tensorflow"].get_hatch()
    assert "!" in _texts(fig) and S.FLAGGED_BAR_NOTE in _texts(fig)


def test_per_framework_bars_in_the_framework_colour_hatched_for_best_batch():
    figs = F.per_framework(configs(), common_batch=32)
    assert len(figs) == 1  # one figure, a bar pair per framework/engine
    fig = figs[0]
    bars = [(c.get_label(), bar.get_gid(), bar) for ax in fig.axes for c in ax.containers
            if isinstance(c, BarContainer) for bar in c.patches]
    assert {gid for _, gid, _ in bars} == {"torch", "tensorflow"}
    texts = _texts(fig)
    for fw in ("torch", "tensorflow"):
        mine = [(label, p) for label, gid, p in bars if gid == fw]
        assert {to_hex(p.get_facecolor()) for _, p in mine} == {S.FRAMEWORK_COLOURS[fw]}
        common = [p for label, p in mine if label == "batch 32"]
        best = [p for label, p in mine if label.startswith("best batch")]
        assert common and all(S.BEST_BATCH_HATCH in p.get_hatch() for p in best)
        # a best batch that is batch 32 is the same config: one bar, never the same number drawn twice
        assert len(best) == (0 if fw == "torch" else 1)
        if fw == "tensorflow":
            # Its batch-32 number is flagged: hatched with '!', and the best batch is the clean batch 8.
            assert S.FLAGGED_HATCH in common[0].get_hatch() and "!" in texts
            assert "tensorflow\nbest bs 8" in texts
        else:
            assert common[0].get_hatch() is None and "torch\nbest bs 32" in texts
    # the best batch is said under each pair, level, never as text on or beside a bar (it ran into its neighbours)
    on_axes = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert not [t for t in on_axes if t.startswith(("bs", "best"))], on_axes
    assert all(t.get_rotation() == 0 for ax in fig.axes for t in ax.get_xticklabels())


def test_latency_axis_is_log_across_decades_and_linear_within_one():
    fig = F.latency_batch1(configs())  # latencies within one decade: a log axis would carry one label
    assert all(ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 for ax in fig.axes if ax.get_visible())
    wide = configs()
    fast = (wide["framework"] == "torch") & (wide["batch_size"] == 1)
    wide.loc[fast, ["latency_ms_p50", "latency_ms_p90", "latency_ms_p99"]] /= 100
    fig = F.latency_batch1(wide)
    assert all(ax.get_yscale() == "log" for ax in fig.axes if ax.get_visible())


def test_legends_sit_outside_the_axes_and_are_deduplicated():
    for fig in F.per_hardware(configs()) + F.per_framework(configs()) + _figs(F.latency_batch1(configs())):
        assert not [ax for ax in fig.axes if ax.get_legend()]
        assert len(fig.legends) == 1
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert len(labels) == len(set(labels))
        # Swatches show the series' own style, not a flagged bar's cross-hatch.
        for text, handle in zip(fig.legends[0].get_texts(), fig.legends[0].legend_handles):
            if isinstance(handle, Rectangle):
                assert S.FLAGGED_HATCH not in (handle.get_hatch() or ""), text.get_text()
        fig.canvas.draw()
        legend_box = fig.legends[0].get_window_extent()
        for ax in fig.axes:
            assert not legend_box.overlaps(ax.get_window_extent())


def test_published_condensed_keeps_the_fastest_single_device_row_per_device():
    out = P.published_condensed(PUBLISHED)
    keys = ["model", "mode", "hardware"]
    assert not out.duplicated(keys).any()
    # a, b: 8 GPUs (a scaling point, not a device); c: torch slower than d on the same GPU; e: fp32 slower than f
    assert set(out["source"]) == {"d", "f"}
    assert (pd.to_numeric(out["accelerators"]) == 1).all()
    assert P.published_condensed(PUBLISHED.iloc[:0]).empty


def test_published_labels_carry_gpu_count_precision_and_batch():
    fig = P.published_overlay(configs(), PUBLISHED)
    texts = _texts(fig)
    assert any(t.startswith("published: tensorflow") and "1x Tesla V100" in t and "fp16" in t and "bs64" in t
               for t in texts)
    df = configs().assign(model="resnet50", mode="training")
    texts = _texts(P.published_overlay(df, PUBLISHED))
    assert any("1x Tesla V100 16GB, fp16, bs256" in t for t in texts)
    assert not any("8x" in t for t in texts)  # an 8-GPU figure is a scaling point, not a single device


def test_no_paths_in_figure_text():
    for figs in _all_figures(configs()).values():
        for fig in figs:
            for text in _texts(fig):
                assert "/home" not in text and "someone" not in text, text
    assert S.plain_text("torch/compile on /opt/x/y [h]") == "torch/compile on [h]"
    assert S.plain_text(r"see C:\Users\me\r.json and ~/r") == "see and"


def test_empty_input_gives_nothing():
    empty = configs().iloc[:0]
    assert F.per_hardware(empty) == []
    assert F.per_framework(empty) == []
    assert F.memory_vs_batch(empty) == []
    assert F.latency_batch1(empty) is None
    assert F.utilisation(empty) is None
    assert F.phase_breakdown(empty) is None
    assert P.published_overlay(empty, PUBLISHED) is None
    assert P.then_and_now(empty, SEED) is None
    failed = configs().assign(status="failed")
    assert F.per_hardware(failed) == [] and F.latency_batch1(failed) is None


def test_legend_handles_use_the_series_style():
    fig = F.per_hardware(configs())[0]
    handles = {t.get_text(): h for t, h in zip(fig.legends[0].get_texts(), fig.legends[0].legend_handles)}
    assert isinstance(handles["torch"], Line2D)
    assert to_hex(handles["torch"].get_color()) == S.FRAMEWORK_COLOURS["torch"]


def test_per_framework_draws_one_figure_per_device():
    df = configs()
    other = df.assign(platform="another device", images_per_sec_median=df["images_per_sec_median"] * 100)
    figs = F.per_framework(pd.concat([df, other], ignore_index=True))
    assert len(figs) == 2 and all(" on " in f._suptitle.get_text() for f in figs)


def test_per_framework_compares_one_precision_a_chart():
    """Last session's bar chart drew OpenVINO int8 beside the fp32 bars: int8's 3.8x is quantisation, not a faster
    framework. One figure per precision, fp32 first, each titled with its precision."""
    df = configs()
    int8 = df[df["framework"] == "torch"].assign(framework="openvino", series="openvino int8", precision="int8",
                                                 images_per_sec_median=df["images_per_sec_median"] * 4)
    ort = int8.assign(framework="onnxruntime", series="onnxruntime int8")

    def bars(figs):
        return [{bar.get_gid() for ax in f.axes for c in ax.containers if isinstance(c, BarContainer) for bar in c}
                for f in figs]

    figs = F.per_framework(pd.concat([int8, ort, df], ignore_index=True), common_batch=32)
    assert bars(figs) == [{"torch", "tensorflow"}, {"onnxruntime int8", "openvino int8"}]
    assert [f._suptitle.get_text().split(", ")[-1].split(":")[0] for f in figs] == ["fp32", "int8"]
    # int8 in one framework only (the default profile's OpenVINO) compares nothing: no figure of its own
    assert bars(F.per_framework(pd.concat([int8, df], ignore_index=True), common_batch=32)) == [{"torch", "tensorflow"}]


def test_an_interval_far_wider_than_every_estimate_is_cut_and_said_so():
    df = configs()
    wide = (df["framework"] == "torch") & (df["batch_size"] == 8)
    df.loc[wide, "images_per_sec_ci_high"] = 50 * df.loc[wide, "images_per_sec_median"]
    fig = F.per_hardware(df)[0]
    ax = next(a for a in fig.axes if a.get_visible() and a.lines)
    assert ax.get_ylim()[1] == pytest.approx(F.WIDE_CI_CUT * df["images_per_sec_median"].max())
    assert any("intervals cut" in t.get_text() for t in ax.texts)
    fig = F.per_hardware(configs())[0]  # ordinary intervals: nothing cut
    assert not any("intervals cut" in t.get_text() for a in fig.axes for t in a.texts)


def test_a_flag_that_leaves_the_throughput_sound_keeps_the_point_solid():
    df = configs()
    phase_only = (df["framework"] == "torch") & (df["batch_size"] == 8)
    df.loc[phase_only, "flags"] = "phase_sum_mismatch"
    df.loc[phase_only, "sound"] = True
    assert not F._flagged(df[phase_only].iloc[0])
    assert F._flagged(df[(df["framework"] == "tensorflow") & (df["batch_size"] == 32)].iloc[0])
