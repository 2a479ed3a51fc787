"""Each model call tells a tracer which graph, role, trial, task and strategy it served
(:mod:`reflexion.core.tracing`): collected with a callback handler, as LangSmith or an
OpenTelemetry exporter would see them, for each family's graph and each role, on models
passed in by the caller, on both paths."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate
from langgraph.checkpoint.memory import InMemorySaver

from reflexion import Context, create_reflexion_graph
from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.sessions import EnvSessions
from reflexion.graphs.alfworld import alfworld_builder
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.fakes import ScriptedChatModel, ScriptedGame
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from reflexion.qa.wiki import OfflineCorpus
from tests.unit.test_async import RIGHT, START, WRONG
from tests.unit.test_wiki import PAGES, write_hotpotqa


class Collector(BaseCallbackHandler):
    """The run name, tags and metadata of every chat model call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.calls.append({"name": kwargs.get("name"), "tags": tags, "metadata": metadata})


def labels(calls: list[dict[str, Any]], *, named: bool = True) -> set[tuple[Any, ...]]:
    """(graph, role, trial, task id, strategy) of each call; and every call named by its role
    (unless not ``named``: a model inside your chain, which carries the name itself), tagged
    with it, with LangGraph's own metadata kept."""
    seen = set()
    for call in calls:
        meta = call["metadata"]
        role = meta["reflexion_role"]
        assert call["name"] == role or (not named and role == "actor")
        assert {"reflexion", f"role:{role}", f"trial:{meta['reflexion_trial']}"} <= set(
            call["tags"]
        )
        assert "langgraph_node" in meta
        seen.add(
            (
                meta["reflexion_graph"],
                role,
                meta["reflexion_trial"],
                meta["reflexion_task_id"],
                meta["reflexion_strategy"],
            )
        )
    return seen


def run(graph: Any, start: dict[str, Any], ctx: Any, *, use_async: bool = False) -> Collector:
    collector = Collector()
    config = {"configurable": {"thread_id": "t"}, "callbacks": [collector], "recursion_limit": 200}
    if use_async:
        asyncio.run(graph.ainvoke(start, config, context=ctx))
    else:
        graph.invoke(start, config, context=ctx)
    return collector


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_qa_roles_and_trials(use_async: bool):
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=["Thought: t\nAction: Finish[Elbe]"]),
        evaluator_model=ScriptedChatModel(replies=["no"]),
        reflector_model=ScriptedChatModel(replies=["Reflection: check the river."]),
    ).compile(checkpointer=InMemorySaver())
    ctx = QAContext(max_trials=2, evaluator="llm", retry="informed")
    start = {"task": "Which river flows through Prague?", "task_id": "q7"}
    seen = labels(run(graph, start, ctx, use_async=use_async).calls)
    assert seen == {
        ("qa", "actor", 1, "q7", "reflexion"),
        ("qa", "evaluator", 1, "q7", "reflexion"),
        ("qa", "reflector", 1, "q7", "reflexion"),
        ("qa", "actor", 2, "q7", "reflexion"),
        ("qa", "evaluator", 2, "q7", "reflexion"),
    }


def test_react_actor_steps(tmp_path: Path):
    corpus = OfflineCorpus.from_hotpotqa(
        write_hotpotqa(tmp_path / "data.jsonl", PAGES), cache_dir=tmp_path / "cache"
    )
    actor = ScriptedChatModel(
        replies=["Thought: a\nAction: Search[Ada Lovelace]", "Thought: b\nAction: Finish[Paris]"]
    )
    graph = react_builder(
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: r"]),
        backend=corpus,
    ).compile(checkpointer=InMemorySaver())
    start = {"task": "Where was Ada born?", "reference": "London"}
    seen = labels(run(graph, start, ReActContext(max_trials=1, strategy="none")).calls)
    assert seen == {("react", "actor", 1, None, "none")}


def test_programming_roles():
    ctx = CodeContext(
        max_trials=2,
        internal_tests="all",  # tests written
        retry="informed",
        strategy="last_attempt_and_reflexion",
    )
    graph = programming_builder(
        actor_model=ScriptedChatModel(replies=[WRONG, RIGHT]),
        evaluator_model=ScriptedChatModel(replies=["assert add(2, 3) == 5\n"]),
        reflector_model=ScriptedChatModel(replies=["Reflection: I subtracted."]),
    ).compile(checkpointer=InMemorySaver())
    roles = {(g, r, n) for g, r, n, _id, _s in labels(run(graph, START, ctx).calls)}
    assert roles == {
        ("programming-py", "test_writer", 0),
        ("programming-py", "actor", 1),
        ("programming-py", "reflector", 1),
        ("programming-py", "actor", 2),
    }


def test_alfworld_roles(tmp_path: Path):
    game = "pick_and_place_simple-Mug-None-Shelf-1/trial_1"
    (tmp_path / "games" / game).mkdir(parents=True)
    keys = {"pddl_domain": "(d)", "grammar": "{}", "pddl_problem": "(p)", "solvable": True}
    (tmp_path / "games" / game / "game.tw-pddl").write_text(json.dumps(keys))
    graph = alfworld_builder(
        actor_model=ScriptedChatModel(replies=["think: wait"]),
        evaluator_model=ScriptedChatModel(replies=["no"]),
        reflector_model=ScriptedChatModel(replies=["Reflection: move."]),
        sessions=EnvSessions(ScriptedGame),
    ).compile(checkpointer=InMemorySaver())
    ctx = AlfworldContext(
        games=str(tmp_path / "games"),
        max_trials=2,
        evaluator="llm",
        alfworld_memory="reflection",
        alfworld_steps=2,
    )
    roles = {(g, r, n) for g, r, n, _id, _s in labels(run(graph, {"game": game}, ctx).calls)}
    assert roles == {
        ("alfworld-put", "actor", 1),
        ("alfworld-put", "evaluator", 1),
        ("alfworld-put", "reflector", 1),
        ("alfworld-put", "actor", 2),
        ("alfworld-put", "evaluator", 2),
    }


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_your_own_models_and_runnables_carry_them(use_async: bool):
    judge = ScriptedChatModel(replies=["no"])
    actor = ScriptedChatModel(replies=["Answer: 5"])
    prompt = ChatPromptTemplate.from_messages([("human", "{task}\n{memory}")])
    graph = create_reflexion_graph(
        prompt | actor.bind(stop=["\n\n"]),  # a Runnable: bind works under the labels
        judge,
        reflector_model=ScriptedChatModel(replies=["Reflection: add."]),
        checkpointer=InMemorySaver(),
    )
    ctx = Context(max_trials=2, strategy="last_attempt_and_reflexion")
    seen = labels(run(graph, {"task": "2 + 2?"}, ctx, use_async=use_async).calls, named=False)
    strategy = "last_attempt_and_reflexion"
    assert seen == {
        ("reflexion", "actor", 1, None, strategy),
        ("reflexion", "evaluator", 1, None, strategy),
        ("reflexion", "reflector", 1, None, strategy),
        ("reflexion", "actor", 2, None, strategy),
        ("reflexion", "evaluator", 2, None, strategy),
    }
    assert actor.kwargs_seen[0]["stop"] == ["\n\n"]
