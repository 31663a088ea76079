"""How well the verdicts work on this machine's own data: the A/A false-verdict rate and the power to see a shift.

Both resample real process-level results (one value per process, e.g. each process's median images/s):

- **split halves (A/A)**: each config's processes split at random into two halves, judged against each other with
  the same moderated method as the report; any "winner" is false, since both halves measured the same thing;
- **power**: synthetic sweeps drawn from the pooled, centred log residuals of the real processes (so the spread is
  this machine's, not an assumed normal one), with a planted shift on one side, at n processes a side; the share
  of comparisons called "winner" is the power at that n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .judge import Judge
from .moderated import SweepSpreads
from .verdicts import EQUIVALENT, WINNER, Verdict


def judge_pairs(sides_a: Sequence, sides_b: Sequence, judge: Judge, context: Sequence = (),
                interim: bool = False) -> list[tuple[Verdict, Verdict]]:
    """Per config (aligned lists of per-process values): the verdict of B/A, with one prior fitted to every side of
    every config and to the `context` configs (judged by nobody, but part of the sweep), as the report does within a
    sweep; and, from the same fit, the adaptive plan's stopping verdict at the judge's stopping confidence where
    `interim` (bench/stats/verdicts.py: stopping_verdict; else the same verdict)."""
    on = judge.on(SweepSpreads({**{("a", i): v for i, v in enumerate(sides_a)},
                                **{("b", i): v for i, v in enumerate(sides_b)},
                                **{("c", i): v for i, v in enumerate(context)}}))
    out = []
    for i in range(min(len(sides_a), len(sides_b))):
        if interim:
            v, stop, _ = on.compare_to_stop(("b", i), ("a", i))
        else:
            v = stop = on.compare(("b", i), ("a", i))
        out.append((v, stop))
    return out


def judge_all(sides_a: Sequence, sides_b: Sequence, judge: Judge, context: Sequence = ()) -> list[Verdict]:
    """The verdict of B/A for each config, as the report judges within a sweep (`judge_pairs`' first)."""
    return [v for v, _ in judge_pairs(sides_a, sides_b, judge, context)]


@dataclass(frozen=True)
class Rate:
    """How often a verdict was called over judged comparisons."""

    called: int
    judged: int

    @property
    def rate(self) -> float | None:
        return self.called / self.judged if self.judged else None

    def text(self) -> str:
        return "no comparison judged" if not self.judged else f"{self.called} of {self.judged} ({self.rate:.0%})"


def split_half_aa(configs: Mapping[str, Sequence[float]], judge: Judge, trials: int = 20, seed: int = 0) -> Rate:
    """False winners among configs with four or more processes, each split at random into two halves, `trials`
    times (each trial judges every such config once). The prior is fitted, as in the report, to the whole sweep:
    the halves and, whole, the configs with too few processes to split (a sweep of only the configs that the
    adaptive plan gave extra processes - the undecided, often the noisiest - would be judged by a different prior
    than the report's)."""
    rng = np.random.default_rng(seed)
    usable = [np.asarray(v, dtype=float) for v in configs.values() if len(v) >= 4]
    context = [np.asarray(v, dtype=float) for v in configs.values() if 2 <= len(v) < 4]
    called = judged = 0
    for _ in range(trials if usable else 0):
        halves = [rng.permutation(v) for v in usable]
        verdicts = judge_all([h[: len(h) // 2] for h in halves], [h[len(h) // 2:] for h in halves], judge,
                             context)
        called += sum(v.word == WINNER for v in verdicts)
        judged += len(verdicts)
    return Rate(called, judged)


def pooled_residuals(configs: Mapping[str, Sequence[float]]) -> np.ndarray:
    """Every process's log value minus its config's mean, scaled by sqrt(n / (n - 1)) so the pool's variance is
    unbiased for the between-process variance (configs with two or more processes)."""
    parts = []
    for v in configs.values():
        x = np.log(np.asarray(v, dtype=float))
        if x.size >= 2:
            parts.append((x - x.mean()) * np.sqrt(x.size / (x.size - 1)))
    return np.concatenate(parts) if parts else np.array([])


def curve(configs: Mapping[str, Sequence[float]], shift: float, judge: Judge, word: str = WINNER,
          processes: Sequence[int] = (2, 3, 4, 6, 8), sweep_configs: int = 20, trials: int = 25,
          seed: int = 0) -> dict[int, Rate]:
    """For each number of processes a side: how often a comparison with a planted `shift` (0.10 = B 10% faster)
    is called `word` (a winner in the shift's direction, or equivalent) in synthetic sweeps of `sweep_configs`
    comparisons drawn from this machine's pooled residuals. Power: shift > 0, WINNER; equivalence: shift 0,
    EQUIVALENT; false winners: shift 0, WINNER."""
    if word not in (WINNER, EQUIVALENT):
        raise ValueError(f"verdict {word!r} is not one a rate is computed for: {WINNER!r} or {EQUIVALENT!r}")
    rng = np.random.default_rng(seed)
    pool = pooled_residuals(configs)
    out: dict[int, Rate] = {}
    for n in processes:
        called = judged = 0
        for _ in range(trials if pool.size >= 4 else 0):
            a = [np.exp(rng.choice(pool, n)) for _ in range(sweep_configs)]
            b = [np.exp(rng.choice(pool, n) + np.log1p(shift)) for _ in range(sweep_configs)]
            verdicts = judge_all(a, b, judge)
            called += sum(v.word == word and (word != WINNER or shift == 0 or (v.ratio > 1) == (shift > 0))
                          for v in verdicts)
            judged += len(verdicts)
        out[n] = Rate(called, judged)
    return out


@dataclass(frozen=True)
class PlanRate:
    """What the adaptive plan's verdicts do: how often a comparison ended `word`, and the processes it used."""

    rate: Rate
    mean_processes: float  # per side, at the end


def adaptive_plan(configs: Mapping[str, Sequence[float]], shift: float, judge: Judge, min_n: int = 2, max_n: int = 6,
                  sweep_configs: int = 20, trials: int = 10, seed: int = 0, interim: bool = True) -> PlanRate:
    """The verdicts as the adaptive plan reaches them (bench/sweep/plan.py): synthetic sweeps of `sweep_configs`
    comparisons drawn from this machine's pooled residuals with a planted `shift`, each side starting at `min_n`
    processes; round after round every undecided comparison gets one more process on its side with fewer, and is
    judged again with the prior refitted to the whole sweep, until it is decided (a winner only at the judge's
    stopping confidence where `interim`, as the plan stops) or both sides hold `max_n`; the verdict is then the
    report's, at 95%. A
    comparison that stops once decided is looked at several times (optional stopping): with shift 0 the share of
    winners is the plan's own false-winner rate, which a fixed-n A/A does not see; with a shift, its power."""
    rng = np.random.default_rng(seed)
    pool = pooled_residuals(configs)
    called = judged = 0
    used: list[int] = []
    for _ in range(trials if pool.size >= 4 else 0):
        a = [list(np.exp(rng.choice(pool, min_n))) for _ in range(sweep_configs)]
        b = [list(np.exp(rng.choice(pool, min_n) + np.log1p(shift))) for _ in range(sweep_configs)]
        done: dict[int, Verdict] = {}
        while True:
            for i, (v, stop) in enumerate(judge_pairs(a, b, judge, interim=interim)):
                if i not in done and (stop.decided or min(len(a[i]), len(b[i])) >= max_n):
                    done[i] = v
            if len(done) == sweep_configs:
                break
            for i in (i for i in range(sweep_configs) if i not in done):
                side = a if len(a[i]) <= len(b[i]) else b
                side[i].append(float(np.exp(rng.choice(pool) + (np.log1p(shift) if side is b else 0.0))))
        called += sum(v.word == WINNER and (shift == 0 or (v.ratio > 1) == (shift > 0)) for v in done.values())
        judged += sweep_configs
        used += [(len(x) + len(y)) / 2 for x, y in zip(a, b)]
    return PlanRate(Rate(called, judged), float(np.mean(used)) if used else 0.0)
