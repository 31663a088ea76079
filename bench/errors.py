"""Exceptions that the harness turns into exit codes and record statuses."""

from __future__ import annotations

import contextlib
import signal
import threading

from .masking import brief, mask_text


class BenchError(Exception):
    """Base class for every error the harness raises on purpose."""


class ConfigError(BenchError, ValueError):
    """A bad input: names the bad value and the valid choices. Nothing has run or been written.

    Whatever raised it and whatever value it quotes, its message is masked (a host list's `user:password@`) and a
    few lines at most (a 500-host list is shown by its start and length): the one place every message passes."""

    def __init__(self, message: object = "") -> None:
        super().__init__(brief(mask_text(str(message))))


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
    """While inside, Ctrl-C (SIGINT, to the whole foreground process group), SIGTERM and SIGHUP take one path: the
    first raises (KeyboardInterrupt for SIGINT, `Terminated` for the others) so the owner of what a run creates
    (namespaces, scratch folders, child processes) removes it, and any signal during that clean-up is ignored, so
    a second Ctrl-C cannot cut it short. SIGINT is taken even when this process was started with it ignored (a
    background job of a script): a run that outlived its Ctrl-C could only be killed, leaving everything behind.
    Outside the main thread, where Python cannot set a handler, nothing changes (the owner there is not the process
    that receives them)."""
    outer = getattr(signal.getsignal(signal.SIGTERM), "unwinds", False)  # nested: the outer one's state holds
    if threading.current_thread() is not threading.main_thread() or outer:
        yield
        return
    raised = []

    def handler(signum, frame) -> None:
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)

    handler.unwinds = True

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)  # None: a handler set outside Python
