"""The package's shape, checked: no module outside bench/adapters/ names a framework or imports a project module
inside a function (the layering itself is import-linter's, run by `make test`)."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.adapters import ADAPTERS

PACKAGE = Path(__file__).resolve().parent.parent / "bench"


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
