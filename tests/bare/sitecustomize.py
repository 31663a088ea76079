"""Makes the modules named in BENCH_UNIMPORTABLE (comma-separated) absent in this process and, through PYTHONPATH,
in every child, as on an interpreter that lacks them (a GPU container with only a framework): the path finder
does not see them, so `importlib.util.find_spec` answers None and `import` raises ModuleNotFoundError. Used by the
bare-interpreter tests."""

import importlib.machinery
import os
import sys

BLOCKED = {m for m in os.environ.get("BENCH_UNIMPORTABLE", "").split(",") if m}


class PathFinderWithout(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return None
        return super().find_spec(name, path, target)


if BLOCKED:
    sys.meta_path[:] = [PathFinderWithout if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
