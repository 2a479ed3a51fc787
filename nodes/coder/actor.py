"""The code actor: writes a complete implementation each trial.

From the second trial on it sees, by ``CodeContext.code_retry``, its previous implementation with
the internal test results (repair, the paper), or the task with the failed tests (fresh), or
the task alone (resample: the equal-budget baseline), or fresh once and the task alone after
that (fresh_once); the last Ω reflections under strategy
``reflexion``. A retry that repeats earlier code is drawn again; after Rust code that did not
compile, the retry is first ``rustc``'s own fix.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.lessons import Family, with_recalled
from reflexion.core.memory import reflection_window
from reflexion.nodes.coder.common import (
    STOPS,
    did_compile,
    fenced,
    problem_of,
    prompt_names,
)
from reflexion.nodes.coder.feedback import checks_own_tests, retry_reads_feedback, shown_feedback
from reflexion.nodes.coder.tree import (
    ROOT,
    branch_reflections,
    choose_parent,
    grows_tree,
    parent_update,
)
from reflexion.nodes.common import actor_llm, named_seed
from reflexion.nodes.memory import with_lessons
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem, rust_preamble
from reflexion.programming.replies import extract_code
from reflexion.programming.sandbox import fix_rust
from reflexion.programming.state import CodeState, lesson_family
from reflexion.prompts import render


def retries_fresh(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the next attempt is a fresh sample rather than a repair of the last one:
    ``CodeContext.code_retry`` says which, and under ``auto`` code that did not compile is
    repaired (the compiler's errors point into it) and code that failed tests is not. A
    ``resample`` retry is fresh too, from the first trial's prompt alone, and so is every
    ``fresh_once`` retry."""
    if state.trial == 0 or not state.evaluations:
        return False
    if ctx.code_retry == "auto":
        return did_compile(state.evaluations[-1])
    return ctx.code_retry in ("fresh", "resample", "fresh_once", "tree")


def compiler_fixed(
    state: CodeState, problem: CodeProblem, ctx: CodeContext, tried: set[str]
) -> str | None:
    """Rust under ``CodeContext.compiler_fixes``: the last attempt with the fixes ``rustc``
    suggests applied, when it did not compile, was the model's own (not already a fix), and
    the fixes make it compile into code whose key is not in ``tried``; else ``None``."""
    if not (ctx.compiler_fixes and problem.language == "rs" and state.evaluations):
        return None
    last = state.evaluations[-1]
    code = last["answer"]
    if not code or did_compile(last) or last.get("compiler_fix"):
        return None
    fixed = fix_rust(code, preamble=rust_preamble(problem.prompt, code))
    return fixed if fixed is not None and code_key(fixed, "rs") not in tried else None


def code_messages(
    state: CodeState, ctx: CodeContext, parent: int | None = None
) -> list[BaseMessage]:
    """The actor prompt: instructions and the problem (a prefix that stays the same across
    trials), then, after a failed trial, the previous implementation as the assistant's turn
    and the test results, the reflections (strategy ``reflexion``) and the request to fix it;
    for a fresh retry (:func:`retries_fresh`) the test results and reflections follow the
    problem in the same turn, without the previous implementation. Under
    ``CodeContext.code_retry="resample"`` every trial's prompt is the first trial's: the retry
    learns nothing from the failure, it is only another sample (under ``"fresh_once"``, every
    retry after the first the model wrote: :func:`retry_reads_feedback`). Under ``"tree"`` the retry
    expands ``parent`` (:mod:`reflexion.nodes.coder.tree`): the task alone for the root, else
    that attempt's code, its results and its branch's reflections."""
    problem = problem_of(state)
    names = prompt_names(problem.language)
    task = render("code_task", prompt=problem.prompt.strip(), **names)
    messages: list[BaseMessage] = [
        with_lessons(render("code_system", **names), state),
        HumanMessage(task),
    ]
    if state.trial == 0 or not state.evaluations or not retry_reads_feedback(state, ctx):
        return messages
    if grows_tree(ctx):
        return _expansion(state, ctx, messages, ROOT if parent is None else parent)
    reflection_block = _reflection_block(reflection_window(state.reflections, ctx))
    fresh = retries_fresh(state, ctx)
    retry = render(
        "code_fresh" if fresh else "code_retry",
        feedback=shown_feedback(state.evaluations[-1], state, ctx),
        reflection_block=reflection_block,
        entry_point=problem.entry_point,
        **names,
        **_tests_note(state, ctx),
    )
    if fresh:
        return [messages[0], HumanMessage(f"{task}\n\n{retry}")]
    previous = (
        fenced(state.answer, problem.language)
        if state.answer
        else "\n".join(state.trajectory) or "(no reply)"
    )
    return [*messages, AIMessage(previous), HumanMessage(retry)]


def _expansion(
    state: CodeState, ctx: CodeContext, messages: list[BaseMessage], parent: int
) -> list[BaseMessage]:
    """The prompt that expands ``parent`` in the tree of attempts: the first trial's for the
    root; for an attempt, its code as the assistant's turn, then its own test results and the
    last Ω reflections along its branch, and the request to fix it."""
    if parent == ROOT:
        return messages
    problem = problem_of(state)
    record = state.evaluations[parent]
    reflection_block = _reflection_block(branch_reflections(state, parent, ctx.memory_size))
    retry = render(
        "code_retry",
        feedback=shown_feedback(record, state, ctx),
        reflection_block=reflection_block,
        entry_point=problem.entry_point,
        **prompt_names(problem.language),
        **_tests_note(state, ctx),
    )
    return [
        *messages,
        AIMessage(fenced(record["answer"] or "", problem.language)),
        HumanMessage(retry),
    ]


def _tests_note(state: CodeState, ctx: CodeContext) -> dict[str, str]:
    """What a retry prompt says about its tests: under ``test_trust="checked"``, where the
    model's own tests decide, that they may be wrong and the documentation comes first;
    otherwise nothing, and the fresh retry is asked to pass them."""
    if checks_own_tests(state, ctx):
        return {
            "tests_note": "\n\n" + render("code_tests_note"),
            "passes": "passes the tests it supports",
        }
    return {"tests_note": "", "passes": "passes these tests"}


def _reflection_block(reflections: list[str]) -> str:
    """The reflections a retry reads, as its prompt's block (empty when there are none)."""
    if not reflections:
        return ""
    return "\nYour reflection on it:\n" + "\n".join(f"- {r}" for r in reflections) + "\n"


def code_key(code: str, language: str) -> str:
    """What makes two implementations the same attempt: the Python syntax tree when the code
    parses (comments, blank lines and formatting aside), else the code without whitespace."""
    if language == "py":
        try:
            return ast.dump(ast.parse(code))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            pass
    return re.sub(r"\s+", "", code)


def make_code_actor(
    model: BaseChatModel | None = None, *, family: Family = lesson_family
) -> Callable[[CodeState, Runtime[CodeContext]], dict[str, Any]]:
    """The code actor node; ``model`` overrides ``Context.actor_model``; ``family`` is the task
    family whose lessons it recalls on the first trial (``Context.lessons``). A retry whose code
    repeats an earlier attempt is sampled again (``CodeContext.resample_repeats``); a fresh retry
    (``CodeContext.code_retry``) is sampled at ``RESAMPLE_TEMPERATURE`` from the start. After Rust
    code that did not compile, the retry is first the compiler's own fix, when it has one
    (:func:`compiler_fixed`), with no model call."""

    def code_actor(state: CodeState, runtime: Runtime[CodeContext]) -> dict[str, Any]:
        ctx = get_context(runtime, CodeContext)
        problem = problem_of(state)
        state, recalled = with_recalled(state, runtime, family)
        tried = {code_key(e["answer"], problem.language) for e in state.evaluations if e["answer"]}
        tree = grows_tree(ctx)
        fixed = compiler_fixed(state, problem, ctx, tried)
        if fixed is not None:
            return {
                "trial": state.trial + 1,
                "trajectory": [fixed],
                "answer": fixed,
                "stop_reason": None,
                "compiler_fix": True,
                **(parent_update(state, len(state.evaluations) - 1) if tree else {}),
            }
        parent = choose_parent(state) if tree and state.evaluations else ROOT
        fresh = retries_fresh(state, ctx)
        llm = actor_llm(model, ctx, hot=fresh)
        messages = code_messages(state, ctx, parent)
        draws = 0

        def draw(chat: BaseChatModel) -> BaseMessage:
            """One reply, seeded by what it draws on a retry (``CodeContext.code_seeds``)."""
            nonlocal draws
            draws += 1
            named = state.trial > 0 and ctx.code_seeds == "retry"
            seed = named_seed(chat, problem.task_id, state.trial + 1, draws) if named else {}
            # No grammar: llama.cpp's grammar sampling halves the token rate on this
            # vocabulary; the parser copes with whatever format comes back.
            return chat.invoke(messages, stop=STOPS[problem.language], **seed)

        reply = draw(llm)
        parsed = extract_code(reply.text, problem)
        first = reply, parsed
        hot = llm if fresh else None  # built only if a redraw runs
        for _ in range(ctx.resample_repeats if tried else 0):
            if parsed.code is not None and code_key(parsed.code, problem.language) not in tried:
                break
            if hot is None:
                hot = actor_llm(model, ctx, hot=True)
            reply = draw(hot)
            parsed = extract_code(reply.text, problem)
        if parsed.code is None:  # no resample gave code: keep the first reply
            reply, parsed = first
        return {
            **recalled,
            "trial": state.trial + 1,
            "trajectory": [parsed.code if parsed.code is not None else reply.text.strip()[:2000]],
            "answer": parsed.code,
            "stop_reason": parsed.error,
            "compiler_fix": False,
            **(parent_update(state, parent) if tree else {}),
        }

    return code_actor
