"""Scoring an ALFWorld benchmark from its results lines: games won by each trial (Figure 3a),
failed trials by class (Figure 3b), and how often the self-evaluation agreed with the engine."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import get_args

from reflexion.alfworld.state import Episode, FailureClass

FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)
"""The failure classes of Figure 3b, in the order its table and plot give them."""


def won_at(episodes: Sequence[Episode]) -> int | None:
    """The first trial the engine scored as won, or ``None``."""
    return next((e["trial"] for e in episodes if e["won"]), None)


def solved_curve(finals: Sequence[dict[str, object]], trials: int) -> list[float]:
    """Figure 3a: the proportion of games won by trial 1..``trials`` (by the engine's verdict;
    a game the loop stopped early on stays as it was)."""
    n = len(finals)
    firsts = [won_at(_episodes(f)) for f in finals]
    return [
        sum(1 for w in firsts if w is not None and w <= t) / n if n else 0.0
        for t in range(1, trials + 1)
    ]


def failure_curves(
    finals: Sequence[dict[str, object]], trials: int
) -> dict[FailureClass, list[float]]:
    """Figure 3b: for each failure class, the proportion of games not yet won after trial t
    whose latest trial so far failed for that reason."""
    n = len(finals)
    curves: dict[FailureClass, list[float]] = {c: [0.0] * trials for c in FAILURE_CLASSES}
    for final in finals:
        episodes = _episodes(final)
        first = won_at(episodes)
        for t in range(1, trials + 1):
            if first is not None and first <= t:
                continue
            ran = [e for e in episodes if e["trial"] <= t]
            if ran and ran[-1]["failure"] is not None:
                curves[ran[-1]["failure"]][t - 1] += 1 / n
    return curves


def failure_counts(finals: Sequence[dict[str, object]]) -> Counter[str]:
    """How many failed trials fell in each class, over all games and trials."""
    return Counter(
        str(e["failure"]) for f in finals for e in _episodes(f) if e["failure"] is not None
    )


def self_evaluation(finals: Sequence[dict[str, object]]) -> tuple[int, int, int]:
    """(agreements, false successes, missed wins) of the self-evaluator against the engine,
    over every trial."""
    agree = false_success = missed = 0
    for final in finals:
        verdicts = {int(str(r["trial"])): bool(r["success"]) for r in _records(final)}
        for episode in _episodes(final):
            said = verdicts.get(episode["trial"])
            if said is None:
                continue
            if said == episode["won"]:
                agree += 1
            elif said:
                false_success += 1
            else:
                missed += 1
    return agree, false_success, missed


def _episodes(final: dict[str, object]) -> list[Episode]:
    value = final.get("episodes")
    return list(value) if isinstance(value, list) else []


def _records(final: dict[str, object]) -> list[dict[str, object]]:
    value = final.get("evaluations")
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []
