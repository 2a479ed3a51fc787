"""What an actor carries into a trial besides the task: the memory its strategy keeps (the last
attempt, the last Ω reflections, optionally the answers judged incorrect). Every built-in actor
(CoT, ReAct, code, ALFWorld) and custom graphs read their memory through here; where the
question-answering actors place it, and which answers their retries may not repeat, is
:mod:`reflexion.nodes.qa.retry_memory`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reflexion.core.context import Context
from reflexion.core.state import TrialRecord
from reflexion.core.window import reflection_window
from reflexion.nodes.common import trajectory_text
from reflexion.prompts import render


class HasMemory(Protocol):
    """The state an actor's memory comes from (the Reflexion state or a subgraph's)."""

    @property
    def previous_trajectory(self) -> list[str]: ...

    @property
    def reflections(self) -> list[str]: ...

    @property
    def evaluations(self) -> Sequence[TrialRecord]: ...


def memory_block(state: HasMemory, ctx: Context) -> str:
    """What this trial carries in: what the chosen strategy keeps (empty on the first
    trial)."""
    parts: list[str] = []
    if ctx.uses_last_attempt and state.previous_trajectory:
        parts.append(
            render(
                "common/memory_last_attempt", trajectory=trajectory_text(state.previous_trajectory)
            )
        )
    if window := reflection_window(state.reflections, ctx):
        parts.append(
            render("common/memory_reflections", reflections="\n".join(f"- {r}" for r in window))
        )
    return "\n\n".join(parts)


def rejected_answers(evaluations: Sequence[TrialRecord]) -> list[str]:
    """The distinct answers of failed trials, in order (a trial without an answer adds none)."""
    wrong = [str(e["answer"]).strip() for e in evaluations if not e["success"] and e["answer"]]
    return list(dict.fromkeys(a for a in wrong if a))
