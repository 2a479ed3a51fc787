"""``graph.ainvoke`` gives what ``graph.invoke`` gives: for every family's graph, the same
final state, the same prompts and the same call options (seeds, stops) in the same order, on
scripted models; and on the async path every model call is awaited (``ainvoke``), none is
run in a worker thread."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

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
from tests.unit.test_wiki import PAGES, write_hotpotqa


class Scripted(ScriptedChatModel):
    """A scripted model that notes which path each call took and on which thread."""

    paths: list[str] = Field(default_factory=list)

    def reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        on_loop = threading.current_thread() is threading.main_thread()
        self.paths.append("loop" if on_loop else "thread")
        return super().reply(messages, stop, **kwargs)


Build = Callable[[], tuple[Any, dict[str, Scripted]]]


def both(build: Build, start: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Run a fresh graph with ``invoke`` and another with ``ainvoke``; assert they agree
    (state, prompts, options) and that the async run's model calls stayed on the loop."""
    seen = []
    for way in ("invoke", "ainvoke"):
        graph, models = build()
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
        if way == "invoke":
            out = graph.invoke(start, config, context=ctx)
        else:
            out = asyncio.run(graph.ainvoke(start, config, context=ctx))
        if isinstance(out.get("spent"), dict):  # seconds are the one figure the paths may differ in
            out = {**out, "spent": {k: v for k, v in out["spent"].items() if k != "seconds"}}
        prompts = {k: [[m.text for m in p] for p in m.prompts] for k, m in models.items()}
        options = {k: m.kwargs_seen for k, m in models.items()}
        seen.append((out, prompts, options))
        if way == "ainvoke":
            assert all(p == "loop" for m in models.values() for p in m.paths), way
    assert seen[0] == seen[1]
    assert any(seen[0][1].values()), "no model was called"
    return dict(seen[0][0])


def test_qa_with_a_judge():
    def build() -> tuple[Any, dict[str, Scripted]]:
        models = {
            "actor": Scripted(
                replies=["Thought: t\nAction: Finish[Elbe]", "Thought: t\nAction: Finish[Vltava]"]
            ),
            "judge": Scripted(replies=["no, wrong river", "yes, correct"]),
            "reflector": Scripted(replies=["Reflection: Prague is on the Vltava."]),
        }
        graph = qa_builder(
            actor_model=models["actor"],
            evaluator_model=models["judge"],
            reflector_model=models["reflector"],
        ).compile(checkpointer=InMemorySaver())
        return graph, models

    ctx = QAContext(max_trials=3, evaluator="llm", retry="informed")
    out = both(build, {"task": "Which river flows through Prague?", "task_id": "q1"}, ctx)
    assert out["answer"] == "Vltava" and out["solved"]


def test_react(tmp_path: Path):
    corpus = OfflineCorpus.from_hotpotqa(
        write_hotpotqa(tmp_path / "data.jsonl", PAGES), cache_dir=tmp_path / "cache"
    )

    def build() -> tuple[Any, dict[str, Scripted]]:
        models = {
            "actor": Scripted(
                replies=[
                    "Thought: a\nAction: Search[Ada Lovelace]",
                    "Thought: b\nAction: Lookup[born]",
                    "Thought: c\nAction: Finish[London]",
                ]
            ),
            "reflector": Scripted(replies=["Reflection: unused"]),
        }
        graph = react_builder(
            actor_model=models["actor"], reflector_model=models["reflector"], backend=corpus
        ).compile(checkpointer=InMemorySaver())
        return graph, models

    task = {"task": "Where was the author of the first algorithm born?", "reference": "London"}
    assert both(build, task, ReActContext(max_trials=2))["solved"]


PROMPT = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n'
RIGHT = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```"
START = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}


def test_programming():
    def build() -> tuple[Any, dict[str, Scripted]]:
        models = {
            "actor": Scripted(replies=[WRONG, RIGHT]),
            "tests": Scripted(replies=["assert add(2, 3) == 5\nassert add(0, 0) == 0\n"]),
            "reflector": Scripted(replies=["Reflection: I subtracted."]),
        }
        graph = programming_builder(
            actor_model=models["actor"],
            evaluator_model=models["tests"],
            reflector_model=models["reflector"],
        ).compile(checkpointer=InMemorySaver())
        return graph, models

    ctx = CodeContext(max_trials=3, retry="informed", strategy="last_attempt_and_reflexion")
    out = both(build, START, ctx)
    assert out["solved"] and "a + b" in out["answer"]


def test_alfworld(tmp_path: Path):
    game = "pick_and_place_simple-Mug-None-Shelf-1/trial_1"
    where = tmp_path / "games" / game
    where.mkdir(parents=True)
    keys = {"pddl_domain": "(d)", "grammar": "{}", "pddl_problem": "(p)", "solvable": True}
    (where / "game.tw-pddl").write_text(json.dumps({**keys, "walkthrough": []}))
    win = ["go to countertop 1", "take mug 1 from countertop 1", "go to shelf 1"]

    def build() -> tuple[Any, dict[str, Scripted]]:
        models = {
            "actor": Scripted(replies=["go to countertop 1"] * 4 + [*win, "move mug 1 to shelf 1"]),
            "judge": Scripted(replies=["no"]),
            "reflector": Scripted(replies=["Reflection: take the mug."]),
        }
        graph = alfworld_builder(
            actor_model=models["actor"],
            evaluator_model=models["judge"],
            reflector_model=models["reflector"],
            sessions=EnvSessions(ScriptedGame),
        ).compile(checkpointer=InMemorySaver())
        return graph, models

    ctx = AlfworldContext(games=str(tmp_path / "games"), max_trials=2, alfworld_memory="reflection")
    out = both(build, {"game": game}, ctx)
    assert [e["won"] for e in out["episodes"]] == [False, True]


def test_custom_graph_with_your_own_async_evaluator():
    async def evaluate(task: str, answer: str) -> bool:
        await asyncio.sleep(0)
        return answer == "4"

    def build() -> tuple[Any, dict[str, Scripted]]:
        models = {
            "actor": Scripted(replies=["Thought: x\nAnswer: 5", "Thought: y\nAnswer: 4"]),
            "reflector": Scripted(replies=["Reflection: add again."]),
        }
        graph = create_reflexion_graph(
            models["actor"],
            evaluate,
            reflector_model=models["reflector"],
            checkpointer=InMemorySaver(),
        )
        return graph, models

    out = both(build, {"task": "2 + 2?"}, Context(max_trials=3))
    assert out["answer"] == "4" and out["solved"]
