"""Paired comparisons: two outcomes per task (e.g. a thread's first attempt and its final
answer), the tasks each side fixed, and the exact McNemar test on them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import comb


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


__all__ = ["Paired", "mcnemar_exact", "paired"]
