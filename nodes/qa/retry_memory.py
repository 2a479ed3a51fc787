"""What the question-answering actors (CoT and ReAct) do with their memory beyond the common
block of :mod:`reflexion.nodes.memory`: where it goes around the question
(``QAContext.memory_first``) and which answers a retry may not repeat (those judged
incorrect so far)."""

from __future__ import annotations

from reflexion.core.answers import normalize_answer
from reflexion.core.context import Context
from reflexion.nodes.memory import HasMemory, rejected_answers
from reflexion.qa.context import AnswerMemory


def with_memory(task: str, memory: str, ctx: AnswerMemory) -> str:
    """The task's user message with the memory before it (``QAContext.memory_first``, the
    paper's layout) or after it."""
    if not memory:
        return task
    return f"{memory}\n\n{task}" if ctx.memory_first else f"{task}\n\n{memory}"


def judged_wrong(state: HasMemory, ctx: Context, *, resample: bool = False) -> set[str]:
    """The normalised answers judged incorrect so far, when the strategy keeps memory or the
    retry resamples away from them (``resample``; otherwise none: the trial cannot know
    them)."""
    keeps = ctx.uses_reflections or ctx.uses_last_attempt or resample
    if not keeps:
        return set()
    return {normalize_answer(a) for a in rejected_answers(state.evaluations)}


def rejected_keys(state: HasMemory, ctx: AnswerMemory, *, correcting: bool = False) -> set[str]:
    """The normalised answers a retry may not repeat (``redraw_rejected``, and ``correcting``:
    the chain-of-thought actor's ``correct_rejected``): those judged incorrect so far
    (:func:`judged_wrong`) when either is on; otherwise none."""
    if not (ctx.redraw_rejected or correcting):
        return set()
    return judged_wrong(state, ctx)
