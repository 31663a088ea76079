"""What a report section renders to: a list of blocks (Markdown text, tables, figures) that a notebook displays.

A section is a module with `render(d) -> Section`; `d` is the report's data (bench/report/context.py: ReportData).
Rendering computes nothing new: it words and lays out what the estimate layer (bench/report/estimates/) computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Text:
    """Markdown, shown as written."""

    markdown: str


@dataclass(frozen=True)
class Table:
    """A table without its index, or `empty` (in italics) when it has no rows."""

    frame: pd.DataFrame | None
    empty: str = "none"


@dataclass(frozen=True)
class Figures:
    """Figure(s), saved as `<name>_<n>.png` where the notebook keeps figures; a note when there are none."""

    figures: Any
    name: str


Block = Text | Table | Figures


@dataclass
class Section:
    """A section's blocks in reading order (none: the section is left out)."""

    blocks: list[Block] = field(default_factory=list)

    def __add__(self, other: Section) -> Section:
        return Section(self.blocks + other.blocks)


def heading(title: str, intro: str = "", level: int = 2) -> Text:
    return Text(f"{'#' * level} {title}" + (f"\n\n{intro}" if intro else ""))


def bullets(lines: list[str]) -> Text:
    return Text("\n".join(f"- {line}" for line in lines))


def present(content) -> bool:
    """Whether a table or figure(s) has anything to show."""
    if isinstance(content, pd.DataFrame) or content is None:
        return content is not None and not content.empty
    return any(f is not None for f in (content if isinstance(content, list) else [content]))


def optional(title: str, content, intro: str = "", name: str | None = None, level: int = 2,
             empty: str | None = None) -> Section:
    """A heading, its intro and a table or figure(s); left out when there is nothing to show, unless `empty` says
    what the absence means."""
    if not present(content) and empty is None:
        return Section()
    if not present(content):
        return Section([heading(title, intro, level), Text(f"*{empty}*")])
    shown = Table(content) if isinstance(content, pd.DataFrame) else \
        Figures(content, name or title.lower().replace(" ", "_"))
    return Section([heading(title, intro, level), shown])


def number(v, fmt: str) -> str:
    """A table cell's number in `fmt`, or empty where it is missing (None or NaN): never a printed 'nan'."""
    return "" if v is None or v != v else format(v, fmt)


def all_records(d) -> list:
    """Every record of the report, distributed and real-files ones included: a sweep's coverage counts them all."""
    return (list(d.records) + list(getattr(d, "input_records", None) or [])
            + (list(d.scaling.records) if d.scaling else []))


def distributed_ran(d) -> bool:
    """Whether these results hold a distributed run (a section about them has something to show)."""
    return bool(d.scaling and d.scaling.records)


FEATURES_NOTE = "VNNI: int8 dot products in one instruction; AVX512_BF16: bf16 dot products; AMX: tile units"
REDUCED = ("int8", "bf16")


def precision_features(configs: pd.DataFrame, precisions: tuple[str, ...] = REDUCED) -> Text | None:
    """The CPU's int8/bf16 features beside the CPU results at `precisions` (their speed-up depends on them), one
    entry per platform; None when no such result is shown."""
    if configs.empty or not {"precision", "cpu_precision_features", "platform"} <= set(configs):
        return None
    rows = configs[configs["precision"].isin(precisions)]
    if "device" in rows:
        rows = rows[rows["device"] == "cpu"]
    if rows.empty:
        return None
    shown = "/".join(p for p in precisions if (rows["precision"] == p).any())
    per = rows.dropna(subset=["cpu_precision_features"]).groupby("platform")["cpu_precision_features"].first()
    found = "; ".join(f"{platform}: `{features}`" for platform, features in per.items()) or "not recorded"
    return Text(f"CPU int8/bf16 features beside the {shown} results ({FEATURES_NOTE}): {found}")
