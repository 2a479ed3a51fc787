"""Programming with Reflexion (HumanEval/MBPP-style problems, Python or Rust): self-written unit
tests, a sandboxed unit-test evaluator and a code reflector; the builder, and the graph
compiled from it without a checkpointer (a LangGraph server brings its own, and the CLI
compiles its own with SQLite)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from reflexion.graphs.builder import build_reflexion_graph
from reflexion.nodes import make_reflector
from reflexion.nodes.coder import (
    code_reflection_messages,
    make_code_actor,
    make_test_writer,
    make_unit_test_evaluator,
)
from reflexion.nodes.coder.reflection import reflecting_when_read
from reflexion.nodes.coder.tree import keeping_branch_reflections
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeInputState, CodeOutputState, CodeState, lesson_family


def programming_builder(
    *,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The programming Reflexion loop: the test writer runs once, then the code actor, the
    unit-test evaluator (sandboxed) and the code reflector take turns. ``evaluator_model``
    writes the tests."""
    return build_reflexion_graph(
        make_code_actor(actor_model, family=lesson_family),
        make_unit_test_evaluator(actor_model),
        reflecting_when_read(
            keeping_branch_reflections(
                make_reflector(
                    reflector_model,
                    messages=code_reflection_messages,
                    family=lesson_family,
                    schema=CodeContext,
                )
            )
        ),
        state_schema=CodeState,
        input_schema=CodeInputState,
        output_schema=CodeOutputState,
        setup=("test_writer", make_test_writer(evaluator_model)),
        family=lesson_family,
        context_schema=CodeContext,
    )


graph = programming_builder().compile(name="reflexion-programming")
"""Input: ``task`` (signature and documentation), ``entry_point``, ``language`` (py or rs) and
optionally ``tests``; output: the implementation (``answer``), the tests and the trial history."""
