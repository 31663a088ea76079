"""Page 2: what page 1's table needs more words for: per compared row the frameworks compared and what would decide
an undecided one, the footnotes for rows that could not be judged, and where the numbers come from."""

from __future__ import annotations

from ..answer import answer_notes, answer_table, tiers_text
from ..estimates import tiers
from .base import Section, Table, Text, heading, precision_features
from .header import provenance

INTRO = ("Each page-1 row with more to say: what it compared, its speed-up (a pooled verdict's with its own processes' "
         "interval too) and what would likely decide it (more processes a side, or more sweeps).")
COLUMNS = ["platform", "precision", "model", "mode", "batch", "compared", "verdict", "speed-up [95% CI]", "to decide"]


def render(d) -> Section:
    table, notes = answer_table(d.summary, d.best, d.judge, d.max_repeats)
    blocks = [heading("Reading the answer", INTRO)]
    if not table.empty:  # the rows with more to say: undecided ones and those with a footnote
        table = table[(table["to decide"] != "") | table["verdict"].str.contains("[", regex=False)]
    if not table.empty:
        blocks += [Table(table[[c for c in COLUMNS if c in table]])]
    if notes:
        blocks += [Text(answer_notes(notes))]
    if line := tiers_text(tiers(d.configs, d.judge)):
        blocks += [Text(line)]
    blocks += [*filter(None, [precision_features(d.configs)]), Text(provenance(d))]
    return Section(blocks)
