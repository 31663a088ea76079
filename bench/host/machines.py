"""The grammar of the machines a run spans: the `cluster` setting ('' for this machine, 'slurm', or a host list,
node 0 first) and Slurm's node-list and tasks-per-node syntax. Strings only, so the config checks them."""

from __future__ import annotations

import re

from ..errors import ConfigError
from ..values import integer

SLURM = "slurm"
RENDEZVOUS = ("static", "c10d")  # torchrun's: a fixed master (--master-addr/--node-rank) or the c10d rendezvous
MAX_HOSTS = 1024  # as many as a run has nodes at most
PORTS = (1, 65535)
SLURM_IDS = (0, 2**32 - 1)  # Slurm's job, array and step ids: unsigned 32-bit numbers
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
HOST_RULE = "a host name (letters, digits, '-' and '.') or an IPv4 address"


def host_problem(value: object) -> str | None:
    """Why `value` is no host name (RFC 1123) or IPv4 address; None when it is one."""
    if not isinstance(value, str) or not value:
        return "it is empty" if value == "" else "it is no text"
    labels = value.split(".")
    if len(value) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return "it is no host name or IPv4 address"
    if all(label.isdigit() for label in labels) and (len(labels) != 4 or max(map(int, labels)) > 255):
        return "it is no IPv4 address (four numbers 0-255)"
    return None


def check_host(value: object, what: str) -> str:
    """A machine's address from any source (--master-addr, MASTER_ADDR, a host list's item), or a ConfigError
    naming `what` (the message masks a `user:password@` and shortens a long value)."""
    problem = host_problem(value)
    if problem:
        raise ConfigError(f"invalid {what} {value!r}: {problem}; valid: {HOST_RULE}")
    return value


def check_port(value: object, what: str) -> int:
    """A TCP port from any source (--master-port, BENCH_MASTER_PORT, MASTER_PORT): 1 to 65535."""
    return integer(value, what, *PORTS)


def check_rank(value: object, count: int, what: str) -> int:
    """This machine's (or task's) rank among `count` from any source (--node-rank, BENCH_NODE_RANK, SLURM_PROCID)."""
    try:
        return integer(value, what, 0, count - 1)
    except ConfigError:
        raise ConfigError(f"invalid {what} {value!r}: out of range for {count} machine{'s' if count != 1 else ''} "
                          f"(numbered 0..{count - 1}); valid: {what} in 0..{count - 1}") from None


def check_slurm_id(value: object, what: str) -> int:
    """A Slurm job, array task or step id from its variable (SLURM_JOB_ID, SLURM_STEP_ID, ...): a whole number, as
    it names a rendezvous and a job's files."""
    return integer(value, what, *SLURM_IDS)


def parse_hosts(text: str, what: str = "cluster") -> tuple[str, ...]:
    """`a,b,10.0.0.3` -> its hosts; refuses an empty item, a name that is no host name or IPv4 address, or more
    than MAX_HOSTS hosts, naming at most the first three bad items."""
    hosts = tuple(h.strip() for h in str(text).split(","))
    bad = [h for h in hosts if host_problem(h)]
    if bad or len(hosts) > MAX_HOSTS:
        named = ", ".join(map(repr, bad[:3])) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        why = f"{named} {'is' if len(bad) == 1 else 'are'} no host name or IPv4 address" if bad else \
            f"it lists {len(hosts)} hosts, more than {MAX_HOSTS}"
        raise ConfigError(f"invalid {what} {text!r}: {why}; valid choices: '{SLURM}' or a comma-separated host list, "
                          "node 0 first (e.g. 10.0.0.1,10.0.0.2)")
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
                if int(high or low) - int(low) >= MAX_HOSTS:
                    raise ConfigError(f"invalid Slurm node list {text!r}: range {item!r} holds more than {MAX_HOSTS} "
                                      "hosts")
                ids += [str(n).zfill(len(low)) for n in range(int(low), int(high or low) + 1)]
            names = [n + i_ + parts[i + 1] for n in names for i_ in ids]
            if len(names) > MAX_HOSTS:
                raise ConfigError(f"invalid Slurm node list {text!r}: more than {MAX_HOSTS} hosts")
        hosts += names
        if len(hosts) > MAX_HOSTS:
            raise ConfigError(f"invalid Slurm node list {text!r}: more than {MAX_HOSTS} hosts")
    if not hosts:
        raise ConfigError(f"invalid Slurm node list {text!r}: no host")
    for host in hosts:
        check_host(host, "host in the Slurm node list")
    return hosts


def expand_tasks_per_node(text: str) -> list[int]:
    """SLURM_STEP_TASKS_PER_NODE (`2(x3),1`) -> tasks on each node in node-list order."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not m:
            raise ConfigError(f"invalid Slurm tasks per node {text!r}: bad item {part!r}")
        counts += [integer(m.group(1), "Slurm tasks per node", 0, MAX_HOSTS)] * \
            integer(m.group(2) or "1", "Slurm nodes with that many tasks", 1, MAX_HOSTS)
        if len(counts) > MAX_HOSTS:
            raise ConfigError(f"invalid Slurm tasks per node {text!r}: more than {MAX_HOSTS} nodes")
    return counts
