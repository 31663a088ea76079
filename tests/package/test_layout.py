"""The package's shape, checked: no module outside bench/adapters/ names a framework or imports a project module
inside a function (the layering itself is import-linter's, run by `make test`)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from bench.adapters import ADAPTERS

PACKAGE = Path(__file__).resolve().parents[2] / "bench"


def _modules_outside_adapters():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "adapters" not in path.relative_to(PACKAGE).parts:
            yield path, ast.parse(path.read_text())


def test_no_module_outside_the_adapters_names_a_framework():
    names = {n for n in ADAPTERS if ADAPTERS.get(n).measures_a_framework}
    names |= {alias for n in names for alias in ADAPTERS.get(n).aliases}
    found = [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}"
             for path, tree in _modules_outside_adapters() for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names]
    assert not found, found


def test_no_project_import_inside_a_function_outside_the_adapters():
    # The adapters import their framework (and their modules that import it) lazily, inside functions: that is the
    # one exception. Anywhere else an import inside a function hides a dependency from the layering contracts.
    found = []
    for path, tree in _modules_outside_adapters():
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(fn):
                project = (isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith(
                    "bench"))) or (isinstance(node, ast.Import) and any(a.name.startswith("bench") for a in node.names))
                if project:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found


def test_the_run_notebook_imports_nothing_mxnets_lean_environment_lacks():
    # notebooks/benchmark.ipynb runs in MXNet's own environment too (requirements-mxnet.txt: no pandas, scipy or
    # PyYAML): its imports must not pull them in, or every MXNet run of a sweep fails before it starts.
    import json
    import subprocess
    import sys

    notebook = json.loads((PACKAGE.parent / "notebooks" / "benchmark.ipynb").read_text())
    imports = [line for cell in notebook["cells"] if cell["cell_type"] == "code"
               for line in "".join(cell["source"]).splitlines() if line.startswith(("from bench", "import bench"))]
    assert imports
    blocker = ("import sys\nclass Lean:\n    def find_spec(self, name, path=None, target=None):\n"
               "        if name.split('.')[0] in ('pandas', 'scipy', 'yaml'):\n"
               "            raise ImportError(f'{name} is not in the lean environment')\n"
               "sys.meta_path.insert(0, Lean())\n")
    done = subprocess.run([sys.executable, "-c", blocker + "\n".join(imports)], capture_output=True, text=True,
                          cwd=PACKAGE.parent, env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert done.returncode == 0, done.stderr[-2000:]


def _contracts() -> dict[str, dict]:
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _named(entries) -> set[str]:
    """The modules a contract's list names ('a | b' and 'a : b' hold several in one layer)."""
    return {m.strip() for entry in entries for part in entry.split("|") for m in part.split(":")}


def test_every_top_level_module_is_in_every_contract_that_lists_the_package():
    """The import contracts list their modules by hand: a top-level module in none of them is unchecked, so a new one
    (bench.values, bench.version were) fails here until it is placed."""
    top = {f"bench.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    top |= {f"bench.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    contracts = _contracts()
    layers = _named(contracts["Layers: each imports only from the layers below it"]["layers"])
    assert top - layers == set(), "not in the layers contract"
    frameworks = set(contracts["No module outside bench/adapters/ imports a framework"]["source_modules"])
    assert top - frameworks - {"bench.adapters"} == set(), "not in the no-framework contract"
    intervals = set(next(c for n, c in contracts.items() if n.startswith("Only bench/stats computes intervals"))
                    ["source_modules"])
    assert top - intervals - {"bench.stats"} == set(), "not in the intervals contract"
