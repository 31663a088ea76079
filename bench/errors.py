"""Exceptions that the harness turns into exit codes and record statuses."""

from __future__ import annotations

import contextlib
import signal
import threading


class BenchError(Exception):
    """Base class for every error the harness raises on purpose."""


class ConfigError(BenchError, ValueError):
    """A bad input: names the bad value and the valid choices. Nothing has run or been written."""


class UnsupportedError(BenchError):
    """The combination is valid but this framework/device cannot run it; becomes a `skipped` record."""


class FrameworkUnavailableError(UnsupportedError):
    """The framework is not installed or does not import; becomes a `skipped` record."""


class SchemaError(BenchError, ValueError):
    """A record does not match the result schema."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so every `finally` and context exit runs (namespaces,
    scratch folders, child processes), and the command exits 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def terminations_unwind():
    """While inside, SIGTERM and SIGHUP raise `Terminated` (once; a second one during the clean-up is ignored), so
    the owner of what a run creates cleans it up as on Ctrl-C. Outside the main thread, where Python cannot set a
    handler, nothing changes (the owner there is not the process that receives them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = []

    def handler(signum, frame) -> None:
        if not raised:
            raised.append(signum)
            raise Terminated(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)  # None: a handler set outside Python
