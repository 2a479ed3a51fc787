"""Snapshot of the graph topology, as Studio and the README draw it."""

from __future__ import annotations

from pathlib import Path

from reflexion.graphs.qa import cot_graph, graph

SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "reflexion_qa.mmd"


def test_mermaid_topology_matches_snapshot():
    drawn = graph.get_graph().draw_mermaid()
    assert drawn == SNAPSHOT.read_text(), "topology changed: update tests/snapshots/ if intended"
    assert cot_graph.get_graph().draw_mermaid() == drawn


def test_router_edges_are_all_drawn():
    edges = {(e.source, e.target, e.conditional) for e in graph.get_graph().edges}
    assert ("evaluator", "reflector", True) in edges
    assert ("evaluator", "select_answer", True) in edges
    assert ("select_answer", "__end__", False) in edges
    assert ("reflector", "actor", True) in edges
    assert ("reflector", "review", True) in edges
    assert ("review", "actor", False) in edges


def test_public_schemas_are_narrow():
    inputs = graph.get_input_jsonschema()["properties"]
    outputs = graph.get_output_jsonschema()["properties"]
    assert set(inputs) == {"task", "passages", "reference", "task_id"}
    assert set(outputs) == {
        "answer",
        "solved",
        "trial",
        "evaluations",
        "reflections",
        "stopped",
        "spent",
    }
    context = graph.get_context_jsonschema()["properties"]
    assert "description" in context["memory_size"]


def test_readme_diagram_is_the_real_graph():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "```mermaid\n" + SNAPSHOT.read_text().rstrip("\n") + "\n```" in readme


def test_programming_topology_and_schemas():
    from reflexion.graphs.programming import graph as programming

    drawn = programming.get_graph().draw_mermaid()
    snapshot = SNAPSHOT.with_name("reflexion_programming.mmd")
    assert drawn == snapshot.read_text(), "topology changed: update tests/snapshots/ if intended"
    edges = {(e.source, e.target) for e in programming.get_graph().edges}
    assert ("__start__", "test_writer") in edges and ("test_writer", "actor") in edges
    inputs = programming.get_input_jsonschema()["properties"]
    assert {"task", "entry_point", "language", "tests"} <= set(inputs)
    assert "tests" in programming.get_output_jsonschema()["properties"]
    assert "description" in programming.get_context_jsonschema()["properties"]["max_tests"]


def test_programming_skips_the_reflector_and_fixes_code_by_edges():
    """A failed trial goes to ``retry``, which goes to the reflector or, when no retry would
    read a reflection, straight on; the compiler's fix is a node that goes back to the
    evaluator."""
    from reflexion.graphs.programming import graph as programming

    edges = {(e.source, e.target) for e in programming.get_graph().edges}
    assert {("evaluator", "retry"), ("retry", "reflector"), ("retry", "actor")} <= edges
    assert {("retry", "compiler_fix"), ("compiler_fix", "evaluator")} <= edges
    assert ("evaluator", "reflector") not in edges
    assert "cross_check" not in programming.get_graph().nodes


def test_alfworld_topology_and_schemas():
    from reflexion.graphs.alfworld import graph as alfworld

    drawn = alfworld.get_graph().draw_mermaid()
    snapshot = SNAPSHOT.with_name("reflexion_alfworld.mmd")
    assert drawn == snapshot.read_text(), "topology changed: update tests/snapshots/ if intended"
    assert set(alfworld.get_input_jsonschema()["properties"]) == {"game", "task_id"}
    assert "episodes" in alfworld.get_output_jsonschema()["properties"]
    context = alfworld.get_context_jsonschema()["properties"]
    assert "description" in context["alfworld_steps"]
    assert "heuristic" in context["evaluator"]["description"]
    # the actor is a subgraph whose turns are its own supersteps (checkpointed one by one)
    inner = alfworld.get_graph(xray=True).nodes
    assert {"actor:begin", "actor:turn"} <= set(inner)


def test_generic_topology_and_schemas():
    """The generic ``reflexion`` graph (langgraph.json) draws as its snapshot and keeps the
    narrow QA input/output schemas."""
    from reflexion.graphs.generic import graph as generic

    drawn = generic.get_graph().draw_mermaid()
    snapshot = SNAPSHOT.with_name("reflexion.mmd")
    assert drawn == snapshot.read_text(), "topology changed: update tests/snapshots/ if intended"
    assert set(generic.get_input_jsonschema()["properties"]) == {
        "task",
        "passages",
        "reference",
        "task_id",
    }
    assert set(generic.get_output_jsonschema()["properties"]) == {
        "answer",
        "solved",
        "trial",
        "evaluations",
        "reflections",
        "stopped",
        "spent",
    }
    assert "description" in generic.get_context_jsonschema()["properties"]["actor_model"]
