"""The chain-of-thought actor: the node that makes one attempt (one trial) at a question.

It answers in one ``Thought`` / ``Finish[answer]`` step, with or without
the task's context (the paper's CoT and CoT (GT) agents). The instructions and examples form a
prefix that stays the same across trials (llama.cpp reuses its KV cache for it); the memory
(:mod:`reflexion.nodes.memory`) goes just before the task, as in the paper, or after it
(``Context.memory_first``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.lessons import QA_FAMILY, Family, recall_update
from reflexion.core.models import EmbeddedChatModel
from reflexion.core.parsing import FinishParse, parse_finish
from reflexion.core.state import State
from reflexion.hotpotqa.metrics import normalize_answer
from reflexion.nodes.common import actor_llm
from reflexion.nodes.memory import memory_block, rejected_keys, with_lessons, with_memory
from reflexion.prompts import few_shot, render

STOP = ["\nQuestion:", "\nContext:", "\n---", "\nObservation"]

COT_GRAMMAR = r"""
root ::= "Thought: " thought "\nAction: Finish[" answer "]"
thought ::= [^\n]{1,800}
answer ::= [^\]\n]{1,120}
"""
"""Holds an embedded model to the ``Thought`` / ``Finish[answer]`` format."""

FOLLOW_UP = (
    "Now give your final answer as one line, the answer itself between the brackets: "
    "Action: Finish[answer]"
)


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
