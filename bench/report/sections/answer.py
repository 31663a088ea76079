"""Page 1's answer: per model, mode and batch (and per model and mode at each framework's best batch) the frameworks
compared, one of the four verdicts, the speed-up with its interval and what would decide an undecided row."""

from __future__ import annotations

from ...stats.verdicts import short_definition
from ..answer import answer_notes, answer_table, decided_line
from .base import Section, Table, Text, heading, precision_features

INTRO = ("Fastest against runner-up per model, mode and batch (*best*: each framework at its own best batch), 95% "
         "intervals over fresh processes. ")


def render(d) -> Section:
    answer, notes = answer_table(d.summary, d.best, d.margin, d.max_repeats)
    return Section([heading("Answer", INTRO + short_definition(d.margin)),
                    Text(decided_line(d.summary, d.best, d.margin)),
                    Table(answer, d.only_distributed() or "no successful runs yet"),
                    Text(answer_notes(notes)), *filter(None, [precision_features(d.configs)])])
