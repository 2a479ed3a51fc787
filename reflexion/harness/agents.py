"""The agents known by name: the one table that the CLI and the benchmark runners read (a row
also names the ``langgraph.json`` graph that serves its agent), so a new agent is one row here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.graph import StateGraph

from reflexion.graphs.alfworld import alfworld_builder
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import REACT_REFLECT_EXAMPLES, qa_builder, react_builder


@dataclass(frozen=True)
class Agent:
    """One agent: how to build its graph and where a server serves it."""

    name: str
    """What ``--agent`` and a thread's checkpoint metadata call it."""
    graph_id: str
    """The ``langgraph.json`` graph that serves it on a LangGraph server."""
    build: Callable[[], StateGraph[Any, Any, Any, Any]]
    """The uncompiled graph."""
    answers_questions: bool
    """Whether ``reflexion run`` starts it on a question; the others only run in a bench."""
    reflect_examples: str = "qa/reflect_examples"
    """The prompt file of worked reflections its reflector shows (the copy rate's source)."""


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent("cot-gt", "reflexion_qa", lambda: qa_builder(with_passages=True), True),
        Agent("cot", "reflexion_qa_cot", lambda: qa_builder(with_passages=False), True),
        Agent("react", "reflexion_react", react_builder, True, REACT_REFLECT_EXAMPLES),
        Agent(
            "programming",
            "reflexion_programming",
            programming_builder,
            False,
            "programming/reflect_examples",
        ),
        Agent(
            "alfworld", "reflexion_alfworld", alfworld_builder, False, "alfworld/reflect_examples"
        ),
    )
}
