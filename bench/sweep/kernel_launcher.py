"""Start an IPython kernel whose own log (warnings, interrupt tracebacks) goes to a file, not the terminal.

Used by the private kernelspec of bench/sweep/jupyter_kernels.py: a sweep's or report's terminal then shows only the
sweep's progress and messages; what a kernel printed stays in the log named by BENCH_KERNEL_LOG, masked as it is
written. The kernel runs notebooks unattended, so it starts without what only an interactive user needs.
"""

from __future__ import annotations

import os
import sys

from ..masking import redirect_masked


def main() -> None:
    log = os.environ.get("BENCH_KERNEL_LOG")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        redirect_masked(fd, 2)  # masked as it is written: the log never holds a secret, not even for a moment
        os.close(fd)
    unattended()
    from ipykernel import kernelapp

    sys.argv[0] = "ipykernel_launcher"
    sys.argv[1:1] = UNATTENDED_ARGS
    kernelapp.launch_new_instance()


# No input history: an unattended kernel's cells are in its notebook, and the history is an SQLite file written by a
# thread of its own, which would run beside the timed loop.
UNATTENDED_ARGS = ["--HistoryManager.enabled=False"]


def unattended() -> None:
    """No debugger: no one attaches one to a sweep's or report's kernel, and ipykernel imports debugpy whenever it is
    installed (about 110 modules, 11% of the CPU a sweep's kernel spends before its run: process start in the
    sweep's overhead table). A module set to None in sys.modules fails to import, which ipykernel takes as
    'debugpy not installed'."""
    sys.modules.setdefault("debugpy", None)


if __name__ == "__main__":
    main()
