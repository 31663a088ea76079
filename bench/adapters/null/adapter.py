"""The null adapter: does no work, so its timings are the harness's own per-iteration overhead."""

from __future__ import annotations

from ...config import RunConfig
from ..base import Adapter, Workload


class NullWorkload(Workload):
    def __init__(self) -> None:
        self.settings = {"note": "step() does nothing; latency = harness overhead per iteration"}

    def step(self) -> None:
        return None


class NullAdapter(Adapter):
    name = "null"
    engines = ("none",)
    measures_a_framework = False

    def version(self) -> str:
        from ... import __version__

        return __version__

    def prepare(self, config: RunConfig) -> Workload:
        return NullWorkload()
