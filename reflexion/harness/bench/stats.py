"""Paired comparisons: two outcomes per task (e.g. a thread's first attempt and its final
answer), the tasks each side fixed, and the exact McNemar test on them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from math import comb

_WORD = re.compile(r"[a-z0-9]+")


def mcnemar_exact(fixed: int, broken: int) -> float:
    """Two-sided exact McNemar p-value: the probability, under no effect, of a split of the
    ``fixed + broken`` discordant tasks at least as uneven as the one seen (binomial, p = 1/2)."""
    n = fixed + broken
    if n == 0:
        return 1.0
    k = min(fixed, broken)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


@dataclass(frozen=True)
class Paired:
    """Outcomes of the same tasks under a baseline and a method."""

    tasks: int
    baseline: int
    """Tasks the baseline solved."""
    method: int
    """Tasks the method solved."""
    fixed: int
    """Solved by the method, not by the baseline."""
    broken: int
    """Solved by the baseline, not by the method."""

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.fixed, self.broken)


def paired(pairs: Iterable[tuple[bool, bool]]) -> Paired:
    """Count (baseline solved, method solved) pairs."""
    rows = [(bool(a), bool(b)) for a, b in pairs]
    return Paired(
        tasks=len(rows),
        baseline=sum(a for a, _ in rows),
        method=sum(b for _, b in rows),
        fixed=sum(b and not a for a, b in rows),
        broken=sum(a and not b for a, b in rows),
    )


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def copy_rate(texts: Iterable[str], source: str, n: int = 5) -> float:
    """The share of ``texts`` (e.g. reflections) that reuse at least one run of ``n`` words
    of ``source`` (e.g. the reflection prompt's worked examples): how often a model copies
    its examples instead of writing about its own attempt. 0.0 for no texts."""
    seen = _ngrams(source, n)
    rows = list(texts)
    if not rows:
        return 0.0
    return sum(bool(_ngrams(t, n) & seen) for t in rows) / len(rows)


__all__ = ["Paired", "copy_rate", "mcnemar_exact", "paired"]
