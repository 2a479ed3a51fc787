"""The generic Reflexion graph served as ``reflexion`` by ``langgraph.json``: any task, any model.

The actor is a chat model (``Context.actor_model``, the embedded model by default, so
``langgraph dev`` runs it offline) with the generic actor prompt (``prompts/generic_*.md``):
a short ``Thought:``, then ``Answer:``. The evaluator: when the input has a ``reference`` and
``Context.evaluator`` is ``exact_match`` (the default), exact match against it (HotPotQA's
normalisation); otherwise — no reference, or ``evaluator=llm`` — the LLM judge on
``Context.evaluator_model``. The reflector is ours on ``Context.reflector_model``. Compiled
without a checkpointer: a LangGraph server brings its own.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.graphs.builder import build_reflexion_graph
from reflexion.graphs.custom import make_chat_actor, make_custom_evaluator
from reflexion.nodes.common import resolve_model
from reflexion.nodes.evaluator import (
    EvaluateFn,
    Evaluation,
    agreement_evaluation,
    exact_match_evaluation,
    make_evaluator,
)
from reflexion.nodes.reflector import make_reflector

GENERIC_FAMILY = "reflexion"
"""The task family of the generic graph's lessons (``Context.lessons``)."""


def generic_evaluation(judge_model: BaseChatModel | None = None) -> EvaluateFn:
    """Exact match when there is a reference (unless ``evaluator=llm``), else the LLM judge
    (on ``judge_model``, default ``Context.evaluator_model``); ``evaluator=agreement``: the
    judge model's own answer must match."""
    judge = make_custom_evaluator(judge_model if judge_model is not None else "llm")

    def evaluate(state: State, ctx: Context) -> Evaluation:
        if ctx.evaluator == "heuristic":
            raise ReflexionError(
                "the heuristic evaluator is for ALFWorld: use exact_match, llm or agreement here"
            )
        if ctx.evaluator == "agreement":
            llm = resolve_model(
                judge_model, ctx.evaluator_model, ctx, temperature=0.0, role="evaluator"
            )
            return agreement_evaluation(llm, state)
        if ctx.evaluator == "exact_match" and state.reference is not None:
            return exact_match_evaluation(state, ctx)
        return judge(state, ctx)

    return evaluate


graph = build_reflexion_graph(
    make_chat_actor(None, family=GENERIC_FAMILY),
    make_evaluator(None, generic_evaluation()),
    make_reflector(None, family=GENERIC_FAMILY),
    family=GENERIC_FAMILY,
).compile(name="reflexion")
"""Reflexion on any task: generic chat actor, exact match or LLM judge, our reflector."""
