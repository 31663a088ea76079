"""The null adapter: does no work, so its timings are the harness's own per-iteration overhead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...version import __version__
from ..base import Adapter, Workload, register

if TYPE_CHECKING:
    from ...config import RunConfig


class NullWorkload(Workload):
    def __init__(self) -> None:
        self.settings = {"note": "step() does nothing; latency = harness overhead per iteration"}

    def step(self) -> None:
        return None


@register
class NullAdapter(Adapter):
    name = "null"
    display_name = "null (harness overhead)"
    colour = "#7f7f7f"
    devices = ("cpu",)
    engines = ("none",)
    measures_a_framework = False

    def version(self) -> str:
        return __version__

    def prepare(self, config: RunConfig) -> Workload:
        return NullWorkload()
