"""Emulated nodes on one machine: network namespaces joined through a bridge by shaped veth links.

`emulated_nodes(n, gbit, delay_ms)` is a context manager yielding one `Node` per namespace; it
always removes what it created (on success, on an exception and on Ctrl-C), and at the next start
it removes namespaces left by a process that was killed outright (their names carry its pid).
Only addresses inside the project's own namespaces (10.213.0.0/24) are used; nothing is routed out.
Without root (or without `ip` / `tc`) it raises `EmulationUnavailable` with the reason, and the
caller falls back to loopback and says so; a link delay that cannot be emulated is refused instead (a
delay that is not there is no measurement of it).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from dataclasses import dataclass

from ...host.links import MAX_EMULATED_NODES, PREFIX, namespaces_unavailable

SUBNET = "10.213.0"
IFNAME = "eth0"


class EmulationUnavailable(RuntimeError):
    """This machine cannot emulate nodes (not root, no iproute2, or namespaces refused)."""


@dataclass(frozen=True)
class Node:
    index: int
    netns: str
    address: str
    ifname: str = IFNAME

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside this node's namespace."""
        return ["ip", "netns", "exec", self.netns, *argv]


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise EmulationUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _in(ns: str, *args: str) -> None:
    done = subprocess.run(["ip", "netns", "exec", ns, *args], capture_output=True, text=True)
    if done.returncode:
        raise EmulationUnavailable(f"`{' '.join(args)}` in {ns} failed: {done.stderr.strip() or done.returncode}")


unavailable_reason = namespaces_unavailable  # why nodes cannot be emulated here (None when they can)


def project_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def _owner_alive(name: str) -> bool:
    pid = name[len(PREFIX):].split("x", 1)[0]
    return pid.isdigit() and os.path.exists(f"/proc/{pid}")


def remove_stale() -> list[str]:
    """Delete namespaces of this project whose creating process is gone; returns their names."""
    stale = [ns for ns in project_namespaces() if not _owner_alive(ns)]
    for ns in stale:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return stale


def shape_commands(ifname: str, gbit: float, delay_ms: float) -> list[list[str]]:
    """tc commands shaping egress of `ifname`: netem for delay (and rate with it), else tbf for rate."""
    if delay_ms:  # netem carries both the delay and the rate
        cmd = ["tc", "qdisc", "add", "dev", ifname, "root", "netem", "limit", "100000", "delay", f"{delay_ms:g}ms"]
        return [cmd + (["rate", f"{gbit * 1000:g}mbit"] if gbit else [])]
    if gbit:  # a token bucket: burst of ~1 ms at the rate (at least 256 KiB), queue up to 10 ms
        burst_kb = max(256, int(gbit * 125_000 / 1024))
        return [["tc", "qdisc", "add", "dev", ifname, "root", "tbf", "rate", f"{gbit * 1000:g}mbit",
                 "burst", f"{burst_kb}kb", "latency", "10ms"]]
    return []


@contextlib.contextmanager
def emulated_nodes(n: int, gbit: float = 0.0, delay_ms: float = 0.0):
    """Yield `n` Nodes in fresh namespaces behind one bridge; each node's egress shaped by tc."""
    reason = unavailable_reason()
    if reason:
        raise EmulationUnavailable(reason)
    if not 2 <= n <= MAX_EMULATED_NODES:
        raise ValueError(f"emulated nodes: n must be 2..{MAX_EMULATED_NODES}, got {n}")
    remove_stale()
    tag = f"{PREFIX}{os.getpid()}x{uuid.uuid4().hex[:4]}"
    bridge_ns = f"{tag}br"
    created: list[str] = []
    try:
        _ip("netns", "add", bridge_ns)
        created.append(bridge_ns)
        _in(bridge_ns, "ip", "link", "add", "br0", "type", "bridge")
        _in(bridge_ns, "ip", "link", "set", "br0", "up")
        nodes = []
        for k in range(n):
            ns = f"{tag}n{k}"
            _ip("netns", "add", ns)
            created.append(ns)
            peer = f"v{k}"
            _ip("link", "add", IFNAME, "netns", ns, "type", "veth", "peer", "name", peer, "netns", bridge_ns)
            _in(bridge_ns, "ip", "link", "set", peer, "master", "br0")
            _in(bridge_ns, "ip", "link", "set", peer, "up")
            address = f"{SUBNET}.{k + 1}"
            _in(ns, "ip", "addr", "add", f"{address}/24", "dev", IFNAME)
            _in(ns, "ip", "link", "set", IFNAME, "up")
            _in(ns, "ip", "link", "set", "lo", "up")
            for cmd in shape_commands(IFNAME, gbit, delay_ms):
                try:
                    _in(ns, *cmd)
                except EmulationUnavailable as exc:
                    if cmd[6] == "netem" and "unknown" in str(exc):
                        raise EmulationUnavailable(
                            "this kernel has no netem qdisc, so a link delay cannot be emulated "
                            "(rate shaping with tbf works: set link_delay_ms 0)") from None
                    raise
            nodes.append(Node(k, ns, address))
        yield nodes
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
