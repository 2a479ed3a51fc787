"""Question answering with Reflexion: the paper's CoT (GT) agent (uses ``passages`` when given),
the CoT agent (question only) and the ReAct agent (Wikipedia search): their builders, and the
graphs compiled from them without a checkpointer (a LangGraph server brings its own, and the
CLI compiles its own with SQLite)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from reflexion.graphs.loop import build_reflexion_graph, trial_start
from reflexion.nodes.evaluator import EvaluateFn, make_evaluator
from reflexion.nodes.qa.actor import make_cot_actor
from reflexion.nodes.qa.react import make_react_actor
from reflexion.nodes.reflector import make_reflector
from reflexion.qa.context import QA_FAMILY, REACT_FAMILY, QAContext, ReActContext
from reflexion.qa.wiki import WikiBackend

REACT_REFLECT_EXAMPLES = "qa/reflect_examples_react"
"""The ReAct reflector's worked examples (the CoT agents use ``reflect_examples``)."""


def qa_builder(
    *,
    with_passages: bool = True,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
    evaluate: EvaluateFn | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """A question-answering Reflexion loop with a chain-of-thought actor.

    Models given here override the context's model strings (tests pass scripted fakes;
    applications pass their own chat models); ``evaluate`` replaces the built-in evaluators.
    """
    return build_reflexion_graph(
        make_cot_actor(actor_model, with_passages=with_passages, family=QA_FAMILY),
        make_evaluator(evaluator_model, evaluate),
        make_reflector(reflector_model, family=QA_FAMILY, with_passages=with_passages),
        family=QA_FAMILY,
        context_schema=QAContext,
        empty_task="give the question to answer",
    )


def react_builder(
    *,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
    evaluate: EvaluateFn | None = None,
    backend: WikiBackend | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """A question-answering Reflexion loop with the ReAct actor (a subgraph searching
    Wikipedia); ``backend`` overrides the Wikipedia chosen by the context."""
    return build_reflexion_graph(
        make_react_actor(actor_model, backend, trial_start=trial_start, family=REACT_FAMILY),
        make_evaluator(evaluator_model, evaluate),
        make_reflector(reflector_model, examples=REACT_REFLECT_EXAMPLES, family=REACT_FAMILY),
        family=REACT_FAMILY,
        context_schema=ReActContext,
    )


graph = qa_builder(with_passages=True).compile(name="reflexion-qa")
"""CoT (GT): chain of thought over the question and its passages, exact match or LLM judge."""

cot_graph = qa_builder(with_passages=False).compile(name="reflexion-qa-cot")
"""CoT: chain of thought over the question only."""

react_graph = react_builder().compile(name="reflexion-react")
"""ReAct: Thought/Action/Observation steps with Search and Lookup over Wikipedia (offline corpus
by default, ``wiki=live`` for wikipedia.org)."""
