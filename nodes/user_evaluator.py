"""Your evaluator in the loop (``create_reflexion_graph(evaluator=...)``): a function of yours,
sync or async, our LLM judge on a model you name, or exact match, each as the same node
steps (:mod:`reflexion.core.steps`), so one body serves ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from math import isfinite
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import Steps, steps_of
from reflexion.nodes.evaluator import (
    CORRECT,
    INCORRECT,
    JUDGE_VARIABLES,
    EvaluateSteps,
    Evaluation,
    exact_match_evaluation,
    llm_judge,
    no_answer_evaluation,
)
from reflexion.nodes.templates import kind, user_template
from reflexion.prompts import render

EvaluatorSpec = Literal["llm", "exact_match"] | BaseChatModel | Callable[..., Any]

_SHAPES = "(state), (task, answer) or (task, answer, reference)"


def to_evaluation(result: object, ctx: Context) -> Evaluation:
    """A user evaluator's result as an :class:`Evaluation`: a bool is the verdict; a float
    (or int) is a score in [0, 1] that succeeds at ``ctx.judge_threshold`` or above."""
    if isinstance(result, Evaluation):
        return result
    if isinstance(result, bool):
        return Evaluation(float(result), result, CORRECT if result else INCORRECT)
    if isinstance(result, int | float):
        score = float(result)
        if not (isfinite(score) and 0.0 <= score <= 1.0):
            raise ReflexionError(
                f"the evaluator returned the score {score}: scores must lie in [0, 1]"
            )
        ok = score >= ctx.score_threshold
        label = CORRECT if ok else INCORRECT
        return Evaluation(score, ok, f"{label} (score {score:.2f})")
    raise ReflexionError(
        f"the evaluator returned a {kind(result)}: return a bool, a float score in [0, 1] or "
        "an Evaluation"
    )


def _arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` requires: 1, 2 or 3, else a one-line error."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as exc:
        raise ReflexionError(
            f"cannot read the evaluator's signature ({kind(fn)}): wrap it in a def taking "
            + _SHAPES
        ) from exc
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    arity = sum(1 for p in params if p.kind in positional and p.default is p.empty)
    if arity not in (1, 2, 3):
        raise ReflexionError(
            f"the evaluator requires {arity} positional arguments: give it {_SHAPES}"
        )
    return arity


def _judge_template(
    evaluator: object, prompt: ChatPromptTemplate | str | None
) -> BasePromptTemplate[Any] | None:
    """``evaluator_prompt`` as the judge's template (variables among
    :data:`~reflexion.nodes.evaluator.JUDGE_VARIABLES`, ``{task}`` and ``{answer}``
    required); a one-line error when the evaluator is no LLM judge."""
    if prompt is None:
        return None
    if not (isinstance(evaluator, BaseChatModel) or evaluator == "llm"):
        what = repr(evaluator) if isinstance(evaluator, str) else f"a {kind(evaluator)}"
        raise ReflexionError(
            f"evaluator_prompt is only used by the LLM judge, and the evaluator is {what}: "
            "pass evaluator='llm' or a chat model, or drop evaluator_prompt="
        )
    return user_template(prompt, "evaluator_prompt", JUDGE_VARIABLES, ("task", "answer"))


def user_evaluation(
    evaluator: EvaluatorSpec, prompt: ChatPromptTemplate | str | None = None
) -> EvaluateSteps:
    """The evaluator contract, as node steps, for any supported evaluator.

    ``"llm"`` is our LLM judge on ``Context.evaluator_model``, a chat model the judge on that
    model; ``prompt`` (variables among :data:`~reflexion.nodes.evaluator.JUDGE_VARIABLES`,
    ``{task}`` and ``{answer}`` required) replaces the judge's prompt. ``"exact_match"``
    compares with the state's ``reference``. A function, sync or async, is told apart by how
    many positional arguments it requires: one gets the state; two get ``(task, answer)``;
    three ``(task, answer, reference)``. The two- and three-argument forms are not called when
    the actor gave no answer: that trial fails. A sync function runs in a worker thread on the
    async path; an async one is awaited there, and run on an event loop of its own by
    ``graph.invoke``.
    """
    template = _judge_template(evaluator, prompt)
    if isinstance(evaluator, BaseChatModel):
        return llm_judge(evaluator, template)
    if isinstance(evaluator, str):
        if evaluator == "llm":
            return llm_judge(None, template)
        if evaluator == "exact_match":
            return steps_of(exact_match_evaluation)
        raise ReflexionError(
            f"the evaluator '{evaluator}' is unknown: use 'llm', 'exact_match', a chat model "
            "or a function"
        )
    if isinstance(evaluator, Runnable) or not callable(evaluator):
        raise ReflexionError(
            f"the evaluator is a {kind(evaluator)}: pass a function taking {_SHAPES}, a chat "
            "model, or 'llm'"
        )
    arity = _arity(evaluator)
    call = steps_of(evaluator)

    def evaluate(state: State, ctx: Context) -> Steps[Evaluation]:
        if arity > 1 and state.answer is None:
            return no_answer_evaluation(state, default=render("common/no_answer_given"))
        args = (state,) if arity == 1 else (state.task, state.answer, state.reference)[:arity]
        return to_evaluation((yield from call(*args)), ctx)

    return evaluate
