"""Page 1's answer: per model, mode and batch the fastest framework, its speed-up with the interval, and the
verdict, with one footnote per distinct reason where no winner is stated."""

from __future__ import annotations

from ..answer import answer_notes, answer_table
from .base import Section, Table, Text, heading

INTRO = ("Per model, mode and batch: the fastest framework and its speed-up over the runner-up with a 95% interval "
         "over fresh processes, where a winner is stated (both sides sound and the interval excludes 1x); "
         "elsewhere both are blank and the verdict's key names the reason below the table.")


def render(d) -> Section:
    answer, notes = answer_table(d.summary)
    return Section([heading("Answer", INTRO), Table(answer, "no successful runs yet"), Text(answer_notes(notes))])
