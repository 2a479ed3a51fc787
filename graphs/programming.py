"""Programming with Reflexion (HumanEval/MBPP-style problems, Python or Rust): self-written unit
tests, a sandboxed unit-test evaluator and a code reflector; the loop's builder, and the graph
compiled from it without a checkpointer (a LangGraph server brings its own, and the CLI
compiles its own with SQLite).

It draws what runs: a failed trial goes to ``retry``, which goes to the reflector only when
the next retry reads a reflection (never under ``retry="resample"``; under
``"informed_once"`` not once a retry the model wrote has failed), and the next attempt is first
``rustc``'s fixes (``compiler_fix``) after Rust code that did not compile."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph

from reflexion.graphs.loop import (
    Retry,
    add_loop_nodes,
    add_loop_routes,
    after_repair,
    family_node,
    loop_graph,
    trial_repair,
)
from reflexion.nodes.programming.actor import make_code_actor
from reflexion.nodes.programming.compiler_fix import made_fix, make_compiler_fix, tries_compiler_fix
from reflexion.nodes.programming.evaluator import make_unit_test_evaluator
from reflexion.nodes.programming.feedback import retry_reads_feedback
from reflexion.nodes.programming.reflection import code_reflection_messages
from reflexion.nodes.programming.test_writer import make_test_writer
from reflexion.nodes.reflector import make_reflector
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeInputState, CodeOutputState, CodeState, graph_family


def _builder(
    actor: Any,
    reflector: Any,
    retry: Retry,
    repair: Any,
    context_schema: type[CodeContext],
    evaluator_model: BaseChatModel | None,
) -> StateGraph[Any, Any, Any, Any]:
    """The loop with programming's own nodes around it: the test writer before the first
    trial, and ``repair`` (``rustc``'s fixes) that may make an attempt before the actor."""
    builder = loop_graph(
        state_schema=CodeState,
        input_schema=CodeInputState,
        output_schema=CodeOutputState,
        context_schema=context_schema,
    )
    builder.add_edge(START, "test_writer")
    builder.add_edge("test_writer", "actor")
    add_loop_nodes(
        builder,
        actor,
        make_unit_test_evaluator(),
        reflector,
        family=graph_family,
        empty_task=None,  # the test writer checks the problem first
    )
    writer, writer_input = family_node(make_test_writer(evaluator_model), "tests", graph_family)
    builder.add_node("test_writer", writer, input_schema=writer_input)
    add_loop_routes(builder, retry=retry)
    node, schema = trial_repair(repair, graph_family, source="compiler")
    builder.add_node("compiler_fix", node, input_schema=schema)
    builder.add_conditional_edges("compiler_fix", *after_repair(made_fix))
    return builder


def _reflector(model: BaseChatModel | None) -> Any:
    return make_reflector(
        model, messages=code_reflection_messages, family=graph_family, schema=CodeContext
    )


def programming_builder(
    *,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The programming Reflexion loop: the test writer runs once, then the code actor, the
    unit-test evaluator (sandboxed) and the code reflector take turns. ``evaluator_model``
    writes the tests."""
    retry = Retry(reflects=retry_reads_feedback, repair="compiler_fix", repairs=tries_compiler_fix)
    actor = make_code_actor(actor_model, family=graph_family)
    return _builder(
        actor, _reflector(reflector_model), retry, make_compiler_fix(), CodeContext, evaluator_model
    )


graph = programming_builder().compile(name="reflexion-programming")
"""Input: ``task`` (signature and documentation), ``entry_point``, ``language`` (py or rs) and
optionally ``tests``; output: the implementation (``answer``), the tests and the trial history."""
