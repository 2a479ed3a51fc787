"""What the question-answering actors (CoT and ReAct) do with their memory beyond the common
block of :mod:`reflexion.nodes.memory`: where it goes (before the question, as in the paper)
and which answers a retry may not repeat (those judged incorrect so far: the repeat guard,
``Context.repeat_guard``)."""

from __future__ import annotations

from reflexion.core.answers import normalize_answer
from reflexion.core.context import Context
from reflexion.nodes.memory import HasMemory, rejected_answers


def with_memory(task: str, memory: str) -> str:
    """The task's user message with the memory before it (the paper's layout: the question is
    read last)."""
    return f"{memory}\n\n{task}" if memory else task


def judged_wrong(state: HasMemory, ctx: Context, *, resample: bool = False) -> set[str]:
    """The normalised answers judged incorrect so far, when the strategy keeps memory or the
    retry resamples away from them (``resample``; otherwise none: the trial cannot know
    them)."""
    keeps = ctx.uses_reflections or ctx.uses_last_attempt or resample
    if not keeps:
        return set()
    return {normalize_answer(a) for a in rejected_answers(state.evaluations)}


def rejected_keys(state: HasMemory, ctx: Context) -> set[str]:
    """The normalised answers a retry may not repeat under the repeat guard
    (``Context.repeat_guard``): those judged incorrect so far (:func:`judged_wrong`) when the
    guard is on; otherwise none."""
    if not ctx.repeat_guard:
        return set()
    return judged_wrong(state, ctx)
