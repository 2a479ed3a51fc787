"""Cross-checking an attempt against independent implementations (after CodeT's dual execution
agreement and AlphaCode's clustering by behaviour).

A small model's code often passes the prompt's one or two examples and is still wrong: nothing
in the trusted tests tells it apart from a right one. Other inputs could, but nobody trusted
says what they should give (a small model's expected values are too often wrong). So only
behaviour is compared: implementations that all pass the trusted tests are run on *probe* tests
(the examples with their inputs varied, :mod:`reflexion.programming.probes`, or tests the model
writes), and two behave alike when every probe gives each the same outcome (both pass, or both
fail with the same output or error), whatever the probe expected.

An attempt is then judged by the company it keeps among independently drawn implementations
(*witnesses*): *agreed* when at least one witness behaves as it does and no larger group of
witnesses behaves otherwise, *outvoted* when two or more witnesses agree with one another and
outnumber those that agree with it, *open* otherwise (more witnesses could decide).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from reflexion.programming.sandbox import SuiteResult
from reflexion.prompts import template

Verdict = Literal["agreed", "outvoted", "open"]

Fingerprint = tuple[str, ...]
"""How an implementation fares on the probe tests, in order: ``"pass"``, or the failure's
detail (the actual value, the error)."""


def fingerprint(result: SuiteResult, probes: Sequence[str]) -> Fingerprint | None:
    """The outcomes of ``probes`` in ``result`` (which may hold other tests too); ``None`` when
    the code did not compile or there are no probes."""
    if result.compile_error is not None or not probes:
        return None
    outcomes = {o.test: ("pass" if o.passed else o.detail) for o in result.outcomes}
    return tuple(outcomes.get(p, "not run") for p in probes)


def verdict(mine: Fingerprint, witnesses: Sequence[Fingerprint]) -> Verdict:
    """Whether the witnesses (independent implementations that pass the trusted tests) back an
    attempt that behaves as ``mine``: the attempt's group counts itself."""
    support = 1 + sum(w == mine for w in witnesses)
    rivals = Counter(w for w in witnesses if w != mine)
    top = max(rivals.values(), default=0)
    if support >= 2 and support >= top:
        return "agreed"
    if top >= 2 and top > support:
        return "outvoted"
    return "open"


def majority(mine: Fingerprint, witnesses: Sequence[Fingerprint]) -> Fingerprint | None:
    """The largest group of witnesses that behaves otherwise than ``mine`` (``None`` when every
    witness behaves as it does)."""
    rivals = Counter(w for w in witnesses if w != mine)
    return rivals.most_common(1)[0][0] if rivals else None


def disagreement(
    mine: Fingerprint, theirs: Fingerprint, probes: Sequence[str], count: int, drawn: int
) -> str:
    """Feedback for an outvoted attempt: each probe test on which the majority behaves
    otherwise, with both outcomes (``count`` of the ``drawn`` witnesses are the majority)."""
    lines = [
        f"{probe}  # yours: {_outcome(a)}; theirs: {_outcome(b)}"
        for probe, a, b in zip(probes, mine, theirs, strict=True)
        if a != b
    ]
    return template("programming/feedback_outvoted").format(
        count=str(count), drawn=str(drawn), differences="\n".join(lines)
    )


def _outcome(detail: str) -> str:
    return "passes" if detail == "pass" else f"fails ({detail})"


__all__ = ["Fingerprint", "Verdict", "disagreement", "fingerprint", "majority", "verdict"]
