"""The grammar of the machines a run spans: the `cluster` setting ('' for this machine, 'slurm', or a host list,
node 0 first) and Slurm's node-list and tasks-per-node syntax. Strings only, so the config checks them."""

from __future__ import annotations

import re

from ..errors import ConfigError

SLURM = "slurm"
RENDEZVOUS = ("static", "c10d")  # torchrun's: a fixed master (--master-addr/--node-rank) or the c10d rendezvous
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


def parse_hosts(text: str) -> tuple[str, ...]:
    """`a,b,10.0.0.3` -> its hosts; refuses an empty item or a name that is no host name or IPv4 address."""
    hosts = tuple(h.strip() for h in str(text).split(","))
    bad = [h for h in hosts if not _HOST.fullmatch(h)]
    if not hosts or bad:
        raise ConfigError(f"invalid cluster {text!r}: {', '.join(map(repr, bad)) or 'no host'} is no host name or "
                          f"address; valid choices: '{SLURM}' or a comma-separated host list, node 0 first "
                          "(e.g. 10.0.0.1,10.0.0.2)")
    return hosts


def check_cluster(value: object) -> None:
    """A RunConfig `cluster` value: '' (this machine), 'slurm', or a host list."""
    if not isinstance(value, str):
        raise ConfigError(f"invalid cluster {value!r}; valid choices: '' (this machine), '{SLURM}', or a "
                          "comma-separated host list")
    if value and value != SLURM:
        parse_hosts(value)


def expand_nodelist(text: str) -> list[str]:
    """A Slurm host list (`n[1-3,05],m`) expanded in order, as `scontrol show hostnames` prints it."""
    hosts: list[str] = []
    for group in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", text):
        if not group:
            continue
        parts = re.split(r"\[([^\]]*)\]", group)  # prefix, range, infix, range, ..., suffix
        names = [parts[0]]
        for i in range(1, len(parts), 2):
            ids = []
            for item in parts[i].split(","):
                low, _, high = item.partition("-")
                if not low.isdigit() or (high and not high.isdigit()):
                    raise ConfigError(f"invalid Slurm node list {text!r}: bad range {item!r}")
                ids += [str(n).zfill(len(low)) for n in range(int(low), int(high or low) + 1)]
            names = [n + i_ + parts[i + 1] for n in names for i_ in ids]
        hosts += names
    if not hosts:
        raise ConfigError(f"invalid Slurm node list {text!r}: no host")
    return hosts


def expand_tasks_per_node(text: str) -> list[int]:
    """SLURM_STEP_TASKS_PER_NODE (`2(x3),1`) -> tasks on each node in node-list order."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not m:
            raise ConfigError(f"invalid Slurm tasks per node {text!r}: bad item {part!r}")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts
