"""What the report does not show because its profile was not run here, and the command that adds it."""

from __future__ import annotations

from ..errors import ConfigError
from ..sweep.profiles import load_profile

# The named profiles beside the default, each adding a part of the study; `make render` merges what they record.
NAMED = ("engines", "distributed", "memory", "full")


def not_run(sweeps: list[dict], named: tuple[str, ...] = NAMED) -> list[dict]:
    """Every named profile no sweep here ran: its name, what it holds, and the commands that add it."""
    ran = {m.get("profile") for m in sweeps}
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


def not_run_text(sweeps: list[dict]) -> str:
    """Markdown: the profiles not run here, each with its command."""
    rows = not_run(sweeps)
    if not rows:
        return ""
    return "**Not run here** (each adds its section to the same report):\n\n" + "\n".join(
        f"- `{r['profile']}`: {r['description']} - `{r['command']}`" for r in rows)
