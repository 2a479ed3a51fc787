"""Each recommendation of the choosing guide is a setting every graph takes and acts on.

The guide's table "What we recommend" names a ``retry="..."`` setting in each row. Every one of
them must be a value of ``Context.retry`` that each graph's context accepts, and run as the
guide says on each graph, with scripted models: a task that always fails, three trials allowed,
and a reflector whose lessons are numbered, so the actor's prompts show which retries read one.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion import create_reflexion_graph
from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.sessions import EnvSessions
from reflexion.core.context import Context, Retry
from reflexion.graphs.alfworld import alfworld_builder
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.fakes import ScriptedChatModel, ScriptedGame
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from reflexion.qa.wiki import OfflineCorpus
from tests.conftest import answer
from tests.unit.test_alfworld import GAME as ALFWORLD_GAME
from tests.unit.test_wiki import PAGES, write_hotpotqa

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ["Reflection: LESSON-1 check the sign.", "Reflection: LESSON-2 add, do not subtract."]
CONTEXTS = (Context, QAContext, ReActContext, CodeContext, AlfworldContext)


def recommended() -> list[str]:
    """The ``retry`` values the recommendation table's setting column names, in order."""
    page = (ROOT / "docs/guide/choosing.md").read_text()
    table = page.split("## What we recommend", 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
    assert len(rows) >= 5, "the recommendation table lost its rows"
    found: list[str] = []
    for row in rows:
        setting = row.split("|")[2]
        values = re.findall(r'retry="(\w+)"', setting)
        assert values, f"a recommendation names no retry setting: {row[:80]}"
        found += [v for v in values if v not in found]
    return found


SETTINGS = recommended()


def test_the_table_recommends_each_measured_policy():
    assert (
        set(SETTINGS)
        == set(get_args(Retry))
        == {"one_attempt", "resample", "informed_once", "informed"}
    )


@pytest.mark.parametrize("schema", CONTEXTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("retry", SETTINGS)
def test_every_graphs_context_takes_the_setting(schema, retry):
    assert "retry" in {f.name for f in fields(schema)}
    assert schema(retry=retry).retry == retry
    assert schema(retry=retry, preset="paper").retry == retry  # a setting given wins


def lessons_seen(prompts: list[str]) -> set[str]:
    return {lesson for lesson in ("LESSON-1", "LESSON-2") if any(lesson in p for p in prompts)}


def generic(retry: str) -> tuple[int, set[str]]:
    actor = ScriptedChatModel(replies=["Answer: 41"])
    graph = create_reflexion_graph(
        actor,
        "exact_match",
        reflector_model=ScriptedChatModel(replies=LESSONS),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    state = graph.invoke(
        {"task": "What is 40 + 2?", "reference": "42"},
        config,
        context=Context(retry=retry, max_trials=3),
    )
    prompts = [actor.prompt_text(i) for i in range(len(actor.prompts))]
    return len(state["evaluations"]), lessons_seen(prompts)


def chain_of_thought(retry: str) -> tuple[int, set[str]]:
    actor = ScriptedChatModel(replies=[answer("Elbe")])  # the same wrong answer every draw
    graph = qa_builder(
        actor_model=actor, reflector_model=ScriptedChatModel(replies=LESSONS)
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    task = {
        "task": "Which river flows through Prague?",
        "passages": "Prague lies on the Vltava.",
        "reference": "Vltava",
    }
    graph.invoke(task, config, context=QAContext(retry=retry, max_trials=3))
    state = graph.get_state(config).values
    prompts = [actor.prompt_text(i) for i in range(len(actor.prompts))]
    return len(state["evaluations"]), lessons_seen(prompts)


PROMPT = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n'
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```"


def programming(retry: str) -> tuple[int, set[str]]:
    actor = ScriptedChatModel(replies=[WRONG])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=["assert add(2, 3) == 5\n"]),
        reflector_model=ScriptedChatModel(replies=LESSONS),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=CodeContext(retry=retry, max_trials=3))
    state = graph.get_state(config).values
    prompts = [actor.prompt_text(i) for i in range(len(actor.prompts))]
    return len(state["evaluations"]), lessons_seen(prompts)


GRAPHS: dict[str, Callable[[str], tuple[int, set[str]]]] = {
    "create_reflexion_graph": generic,
    "chain_of_thought": chain_of_thought,
    "programming": programming,
}

EXPECTED: dict[str, tuple[int, set[str]]] = {
    "one_attempt": (1, set()),
    "resample": (3, set()),  # blind redraws: no retry reads a lesson
    "informed_once": (3, {"LESSON-1"}),  # the first retry reads it, the second is blind
    "informed": (3, {"LESSON-1", "LESSON-2"}),  # every retry reads the latest lessons
}


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("retry", SETTINGS)
def test_each_recommended_setting_runs_as_the_guide_says(graph: str, retry: str) -> None:
    trials, seen = GRAPHS[graph](retry)
    assert (trials, seen) == EXPECTED[retry]


# ---- the repeat guard: one setting, taken and acted on by every graph ------------------------


def guarded_generic_chat(guard: int) -> list[str | None]:
    """create_reflexion_graph with a chat model: trial 2 first repeats trial 1's rejected 41."""
    actor = ScriptedChatModel(replies=["Answer: 41", "Answer: 41", "Answer: 42"])
    graph = create_reflexion_graph(
        actor,
        "exact_match",
        reflector_model=ScriptedChatModel(replies=LESSONS),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(retry="informed", max_trials=2, repeat_guard=guard)
    state = graph.invoke({"task": "What is 40 + 2?", "reference": "42"}, config, context=ctx)
    return [e["answer"] for e in state["evaluations"]]


def guarded_generic_function(guard: int) -> list[str | None]:
    """create_reflexion_graph with a plain function as the actor, which repeats 41 once."""
    answers = iter(["41", "41", "42"])
    graph = create_reflexion_graph(
        lambda inputs: {"answer": next(answers)},
        "exact_match",
        reflector_model=ScriptedChatModel(replies=LESSONS),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(retry="informed", max_trials=2, repeat_guard=guard)
    state = graph.invoke({"task": "What is 40 + 2?", "reference": "42"}, config, context=ctx)
    return [e["answer"] for e in state["evaluations"]]


def guarded_chain_of_thought(guard: int) -> list[str | None]:
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Elbe"), answer("Vltava")])
    graph = qa_builder(
        actor_model=actor, reflector_model=ScriptedChatModel(replies=LESSONS)
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    task = {
        "task": "Which river flows through Prague?",
        "passages": "Prague lies on the Vltava.",
        "reference": "Vltava",
    }
    ctx = QAContext(retry="informed", max_trials=2, repeat_guard=guard)
    state = graph.invoke(task, config, context=ctx)
    return [e["answer"] for e in state["evaluations"]]


RIGHT = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"


def guarded_programming(guard: int) -> list[str | None]:
    actor = ScriptedChatModel(replies=[WRONG, WRONG, RIGHT])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=["assert add(2, 3) == 5\n"]),
        reflector_model=ScriptedChatModel(replies=LESSONS),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}
    ctx = CodeContext(retry="informed", max_trials=2, repeat_guard=guard)
    state = graph.invoke(start, config, context=ctx)
    return ["right" if "a + b" in (e["answer"] or "") else "wrong" for e in state["evaluations"]]


def guarded_react(guard: int, tmp_path: Path) -> list[str | None]:
    """ReAct: the second step repeats the first's search; a guarded step is drawn again."""
    data = write_hotpotqa(tmp_path / "react.jsonl", PAGES)
    corpus = OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")
    replies = [
        "Thought: The author.\nAction: Search[Ada Lovelace]",
        "Thought: Again.\nAction: Search[Ada Lovelace]",
        "Thought: Where was she born?\nAction: Lookup[born]",
        "Thought: London.\nAction: Finish[London]",
    ]
    graph = react_builder(
        actor_model=ScriptedChatModel(replies=replies),
        reflector_model=ScriptedChatModel(replies=LESSONS),
        backend=corpus,
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 100}
    task = {"task": "Where was Ada Lovelace born?", "reference": "London"}
    graph.invoke(task, config, context=ReActContext(max_trials=1, repeat_guard=guard))
    state = graph.get_state(config).values
    return [line for line in state["trajectory"] if line.startswith("Action:")][:2]


def games_dir(tmp_path: Path) -> str:
    """A game set of the one scripted game (whose content the scripted engine ignores)."""
    game = tmp_path / "games" / ALFWORLD_GAME
    game.mkdir(parents=True, exist_ok=True)
    obj = {"pddl_domain": "(d)", "grammar": "{}", "pddl_problem": "(p)", "solvable": True}
    (game / "game.tw-pddl").write_text(json.dumps(obj))
    return str(tmp_path / "games")


def guarded_alfworld(guard: int, tmp_path: Path) -> list[str | None]:
    """ALFWorld: the second turn repeats a command the game refused; a guarded turn is drawn
    again."""
    replies = ["open cabinet 1", "open cabinet 1", "go to countertop 1"]
    graph = alfworld_builder(
        actor_model=ScriptedChatModel(replies=replies),
        reflector_model=ScriptedChatModel(replies=LESSONS),
        sessions=EnvSessions(ScriptedGame),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 100}
    games = games_dir(tmp_path)
    ctx = AlfworldContext(max_trials=1, alfworld_steps=2, repeat_guard=guard, games=games)
    graph.invoke({"game": ALFWORLD_GAME}, config, context=ctx)
    state = graph.get_state(config).values
    return [line for line in state["trajectory"] if line.startswith("> ")]


GUARDED: dict[str, tuple[Callable[..., list[str | None]], list[Any], list[Any]]] = {
    # graph: (run, without the guard, with it)
    "create_reflexion_graph, chat model": (guarded_generic_chat, ["41", "41"], ["41", "42"]),
    "create_reflexion_graph, function": (guarded_generic_function, ["41", "41"], ["41", "42"]),
    "chain_of_thought": (guarded_chain_of_thought, ["Elbe", "Elbe"], ["Elbe", "Vltava"]),
    "programming": (guarded_programming, ["wrong", "wrong"], ["wrong", "right"]),
    "react": (
        guarded_react,
        ["Action: Search[Ada Lovelace]", "Action: Search[Ada Lovelace]"],
        ["Action: Search[Ada Lovelace]", "Action: Lookup[born]"],
    ),
    "alfworld": (
        guarded_alfworld,
        ["> open cabinet 1", "> open cabinet 1"],
        ["> open cabinet 1", "> go to countertop 1"],
    ),
}


@pytest.mark.parametrize("schema", CONTEXTS, ids=lambda c: c.__name__)
def test_every_graphs_context_takes_the_repeat_guard(schema):
    assert schema(repeat_guard=2).repeat_guard == 2
    assert schema(preset="paper").repeat_guard == 0  # the paper keeps a repeat


@pytest.mark.parametrize("graph", GUARDED)
def test_the_repeat_guard_redraws_a_rejected_repeat_in_every_graph(graph, tmp_path):
    run, without, with_guard = GUARDED[graph]
    extra = (tmp_path,) if run in (guarded_react, guarded_alfworld) else ()
    assert run(0, *extra) == without
    assert run(2, *extra) == with_guard
