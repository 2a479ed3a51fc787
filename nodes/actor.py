"""Actors: the node that makes one attempt (one trial) at the task.

The chain-of-thought actor answers in one ``Thought`` / ``Finish[answer]`` step, with or without
the task's context (the paper's CoT and CoT (GT) agents). The instructions and examples form a
prefix that stays the same across trials (llama.cpp reuses its KV cache for it); the memory
goes just before the task, as in the paper, or after it (``Context.memory_first``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.lessons import QA_FAMILY, Family, recall_update
from reflexion.core.models import EmbeddedChatModel
from reflexion.core.parsing import FinishParse, parse_finish
from reflexion.core.state import State, TrialRecord
from reflexion.hotpotqa.metrics import normalize_answer
from reflexion.nodes.common import actor_llm, trajectory_text
from reflexion.prompts import few_shot, render

STOP = ["\nQuestion:", "\nContext:", "\n---", "\nObservation"]

COT_GRAMMAR = r"""
root ::= "Thought: " thought "\nAction: Finish[" answer "]"
thought ::= [^\n]{1,800}
answer ::= [^\]\n]{1,120}
"""
"""Holds an embedded model to the ``Thought`` / ``Finish[answer]`` format."""

FOLLOW_UP = "Now give your final answer as one line: Action: Finish[answer]"


class HasMemory(Protocol):
    """The state an actor's memory comes from (the Reflexion state or a subgraph's)."""

    @property
    def previous_trajectory(self) -> list[str]: ...

    @property
    def reflections(self) -> list[str]: ...

    @property
    def lessons(self) -> list[str]: ...

    @property
    def evaluations(self) -> list[TrialRecord]: ...


def lessons_block(lessons: list[str]) -> str:
    """The lessons recalled from other threads (``Context.lessons``), or empty."""
    if not lessons:
        return ""
    return render("memory_lessons", lessons="\n".join(f"- {lesson}" for lesson in lessons))


def with_lessons(system: str, state: HasMemory) -> SystemMessage:
    """The system message with the lessons recalled from other threads appended (fixed for
    the thread, so part of a stable prompt prefix). They go here, not next to the question:
    measured on HotPotQA with the 0.5B embedded model at T = 0, lessons placed after the
    question made it answer with names from the lessons (1 of 8 right against 5 of 8 without
    lessons), while in the system message it kept to the question (4 of 8)."""
    if not state.lessons:
        return SystemMessage(system)
    return SystemMessage(f"{system}\n\n{lessons_block(state.lessons)}")


def memory_block(
    state: HasMemory, ctx: Context, *, lessons: bool = True, rejected: bool = False
) -> str:
    """What this trial carries in: the lessons recalled from other threads (unless
    ``lessons`` is False: the built-in actors put them in the system message, see
    :func:`with_lessons`), then what the chosen strategy keeps (empty on the first trial),
    and, for an actor whose answers are checked against a reference (``rejected``), the
    answers judged incorrect so far when ``Context.show_rejected`` asks for them."""
    parts = [lessons_block(state.lessons)] if lessons and state.lessons else []
    if ctx.uses_last_attempt and state.previous_trajectory:
        parts.append(
            render("memory_last_attempt", trajectory=trajectory_text(state.previous_trajectory))
        )
    if ctx.uses_reflections and state.reflections and ctx.memory_size > 0:
        window = state.reflections[-ctx.memory_size :]
        parts.append(render("memory_reflections", reflections="\n".join(f"- {r}" for r in window)))
    if rejected and ctx.show_rejected and (ctx.uses_reflections or ctx.uses_last_attempt):
        wrong = rejected_answers(state.evaluations)
        if wrong:
            parts.append(render("memory_rejected", answers="\n".join(f"- {a}" for a in wrong)))
    return "\n\n".join(parts)


def with_memory(task: str, memory: str, ctx: Context) -> str:
    """The task's user message with the memory before it (``Context.memory_first``, the
    paper's layout) or after it."""
    if not memory:
        return task
    return f"{memory}\n\n{task}" if ctx.memory_first else f"{task}\n\n{memory}"


def rejected_answers(evaluations: list[TrialRecord]) -> list[str]:
    """The distinct answers of failed trials, in order (a trial without an answer adds none)."""
    wrong = [str(e["answer"]).strip() for e in evaluations if not e["success"] and e["answer"]]
    return list(dict.fromkeys(a for a in wrong if a))


def _example_turns(example: str, *, with_context: bool) -> list[BaseMessage]:
    """A few-shot example as a user turn (context, question) and an assistant turn (reply)."""
    head, _sep, reply = example.partition("\nThought:")
    lines = [ln for ln in head.splitlines() if with_context or not ln.startswith("Context:")]
    return [HumanMessage("\n".join(lines).strip()), AIMessage(("Thought:" + reply).strip())]


def cot_messages(state: State, ctx: Context, *, with_context: bool) -> list[BaseMessage]:
    """The chain-of-thought prompt: instructions, few-shot turns, then the task with its
    memory (:func:`with_memory`).

    The examples are chat turns (small instruct models copy a format from turns far more
    reliably than from examples pasted into one message).
    """
    rule = (
        "\nUse the context given with the question; the answer is usually a span of it."
        if with_context
        else ""
    )
    messages: list[BaseMessage] = [with_lessons(render("cot_system", context_rule=rule), state)]
    for example in few_shot("cot_examples"):
        messages.extend(_example_turns(example, with_context=with_context))
    context_block = f"Context: {state.context.strip()}" if with_context and state.context else ""
    user = render("cot_task", context_block=context_block, task=state.task.strip())
    memory = memory_block(state, ctx, lessons=False, rejected=True)
    return [*messages, HumanMessage(with_memory(user, memory, ctx))]


def _attempt(
    llm: BaseChatModel, messages: list[BaseMessage], options: dict[str, Any]
) -> tuple[FinishParse, str]:
    """One chain-of-thought reply, parsed, with its text; a reply without ``Finish[answer]``
    gets one follow-up turn asking for the action alone (the paper's CoT prompts the thought
    and the action separately), whose answer counts while the thought stays."""
    reply = llm.invoke(messages, stop=STOP, **options)
    parsed = parse_finish(reply.text)
    if parsed.answer is None and reply.text.strip():
        parsed = _ask_again(llm, messages, reply.text, parsed, FOLLOW_UP)
    return parsed, reply.text


def _ask_again(
    llm: BaseChatModel, messages: list[BaseMessage], text: str, parsed: FinishParse, ask: str
) -> FinishParse:
    """One more turn after the reply ``text``, asking ``ask``; its answer replaces the
    reply's when it gives one, and the reply's thought stays."""
    again = parse_finish(llm.invoke([*messages, AIMessage(text), HumanMessage(ask)]).text)
    if again.answer is None:
        return parsed
    return FinishParse(thought=parsed.thought, answer=again.answer)


def rejected_keys(state: HasMemory, ctx: Context) -> set[str]:
    """The normalised answers a retry may not repeat (``Context.redraw_rejected``,
    ``Context.correct_rejected``): those of earlier trials judged incorrect, when the strategy
    keeps memory; otherwise none."""
    if not (ctx.redraw_rejected or ctx.correct_rejected) or not (
        ctx.uses_reflections or ctx.uses_last_attempt
    ):
        return set()
    return {normalize_answer(a) for a in rejected_answers(state.evaluations)}


def make_cot_actor(
    model: BaseChatModel | None = None, *, with_context: bool = True, family: Family = QA_FAMILY
) -> Callable[[State, Runtime[Context]], dict[str, Any]]:
    """A chain-of-thought actor node; ``model`` overrides ``Context.actor_model``; ``family``
    is the task family whose lessons it recalls on the first trial (``Context.lessons``)."""

    def actor(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = get_context(runtime)
        if not state.task.strip():
            raise ReflexionError("the task is empty: give the question to answer")
        recalled = recall_update(state, state.task, runtime, family)
        if recalled:
            state = replace(state, **recalled)
        llm = actor_llm(model, ctx)
        messages = cot_messages(state, ctx, with_context=with_context)
        options: dict[str, Any] = (
            {"gbnf": COT_GRAMMAR} if isinstance(llm, EmbeddedChatModel) else {}
        )
        parsed, text = _attempt(llm, messages, options)
        rejected = rejected_keys(state, ctx)
        if parsed.answer is not None and normalize_answer(parsed.answer) in rejected:
            hot = actor_llm(model, ctx, hot=True)
            for _ in range(ctx.redraw_rejected):
                again, again_text = _attempt(hot, messages, options)
                if again.answer is not None and normalize_answer(again.answer) not in rejected:
                    parsed, text = again, again_text
                    break
        if ctx.correct_rejected and parsed.answer and normalize_answer(parsed.answer) in rejected:
            # one turn saying so and asking for another (Context.correct_rejected)
            ask = render("cot_rejected", answer=parsed.answer)
            parsed = _ask_again(llm, messages, text, parsed, ask)
        action = (
            f"Action: Finish[{parsed.answer}]"
            if parsed.answer is not None
            else f"Action: (unparseable: {parsed.error}) {text.strip()[:300]}"
        )
        return {
            **recalled,
            "trial": state.trial + 1,
            "trajectory": [f"Thought: {parsed.thought}", action],
            "answer": parsed.answer,
            "stop_reason": None if parsed.answer is not None else parsed.error,
        }

    actor.__name__ = "cot_gt_actor" if with_context else "cot_actor"
    return actor
