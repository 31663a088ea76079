"""The engines table: per framework and configuration its best engine, the runner-up's verdict, and its share of the
fp32 GEMM peak (int8: its speed-up over fp32, never a utilisation)."""

import pandas as pd

from bench.report.estimates import engines_table
from bench.report.sections import engines
from bench.stats.judge import Judge


def _row(framework, engine, precision, ips, utilisation=None, **extra):
    return {"platform": "cpu [h]", "framework": framework, "model": "resnet50", "mode": "inference",
            "batch_size": 16, "image_size": 224, "device": "cpu", "data": "device", "engine": engine,
            "precision": precision, "series": f"{framework}/{engine} {precision}", "images_per_sec_median": ips,
            "process_ips": [ips * 0.99, ips * 1.01, ips], "process_sweeps": ["s"] * 3, "spread_var": 1e-4,
            "spread_df": 10.0, "spread_pooled": True, "sound": True, "flag_list": [], "flags": "",
            "utilisation": utilisation, "cpu_precision_features": "avx512_vnni", **extra}


def test_each_framework_gets_its_best_engine_with_its_gemm_peak_share_and_int8_its_speed_up():
    configs = pd.DataFrame([_row("jax", "jit", "fp32", 13.0, 0.10), _row("jax", "jit_eigen", "fp32", 15.0, 0.12),
                            _row("onnxruntime", "all", "fp32", 26.0, 0.21),  # one engine: no row
                            _row("onnxruntime", "basic", "int8", 40.0), _row("onnxruntime", "all", "int8", 52.0)])
    table = engines_table(configs, Judge())
    assert list(table["framework"]) == ["jax", "onnxruntime"] and list(table["precision"]) == ["fp32", "int8"]
    jax, int8 = table.iloc[0], table.iloc[1]
    assert (jax["best engine"], jax["runner-up"], jax["utilisation"]) == ("jit_eigen", "jit", 0.12)
    assert jax["verdict"] == "winner" and jax["engines"] == "jit_eigen 15.0, jit 13.0"
    assert int8["best engine"] == "all" and pd.isna(int8["utilisation"])
    assert abs(int8["int8 speed-up"] - 2.0) < 0.01  # over onnxruntime's fastest fp32 engine
    blocks = engines.render(type("D", (), {"configs": configs, "judge": Judge(0.02)})()).blocks
    shown = blocks[1].frame
    assert list(shown["GEMM-peak share (int8: speed-up)"]) == ["12%", "int8 2.00x over fp32"]
    assert shown.iloc[0]["vs runner-up"].startswith("winner: 1.15x")
    assert engines_table(configs[configs["framework"] == "onnxruntime"].iloc[:1], Judge()).empty


def test_an_int8_row_with_one_engine_says_nothing_of_a_runner_up():
    configs = pd.DataFrame([_row("onnxruntime", "all", "fp32", 26.0, 0.21), _row("onnxruntime", "all", "int8", 52.0)])
    table = engines_table(configs, Judge())
    assert list(table["runner-up"].fillna("")) == [""]
    # nothing compared: the report leaves the section out (page 1 shows the number)
    assert engines.render(type("D", (), {"configs": configs, "judge": Judge(0.05)})()).blocks == []
