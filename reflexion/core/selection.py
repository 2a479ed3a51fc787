"""Which attempt a thread hands back: the last one (the paper) or the best by the evaluator's
evidence (``Context.select_answer="best"``).

"Best" ranks the trial records a thread kept: a successful trial first, then the higher score,
and among equals the *earliest*. So a thread that never succeeds returns its first attempt
unless a later one scored strictly higher on the evaluator's evidence, and Reflexion cannot hand
back something that is worse, on that evidence, than what the actor gave without it. A record
that ``ties`` with an earlier trial (programming: the tests that count now cannot tell the two
apart) hands the choice to that earlier trial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

AnswerChoice = Literal["last", "best"]


def rank(record: Mapping[str, Any]) -> tuple[bool, float]:
    """A record's standing: a success above a failure, then the higher score."""
    return bool(record.get("success")), float(record.get("score") or 0.0)


def chosen_index(records: Sequence[Mapping[str, Any]], choice: AnswerChoice) -> int | None:
    """The index of the record whose answer the thread returns: under ``last`` the final
    record's (as the graph returns it, ``None`` when that trial gave no answer); under
    ``best`` the best among records that have an answer (``None`` when none has)."""
    if choice == "last":
        final = len(records) - 1
        return final if records and records[final].get("answer") is not None else None
    with_answer = [i for i, r in enumerate(records) if r.get("answer") is not None]
    if not with_answer:
        return None
    best = with_answer[0]
    for i in with_answer[1:]:
        if rank(records[i]) > rank(records[best]):
            best = i
    tie = records[best].get("ties")  # the evidence cannot tell it from an earlier attempt
    earlier = [i for i in with_answer if records[i].get("trial") == tie]
    return earlier[0] if tie is not None and earlier else best


def succeeded(records: Sequence[Mapping[str, Any]], index: int) -> bool:
    """Whether the attempt at ``index`` counts as a success: its own record says so, or a
    later successful record ties with it (the tests that count then pass it as well)."""
    trial = records[index].get("trial")
    return bool(records[index].get("success")) or any(
        r.get("success") and r.get("ties") == trial for r in records[index + 1 :]
    )


__all__ = ["AnswerChoice", "chosen_index", "rank", "succeeded"]
