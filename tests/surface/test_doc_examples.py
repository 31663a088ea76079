"""Every command the README and docs/ show is valid as written (issue 42): each `python -m bench ...` example parses
with the CLI's own parser and its values pass the validator every run uses (a run's config, a sweep's profile),
without running anything; each `make ...` example names a target the Makefile has and values it accepts. GPU and
Slurm examples are parsed only (this machine has neither a GPU nor the examples' partition)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bench.cli import _parser
from bench.config import FIELD_TYPES, make_config
from bench.sweep.profiles import load_profile

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# An example is a command as typed ('python -m bench run ...'); prose that names a command ('`bench run --cluster
# slurm`' starts one per task) is a reference to it, not something to type as written.
BENCH = re.compile(r"^(?:\.venv/bin/)?python3? -m bench\s+(?P<args>[a-z]+\b.*)$")
PLACEHOLDER = re.compile(r"<[^>]+>")


def _lines(text: str) -> list[str]:
    """Each candidate command: a fenced block's lines (backslash continuations joined) and every inline code span."""
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        out += [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    out += re.findall(r"(?<!`)`([^`\n]+)`(?!`)", re.sub(r"```.*?```", "", text, flags=re.S))
    return out


def _words(command: str) -> list[str]:
    """A shown command's arguments as a shell would pass them: the comment dropped, a shorthand '...' (other options,
    said elsewhere) left out, and an optional '[--option value]' taken as given."""
    command = command.split("  #")[0].split(" # ")[0]
    return [w.strip("[]") for w in shlex.split(command) if w.strip("[]") and w != "..."]


def examples(kind: str) -> list[tuple[str, str]]:
    """(file, command) for every `bench` (kind 'bench') or `make` (kind 'make') example in the README and docs."""
    found = []
    for path in DOCS:
        for line in _lines(path.read_text()):
            for part in (p.strip() for p in line.split("&&")):
                if kind == "bench" and BENCH.match(part):
                    found.append((path.name, part))
                elif kind == "make" and re.match(r"^make [a-z]", part):
                    found.append((path.name, part))
    return sorted(set(found))


BENCH_EXAMPLES = examples("bench")
MAKE_EXAMPLES = examples("make")


def test_the_docs_show_commands_to_check():
    # the scan finds the README's examples (a broken scan would pass vacuously)
    assert len(BENCH_EXAMPLES) >= 20 and len(MAKE_EXAMPLES) >= 10
    assert any("sweep --profile quick" in c for _, c in BENCH_EXAMPLES)


def _needs_elsewhere(words: list[str]) -> str | None:
    """Why an example cannot be validated beyond parsing here (a GPU, a Slurm cluster), or None."""
    if any(w.startswith("cuda") or w == "gpu" for w in words) or "gpucheck" in words:
        return "a GPU"
    if "slurm" in words:
        return "a Slurm cluster"
    return None


@pytest.mark.parametrize("where, command", BENCH_EXAMPLES, ids=[c for _, c in BENCH_EXAMPLES])
def test_every_bench_example_parses_and_validates(where, command):
    words = _words(BENCH.match(command)["args"])
    if any(PLACEHOLDER.search(w) for w in words):
        pytest.skip("a placeholder, not a value")
    try:
        args = _parser().parse_args(words)
    except SystemExit as exc:  # argparse printed why
        pytest.fail(f"{where}: `{command}` does not parse (exit {exc.code})")
    if _needs_elsewhere(words):
        return  # parsed; its values need the hardware it names
    if args.command == "run":
        make_config(**{k: getattr(args, k) for k in FIELD_TYPES})  # ConfigError names the bad value
    elif args.command == "sweep":
        load_profile(args.profile)


def _targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m for line in text.splitlines() for m in re.findall(r"^([a-z][a-z-]*)\s*:", line)}


VARIABLES = {"PROFILE": lambda v: (ROOT / "profiles" / f"{v}.yaml").exists() or PLACEHOLDER.fullmatch(v),
             "GPU": lambda v: v in ("0", "1"), "PYTHON_ENV": lambda v: v == "system",
             "PYTHON": lambda v: bool(v)}


@pytest.mark.parametrize("where, command", MAKE_EXAMPLES, ids=[c for _, c in MAKE_EXAMPLES])
def test_every_make_example_names_a_target_and_valid_values(where, command):
    words = _words(command)[1:]
    targets = _targets()
    for word in words:
        if "=" in word:
            name, value = word.split("=", 1)
            assert name in VARIABLES and VARIABLES[name](value), f"{where}: `{command}`: {word}"
        else:
            assert word in targets, f"{where}: `{command}`: no target {word!r} (targets: {sorted(targets)})"
