"""`bench sweep --shard k/n`: machine k of n runs its share of one profile's plan, without a scheduler.

The split is by comparison group (a config in every framework and engine, bench/sweep/plan.py), dealt round
robin in the profile's priority order: every framework of one comparison sits on one machine, so a ratio is
never taken between two machines, and every repetition of a config stays on the machine that ran its first.
The split depends only on the profile, never on what is already recorded, so every machine computes the same
one; their results/<host>/ folders are then copied together and `make render` merges them.
"""

from __future__ import annotations

import dataclasses
import re

from ..errors import ConfigError
from .plan import comparison_group
from .profiles import Profile


def parse_shard(text: str) -> tuple[int, int]:
    """'k/n' as (k, n) with 1 <= k <= n; a clear error otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise ConfigError(f"invalid --shard {text!r}; expected k/n with 1 <= k <= n (e.g. 1/3: the first of three "
                          "machines)")
    k, n = int(match[1]), int(match[2])
    if not 1 <= k <= n:
        raise ConfigError(f"invalid --shard {text!r}: k must be from 1 to n ({n}), got {k}")
    return k, n


def shard_configs(configs, k: int, n: int) -> tuple:
    """The configs of shard k of n: comparison groups dealt round robin in priority order."""
    groups = list(dict.fromkeys(comparison_group(c) for c in configs))
    mine = {g for i, g in enumerate(groups) if i % n == k - 1}
    return tuple(c for c in configs if comparison_group(c) in mine)


def shard_profile(profile: Profile, k: int, n: int) -> Profile:
    """The profile restricted to shard k of n (its memory searches too: each runs on the shard of its index)."""
    configs = shard_configs(profile.configs, k, n)
    if not configs:
        groups = len(dict.fromkeys(comparison_group(c) for c in profile.configs))
        raise ConfigError(f"--shard {k}/{n}: profile {profile.name} has only {groups} comparison group(s), so shard "
                          f"{k} has nothing to run; use at most {groups} shards")
    searches = tuple(s for i, s in enumerate(profile.memory_searches) if i % n == k - 1)
    return dataclasses.replace(profile, configs=configs, memory_searches=searches)
