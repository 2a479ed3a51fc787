"""What an actor carries into a trial besides the task: the lessons recalled from other
threads (in the system message) and the memory its strategy keeps (the last attempt, the last
Ω reflections, optionally the answers judged incorrect). Every built-in actor (CoT, ReAct,
code, ALFWorld) and custom graphs read their memory through here; where the question-answering
actors place it, and which answers their retries may not repeat, is
:mod:`reflexion.nodes.qa.retry_memory`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from langchain_core.messages import SystemMessage

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
    def lessons(self) -> list[str]: ...

    @property
    def evaluations(self) -> Sequence[TrialRecord]: ...


def lessons_block(lessons: list[str]) -> str:
    """The lessons recalled from other threads (``Context.lessons``), or empty."""
    if not lessons:
        return ""
    return render("common/memory_lessons", lessons="\n".join(f"- {lesson}" for lesson in lessons))


def with_lessons(system: str, state: HasMemory) -> SystemMessage:
    """The system message with the lessons recalled from other threads appended (fixed for
    the thread, so part of a stable prompt prefix). They go here, not next to the question:
    measured on HotPotQA with the 0.5B embedded model at T = 0, lessons placed after the
    question made it answer with names from the lessons (1 of 8 right against 5 of 8 without
    lessons), while in the system message it kept to the question (4 of 8)."""
    if not state.lessons:
        return SystemMessage(system)
    return SystemMessage(f"{system}\n\n{lessons_block(state.lessons)}")


def memory_block(state: HasMemory, ctx: Context, *, lessons: bool = True) -> str:
    """What this trial carries in: the lessons recalled from other threads (unless
    ``lessons`` is False: the built-in actors put them in the system message, see
    :func:`with_lessons`), then what the chosen strategy keeps (empty on the first trial)."""
    parts = [lessons_block(state.lessons)] if lessons and state.lessons else []
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
