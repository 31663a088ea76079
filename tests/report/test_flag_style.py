"""Every figure states its flags through one helper (bench/report/style.py: mark_flags), so a new figure cannot
forget them; a figure whose every input is flagged says so in its title."""

from __future__ import annotations

import ast
from pathlib import Path

import matplotlib.pyplot as plt

from bench.report import style

REPORT = Path(__file__).parents[2] / "bench" / "report"
# Calls that make a matplotlib figure (directly or through the shared layout helpers).
MAKES_FIGURE = {"subplots", "figure", "grid", "_grid", "model_mode_grid", "platform_rows"}


def _called(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def _figure_functions() -> dict[str, set[str]]:
    """'module.function' -> every name it calls, directly or through the module's own functions, for each
    public module-level function of bench/report that makes a figure."""
    out = {}
    for path in sorted(REPORT.glob("*.py")):
        if path.name in ("style.py", "marks.py"):  # the helpers themselves
            continue
        tree = ast.parse(path.read_text())
        local = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for name, fn in local.items():
            seen, todo, calls = {name}, [fn], set()
            while todo:
                here = _called(todo.pop())
                calls |= here
                for callee in here & set(local) - seen:
                    seen.add(callee)
                    todo.append(local[callee])
            if not name.startswith("_") and calls & MAKES_FIGURE:
                out[f"{path.stem}.{name}"] = calls
    return out


def test_every_figure_function_calls_the_flag_helper():
    figures = _figure_functions()
    # the scan finds the report's figures (a broken scan would pass vacuously)
    for known in ("figures.per_hardware", "figures.latency_batch1", "scaling_figures.efficiency",
                  "published.then_and_now", "diagnostics.drift_timeline", "memory.memory_probes_figure"):
        assert known in figures, known
    missing = sorted(name for name, calls in figures.items() if style.mark_flags.__name__ not in calls)
    assert not missing, f"figure functions that never call style.mark_flags: {missing}"


def test_a_figure_whose_every_input_is_flagged_says_so_in_its_title():
    fig, axes = plt.subplots(1, 2)
    fig.suptitle("Throughput")
    assert style.mark_flags(fig, [True, True])._suptitle.get_text() == f"Throughput ({style.ALL_FLAGGED})"
    assert fig.flag_counts == (2, 2)
    one, ax = plt.subplots()
    ax.set_title("Efficiency")
    style.mark_flags(one, [True, False])
    assert ax.get_title() == "Efficiency" and one.flag_counts == (1, 2)
    style.mark_flags(one, [True])
    assert ax.get_title() == f"Efficiency ({style.ALL_FLAGGED})"
    plt.close("all")
