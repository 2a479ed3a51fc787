"""ALFWorld with Reflexion: a ReAct agent plays a household game on the real TextWorld engine
(the ``alfworld`` extra), a heuristic or LLM self-evaluator decides whether the trial failed,
and the next trial starts with the memory of the failed ones: by default where the trial saw
the goal's objects (``alfworld_memory="sightings"``, no model call), or the paper's last Ω
reflections (``"reflection"``). The builder, and the graph compiled from it without a
checkpointer (a LangGraph server brings its own, and the CLI compiles its own with SQLite)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.sessions import EnvSessions
from reflexion.alfworld.state import (
    AlfworldInputState,
    AlfworldOutputState,
    AlfworldState,
    graph_family,
)
from reflexion.graphs.loop import build_reflexion_graph, trial_start
from reflexion.nodes.alfworld.actor import EnvFactory, make_alfworld_actor
from reflexion.nodes.alfworld.evaluator import make_alfworld_evaluator
from reflexion.nodes.alfworld.reflection import alfworld_reflection_messages, alfworld_written
from reflexion.nodes.reflector import make_reflector


def alfworld_builder(
    *,
    actor_model: BaseChatModel | None = None,
    evaluator_model: BaseChatModel | None = None,
    reflector_model: BaseChatModel | None = None,
    env_factory: EnvFactory | None = None,
    sessions: EnvSessions | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The ALFWorld Reflexion loop: the ALFWorld actor (a subgraph playing one trial in the
    environment), the heuristic or LLM self-evaluator, and the ALFWorld reflector.
    ``env_factory`` makes environments (default: the real TextWorld engine, an optional
    extra); ``sessions`` shares the live environments with the caller."""
    return build_reflexion_graph(
        make_alfworld_actor(
            actor_model, env_factory, sessions, trial_start=trial_start, family=graph_family
        ),
        make_alfworld_evaluator(evaluator_model),
        make_reflector(
            reflector_model,
            messages=alfworld_reflection_messages,
            written=alfworld_written,
            family=graph_family,
            schema=AlfworldContext,
        ),
        state_schema=AlfworldState,
        input_schema=AlfworldInputState,
        output_schema=AlfworldOutputState,
        family=graph_family,
        context_schema=AlfworldContext,
    )


graph = alfworld_builder().compile(name="reflexion-alfworld")
"""Input: ``game`` (a name from the game set, a unique part of one, or a path to a
``game.tw-pddl`` file); output: the trial history, the reflections and, per trial, what the
episode did (``episodes``). A trial takes up to ``alfworld_steps`` turns, each one superstep of
the actor subgraph: give runs a ``recursion_limit`` above ``alfworld_steps + 5``."""
