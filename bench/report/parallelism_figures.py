"""The parallelism section's figure: each pipeline schedule's per-stage timeline (the staircase), measured beside
the one the schedule would give with the measured per-micro-batch stage times and nothing else."""

from __future__ import annotations

import matplotlib.pyplot as plt

from .style import PHASE_COLOURS, mark_flags

KIND_COLOURS = {"forward": PHASE_COLOURS["forward"], "backward": PHASE_COLOURS["backward"], "loss": "#d2a35c",
                "wait": "#bbbbbb", "update": PHASE_COLOURS["update"],
                "backward_weight": "#dcb47a"}  # a zero-bubble schedule's weight half of a backward
NOTE = ("measured: clock reads around each action of the step of median duration; expected: the schedule's order\n"
        "with each stage's median forward and backward per micro-batch, no transfer, no waiting")


# A micro-batch number is written on a bar only when the bar is at least this share of the step: on a narrower one
# the digits of neighbouring bars run into each other (the colours and the order still tell them apart).
LABEL_MIN_SHARE = 0.04


def _draw(ax, stages: list, title: str) -> None:
    span = max((end for actions in stages for *_, end in actions), default=0.0)
    for s, actions in enumerate(stages):
        for kind, mb, start, end in actions:
            ax.barh(s, (end - start) * 1e3, left=start * 1e3, height=0.6, color=KIND_COLOURS.get(kind, "#bbbbbb"),
                    edgecolor="white", linewidth=0.3)
            if kind in ("forward", "backward") and mb is not None and (end - start) >= LABEL_MIN_SHARE * span > 0:
                ax.text((start + end) / 2 * 1e3, s, str(mb), ha="center", va="center", fontsize=6)
    ax.set_yticks(range(len(stages)), [f"stage {s}" for s in range(len(stages))])
    ax.set_xlim(left=0)
    ax.set_xlabel("ms from the step's start")
    ax.set_title(title, fontsize=9)


def timelines(items: list[dict]) -> list:
    """One figure per schedule: measured (left) and expected (right), micro-batch numbers on the bars wide enough to
    hold them."""
    figs = []
    for item in items:
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 1.4 + 0.55 * len(item["measured"])), sharey=True)
        _draw(left, item["measured"], f"{item['label']}: measured")
        _draw(right, item["expected"], f"{item['label']}: expected")
        left.invert_yaxis()  # stage 0 on top (the axes share y: once)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in KIND_COLOURS.values()]
        fig.legend(handles, list(KIND_COLOURS), loc="lower center", ncol=len(KIND_COLOURS), fontsize=7,
                   bbox_to_anchor=(0.5, 0.09), frameon=False)
        fig.text(0.5, 0.0, NOTE, ha="center", va="bottom", fontsize=6, color="#444444", wrap=True)
        fig.tight_layout(rect=(0, 0.2, 1, 1))
        figs.append(mark_flags(fig, [item.get("flagged", False)]))  # a flagged run's timeline says so
    return figs
