"""Programming trial records as the unit-test evaluator writes them, for the harness tests:
each test's outcome as data, and the feedback rendered from it."""

from __future__ import annotations

from typing import Any

from reflexion.nodes.programming.feedback import render_outcomes
from reflexion.programming.sandbox import counted


def code_record(
    trial: int, answer: str | None, outcomes: dict[str, str | None], **extra: Any
) -> dict[str, Any]:
    """A compiled attempt's record: ``outcomes`` maps each test, in order, to ``None`` (passed)
    or its actual output or error; every test counts."""
    kept = [counted(t, d is None, d or "") for t, d in outcomes.items()]
    return {
        "trial": trial,
        "answer": answer,
        "compiled": True,
        "outcomes": kept,
        "feedback": render_outcomes(kept, "py"),
        **extra,
    }
