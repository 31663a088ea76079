"""The sweep's side of the speed reference (bench/runs/speed_reference.py): start it, let it steady at the start of
the sweep, read it between comparison groups and at the end; each reading goes to the sweep manifest with its position
(the order index of the process that runs next), from which the report flags processes run in a slow spell
(bench/measurement/spells.py) and the drift figure draws the machine's speed."""

from __future__ import annotations

import json
import os
import queue
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from ..adapters import process_environment, reference_adapter
from ..measurement.fresh_process import bench_environ, main_python

START_TIMEOUT_S = 120.0
READ_TIMEOUT_S = 30.0
# At the start: readings until STEADY_READINGS agree within STEADY_TOLERANCE of their median, at most STEADY_MAX_S.
STEADY_READINGS = 3
STEADY_TOLERANCE = 0.03
STEADY_MAX_S = 30.0


def speed_reference_on() -> bool:
    """Whether a local sweep reads the speed reference: yes, unless BENCH_SPEED_REFERENCE=0 (the tests' tiny sweeps,
    which are not benchmarks)."""
    return os.environ.get("BENCH_SPEED_REFERENCE", "1") != "0"


class SpeedReference:
    """A running reference process; `read()` gives one reading's median step seconds (None once it has failed, the
    reason in `failed`)."""

    def __init__(self, announce: Callable[[str], None] = print) -> None:
        self.announce, self.failed, self.label = announce, None, None
        self.readings: list[dict] = []
        # started as every process of the reference framework is (an allocator preload included)
        declared = reference_adapter().process_environment
        env = {**bench_environ(), **process_environment.to_set(declared, os.environ)}
        self._proc = subprocess.Popen([main_python(), "-m", "bench.runs.speed_reference"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        # its lines are read by a thread of their own, so a reading waits with a timeout and never blocks the sweep
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_lines, daemon=True).start()
        ready = self._answer(START_TIMEOUT_S, "ready")
        if ready is not None:
            self.label = ready.get("label")

    def _read_lines(self) -> None:
        for text in self._proc.stdout:
            self._lines.put(text)
        self._lines.put(None)  # it ended

    def _answer(self, timeout_s: float, key: str) -> dict | None:
        """The next line holding `key` as JSON (a framework's own words on stdout are skipped), or None once it failed:
        no answer within `timeout_s`, or the process ended."""
        deadline = time.monotonic() + timeout_s
        while not self.failed:
            try:
                text = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail("it did not answer in time")
                return None
            if text is None:
                self._fail("it ended")
                return None
            try:
                answer = json.loads(text)
            except ValueError:
                continue
            if isinstance(answer, dict) and key in answer:
                return answer
        return None

    def _fail(self, why: str) -> None:
        self.failed = f"the speed reference stopped ({why}): no slow spell is judged after this point"
        self.announce(self.failed)
        self.close()

    def read(self, position: int) -> float | None:
        """One reading, kept with `position` (the order index of the process that runs next)."""
        if self.failed:
            return None
        try:
            self._proc.stdin.write("\n")
            self._proc.stdin.flush()
        except OSError:
            self._fail("its pipe closed")
            return None
        answer = self._answer(READ_TIMEOUT_S, "step_s")
        if answer is None:
            return None
        self.readings.append({"position": position, "step_s": answer["step_s"],
                              "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")})
        return answer["step_s"]

    def steady(self, position: int = 0) -> None:
        """Readings until the last STEADY_READINGS agree within STEADY_TOLERANCE (bounded by STEADY_MAX_S), said on
        the terminal: the machine's speed at the start, before the first process."""
        t0 = time.monotonic()
        values: list[float] = []
        try:
            while time.monotonic() - t0 < STEADY_MAX_S:
                v = self.read(position)
                if v is None:
                    return
                values.append(v)
                last = values[-STEADY_READINGS:]
                if len(last) == STEADY_READINGS and max(abs(x / statistics.median(last) - 1) for x in last) <= \
                        STEADY_TOLERANCE:
                    self.announce(f"speed reference ({self.label}): steady at {statistics.median(last) * 1e3:.1f} ms "
                                  f"a step after {len(values)} readings")
                    return
            self.announce(f"speed reference ({self.label}): not steady within {STEADY_MAX_S:g} s "
                          f"({len(values)} readings); the sweep starts anyway")
        finally:  # the warm-up readings are no measure of the sweep's usual speed: the last one stands for the start
            self.readings = self.readings[:-len(values)] + self.readings[-1:] if values else self.readings

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
