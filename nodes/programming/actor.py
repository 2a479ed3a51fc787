"""The code actor: writes a complete implementation each trial.

From the second trial on, an informed retry (``Context.retry``) sees the task with the failed
tests and, under strategy ``reflexion``, the last Ω reflections; under a strategy that carries
the last attempt (``last_attempt``, ``last_attempt_and_reflexion``: the paper's) it sees its
previous implementation and the test results instead of starting over. A
blind retry (``resample``, and every retry after the first under ``informed_once``) sees the
task alone. A retry that repeats earlier code is drawn again (``Context.repeat_guard``).
One other node makes attempts: ``rustc``'s own fixes
(:mod:`reflexion.nodes.programming.compiler_fix`).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.core.tracing import Family
from reflexion.core.window import reflection_window
from reflexion.nodes.common import actor_llm, named_seed
from reflexion.nodes.programming.common import (
    STOPS,
    fenced,
    problem_of,
    prompt_names,
)
from reflexion.nodes.programming.feedback import retry_reads_feedback, shown_feedback
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem
from reflexion.programming.replies import CodeParse, extract_code
from reflexion.programming.state import CodeState, graph_family
from reflexion.prompts import render


def retries_fresh(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the next attempt is a fresh sample rather than a repair of the last one: a
    retry repairs only when it is informed under a strategy that carries the last attempt
    (``CodeContext.repairs``, the paper's); a blind retry is fresh, from the first trial's
    prompt alone."""
    if state.trial == 0 or not state.evaluations:
        return False
    return not ctx.repairs or ctx.retry == "resample"


def first_messages(state: CodeState) -> list[BaseMessage]:
    """The first trial's prompt: instructions and the problem (a prefix that stays the same
    across trials)."""
    problem = problem_of(state)
    names = prompt_names(problem.language)
    task = render("programming/task", prompt=problem.prompt.strip(), **names)
    return [SystemMessage(render("programming/system", **names)), HumanMessage(task)]


def code_messages(state: CodeState, ctx: CodeContext) -> list[BaseMessage]:
    """The actor prompt: instructions and the problem (a prefix that stays the same across
    trials), then, after a failed trial, the previous implementation as the assistant's turn
    and the test results, the reflections (strategy ``reflexion``) and the request to fix it;
    for a fresh retry (:func:`retries_fresh`) the test results and reflections follow the
    problem in the same turn, without the previous implementation. Under
    ``Context.retry="resample"`` every trial's prompt is the first trial's: the retry learns
    nothing from the failure, it is only another sample (under ``"informed_once"``, every retry
    after the first the model wrote: :func:`retry_reads_feedback`)."""
    messages = first_messages(state)
    if state.trial == 0 or not state.evaluations or not retry_reads_feedback(state, ctx):
        return messages
    problem = problem_of(state)
    names = prompt_names(problem.language)
    reflection_block = reflection_block_of(reflection_window(state.reflections, ctx))
    fresh = retries_fresh(state, ctx)
    retry = render(
        "programming/fresh" if fresh else "programming/retry",
        feedback=shown_feedback(state.evaluations[-1], state, ctx),
        reflection_block=reflection_block,
        entry_point=problem.entry_point,
        **names,
        tests_note="",
        passes=render("programming/passes"),
    )
    if fresh:
        return [messages[0], HumanMessage(f"{messages[1].content}\n\n{retry}")]
    previous = (
        fenced(state.answer, problem.language)
        if state.answer
        else "\n".join(state.trajectory) or "(no reply)"
    )
    return [*messages, AIMessage(previous), HumanMessage(retry)]


def reflection_block_of(reflections: list[str]) -> str:
    """The reflections a retry reads, as its prompt's block (empty when there are none)."""
    if not reflections:
        return ""
    lines = "\n".join(f"- {r}" for r in reflections)
    return f"\n{render('programming/reflection_heading')}\n{lines}\n"


def code_key(code: str, language: str) -> str:
    """What makes two implementations the same attempt: the Python syntax tree when the code
    parses (comments, blank lines and formatting aside), else the code without whitespace."""
    if language == "py":
        try:
            return ast.dump(ast.parse(code))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            pass
    return re.sub(r"\s+", "", code)


def tried_keys(state: CodeState, problem: CodeProblem) -> set[str]:
    """The :func:`code_key` of every earlier attempt's code."""
    return {code_key(e["answer"], problem.language) for e in state.evaluations if e["answer"]}


def draw_attempt(
    state: CodeState,
    ctx: CodeContext,
    model: BaseChatModel | None,
    messages: list[BaseMessage],
    fresh: bool,
) -> Steps[dict[str, Any]]:
    """One attempt's update from ``messages``: a reply seeded by what it draws on a retry
    (``Context.seeds``), at ``RESAMPLE_TEMPERATURE`` when ``fresh``; drawn again
    while its code repeats an earlier attempt's (``Context.repeat_guard``), the first
    reply kept when no redraw gives code."""
    problem = problem_of(state)
    tried = tried_keys(state, problem)
    llm = yield from block(actor_llm, model, ctx, hot=fresh)
    draws = 0

    def draw(chat: BaseChatModel) -> Steps[tuple[BaseMessage, CodeParse]]:
        nonlocal draws
        draws += 1
        named = state.trial > 0 and ctx.seeds == "retry"
        seed = named_seed(chat, problem.task_id, state.trial + 1, draws) if named else {}
        # No grammar: llama.cpp's grammar sampling halves the token rate on this
        # vocabulary; the parser copes with whatever format comes back.
        reply = yield from ask(chat, messages, stop=STOPS[problem.language], **seed)
        return reply, extract_code(reply.text, problem)

    reply, parsed = first = yield from draw(llm)
    hot = llm if fresh else None  # built only if a redraw runs
    for _ in range(ctx.repeat_guard if tried else 0):
        if parsed.code is not None and code_key(parsed.code, problem.language) not in tried:
            break
        if hot is None:
            hot = yield from block(actor_llm, model, ctx, hot=True)
        reply, parsed = yield from draw(hot)
    if parsed.code is None:  # no resample gave code: keep the first reply
        reply, parsed = first
    return {
        "trajectory": [parsed.code if parsed.code is not None else reply.text.strip()[:2000]],
        "answer": parsed.code,
        "stop_reason": parsed.error,
        "compiler_fix": False,
    }


def make_code_actor(model: BaseChatModel | None = None, *, family: Family = graph_family) -> Node:
    """The code actor node; ``model`` overrides ``Context.actor_model``; ``family`` labels its
    model calls. A retry is
    prompted as ``Context.retry`` and ``Context.strategy`` say (:func:`code_messages`) and
    drawn by :func:`draw_attempt`."""

    def code_actor(state: CodeState, runtime: Runtime[CodeContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, CodeContext)
        messages = code_messages(state, ctx)
        fresh = retries_fresh(state, ctx)
        return (yield from draw_attempt(state, ctx, model, messages, fresh))

    return Node(code_actor, role="actor", family=family, acts=True)
