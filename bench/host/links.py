"""What this machine can emulate of a network link: namespaces (root, iproute2) and a delay (the netem qdisc)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

# Every namespace of the project is named PREFIX<pid>x...: the pid lets a later run remove those of a killed one.
PREFIX = "dlb"
# Emulated nodes sit on one /24 (10.213.0.0/24, bench/runs/distributed/topology.py); 200 keeps addresses spare.
MAX_EMULATED_NODES = 200


def namespaces_unavailable() -> str | None:
    """Why nodes cannot be emulated here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (this process is not root)"
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found (install iproute2)"
    return None


@functools.lru_cache(maxsize=1)
def netem_unavailable() -> str | None:
    """Why a link delay cannot be emulated here (None when it can): tried on the loopback of a throwaway
    namespace, because whether the kernel has netem (built in, a module, or neither) is only known by asking."""
    reason = namespaces_unavailable()
    if reason:
        return reason
    probe = f"{PREFIX}{os.getpid()}xnetem"
    try:
        made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if made.returncode:
            return f"a network namespace could not be made: {made.stderr.strip() or made.returncode}"
        tried = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                                "delay", "1ms"], capture_output=True, text=True)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if tried.returncode:
        return f"this kernel has no netem qdisc (tc: {tried.stderr.strip() or tried.returncode})"
    return None
