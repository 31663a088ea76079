"""Start an IPython kernel whose own log (warnings, interrupt tracebacks) goes to a file, not the terminal.

Used by the private kernelspec of bench/sweep/jupyter_kernels.py: a sweep's or report's terminal then shows only the
sweep's progress and messages; what a kernel printed stays in the log named by BENCH_KERNEL_LOG, masked as it is
written.
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
    from ipykernel import kernelapp

    sys.argv[0] = "ipykernel_launcher"
    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
