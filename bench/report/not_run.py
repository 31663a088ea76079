"""What the report does not show because its profile was not run here, and the command that adds it."""

from __future__ import annotations

import pandas as pd

from ..errors import ConfigError
from ..results.sweep_manifest import SweepManifest, as_manifests
from ..sweep.profiles import load_profile

# The named profiles beside the default, each adding a part of the study; `make render` merges what they record.
NAMED = ("engines", "distributed", "parallelism", "input", "memory", "full")


def not_run(sweeps: list[SweepManifest], named: tuple[str, ...] = NAMED) -> list[dict]:
    """Every named profile no sweep here ran: its name, what it holds, and the commands that add it."""
    ran = {m.profile for m in as_manifests(sweeps)}
    out = []
    for name in named:
        if name in ran:
            continue
        try:
            description = load_profile(name).description
        except ConfigError as exc:  # a profile that does not load is said, not hidden
            description = f"(does not load: {exc})"
        out.append({"profile": name, "description": description,
                    "command": f"make sweep PROFILE={name} && make render"})
    return out


def not_run_table(sweeps: list[SweepManifest]) -> pd.DataFrame:
    """The details' table of the named profiles not run here: name, what it holds, command."""
    return pd.DataFrame(not_run(sweeps), columns=["profile", "description", "command"])


def not_run_text(sweeps: list[SweepManifest]) -> str:
    """Markdown, one sentence: the profiles not run here and the command that adds each (what each holds is in the
    details)."""
    rows = not_run(sweeps)
    if not rows:
        return ""
    names = ", ".join(f"`{r['profile']}`" for r in rows)
    return (f"**Not run here:** the profiles {names}; each adds its section to this report with "
            "`make sweep PROFILE=<name> && make render` (what each holds: the details).")
