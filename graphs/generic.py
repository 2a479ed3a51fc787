"""The generic Reflexion graph served as ``reflexion`` by ``langgraph.json``: any task, any model.

The actor is a chat model (``Context.actor_model``, the embedded model by default, so
``langgraph dev`` runs it offline) with the generic actor prompt (``prompts/common/generic_*.md``):
a short ``Thought:``, then ``Answer:``. The evaluator: when the input has a ``reference`` and
``Context.evaluator`` is ``exact_match`` (the default), exact match against it (HotPotQA's
normalisation); otherwise — no reference, or ``evaluator=llm`` — the LLM judge on
``Context.evaluator_model``; ``evaluator=agreement``: that model answers the task itself,
blind, and the attempt must match. The reflector is ours on ``Context.reflector_model``, with
worked examples that belong to no benchmark (``prompts/common/generic_reflect_examples.md``: a unit
conversion, a word problem, a format instruction missed); the QA graphs keep their HotPotQA
ones. Compiled without a checkpointer: a LangGraph server brings its own.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from reflexion.core.context import Context
from reflexion.core.state import State
from reflexion.core.steps import Steps
from reflexion.graphs.loop import build_reflexion_graph
from reflexion.nodes.actor import make_chat_actor
from reflexion.nodes.evaluator import (
    EvaluateSteps,
    Evaluation,
    builtin_evaluation,
    llm_judge,
    make_evaluator,
)
from reflexion.nodes.reflector import GENERIC_REFLECT_EXAMPLES, make_reflector

GENERIC_FAMILY = "reflexion"
"""The task family the generic graph's model calls are labelled with."""


def generic_evaluation(judge_model: BaseChatModel | None = None) -> EvaluateSteps:
    """:func:`~reflexion.nodes.evaluator.builtin_evaluation` (the judge on ``judge_model``,
    default ``Context.evaluator_model``), with one rule for any task: exact match needs a
    reference, so without one the LLM judge decides."""
    builtin, judge = builtin_evaluation(judge_model), llm_judge(judge_model)

    def evaluate(state: State, ctx: Context) -> Steps[Evaluation]:
        if ctx.evaluator == "exact_match" and state.reference is None:
            return (yield from judge(state, ctx))
        return (yield from builtin(state, ctx))

    return evaluate


def generic_builder(
    examples: str = GENERIC_REFLECT_EXAMPLES,
    *,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The generic loop, uncompiled; ``examples`` names the prompt file of the reflector's
    worked examples (``.ci/reflector_examples.py`` measures one file against another). Models
    given here override the context's model strings (tests pass scripted fakes)."""
    return build_reflexion_graph(
        make_chat_actor(actor_model, family=GENERIC_FAMILY),
        make_evaluator(evaluator_model, generic_evaluation(evaluator_model)),
        make_reflector(reflector_model, examples=examples, family=GENERIC_FAMILY),
        family=GENERIC_FAMILY,
    )


graph = generic_builder().compile(name="reflexion")
"""Reflexion on any task: generic chat actor, exact match or LLM judge, our reflector."""
