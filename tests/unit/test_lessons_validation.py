"""Validation of long-term lessons: a lesson counts once a later trial of its own thread
succeeded after seeing it (only the lessons in that trial's Ω window, not one dropped in human
review), under every evaluator form; the default "validated" recall filter recalls only those."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from reflexion.core.context import Context
from reflexion.core.steps import drive
from reflexion.graphs.loop import build_reflexion_graph
from reflexion.graphs.qa import qa_builder
from reflexion.lessons import recall
from reflexion.nodes import make_reflector
from reflexion.nodes.evaluator import Evaluation
from reflexion.nodes.qa import make_cot_actor
from reflexion.testing import ScriptedChatModel
from tests.conftest import answer
from tests.unit.test_lessons import PRAGUE, config, qa_graph, right_on_trial_3

NS = ("reflexion", "lessons", "qa")
BUDAPEST = {"task": "Which river flows through Budapest?", "passages": "", "reference": "Danube"}
VIENNA = {"task": "Which river flows through Vienna?", "passages": "", "reference": "Danube"}
HELPED = "Name the river that crosses the city itself."
MISLED = "The river of Budapest is the Tisza."


def validated(store: BaseStore, key: str) -> bool | None:
    found = store.get(NS, key)
    return None if found is None else bool(found.value["validated"])


def test_a_lesson_followed_by_success_is_validated_and_only_it_is_recalled_by_default():
    """A reflection after which its thread's next trial succeeds is marked validated; one
    followed by another failure is not. Another task's thread recalls only the validated one
    under the default filter, and both under lesson_filter="all"."""
    store = InMemoryStore()
    good = qa_graph([answer("Elbe"), answer("Vltava")], [f"Reflection: {HELPED}"], store)
    good.invoke(PRAGUE, config("good"), context=Context(max_trials=3, lessons=True))
    bad = qa_graph([answer("Tisza")], [f"Reflection: {MISLED}"], store)
    bad.invoke(BUDAPEST, config("bad"), context=Context(max_trials=2, lessons=True))
    assert validated(store, "good:1") is True
    assert validated(store, "bad:1") is False
    for lesson_filter, expected in (("validated", [HELPED]), ("all", [HELPED, MISLED])):
        actor = ScriptedChatModel(replies=[answer("Danube")])
        reader = qa_builder(actor_model=actor).compile(checkpointer=InMemorySaver(), store=store)
        ctx = Context(lessons={"enabled": True, "filter": lesson_filter})
        reader.invoke(VIENNA, config(f"reader-{lesson_filter}"), context=ctx)
        state = reader.get_state(config(f"reader-{lesson_filter}")).values
        assert sorted(state["lessons"]) == sorted(expected)
        assert (MISLED in actor.prompt_text(0)) == (lesson_filter == "all")
        assert HELPED in actor.prompt_text(0)
    assert drive(recall(store, "qa", VIENNA["task"], 5, exclude_thread=None)) == [HELPED]


def test_a_success_validates_only_the_lessons_in_its_omega_window():
    """With Ω = 1 a success on trial 3 validates the trial-2 lesson the actor saw, not the
    trial-1 lesson the window had already let go; with Ω = 3 it validates both."""
    for memory, expected in ((1, [False, True]), (3, [True, True])):
        store = InMemoryStore()
        graph = right_on_trial_3(store, "First lesson.", "Second lesson.")
        ctx = Context(max_trials=3, memory_size=memory, lessons=True)
        out = graph.invoke(PRAGUE, config("t"), context=ctx)
        assert out["solved"] and out["trial"] == 3
        assert [validated(store, "t:1"), validated(store, "t:2")] == expected


def test_a_lesson_dropped_in_review_is_not_validated_by_the_later_success():
    """A reflection a person drops in review leaves the Ω window and the store: the next
    trial's success validates the kept one only and does not bring the dropped one back."""
    store = InMemoryStore()
    graph = right_on_trial_3(store, "Kept lesson.", "Dropped lesson.")
    ctx = Context(max_trials=3, lessons=True, review_reflections=True)
    graph.invoke(PRAGUE, config("t"), context=ctx)
    graph.invoke(Command(resume=""), config("t"), context=ctx)  # keep lesson 1
    assert validated(store, "t:2") is False
    out = graph.invoke(Command(resume={"action": "drop"}), config("t"), context=ctx)
    assert out["solved"] and out["reflections"] == ["Kept lesson."]
    assert validated(store, "t:1") is True
    assert store.get(NS, "t:2") is None


def test_validation_leaves_the_evaluator_update_and_a_first_trial_success_alone():
    """The evaluator node returns the evaluator's own update with lessons on; a success on
    the first trial writes nothing to the store (there is no lesson it could have used)."""
    store = InMemoryStore()
    graph = qa_graph([answer("Vltava")], ["Reflection: unused."], store)
    chunks = list(
        graph.stream(PRAGUE, config("t"), context=Context(lessons=True), stream_mode="updates")
    )
    update = next(c["evaluator"] for c in chunks if "evaluator" in c)
    # the evaluator's own keys, and what its node spent (every node adds it)
    assert set(update) == {"evaluations", "solved", "spent"} and update["solved"] is True
    assert store.search(NS) == []


def test_every_evaluator_form_is_validated_after():
    """build_reflexion_graph validates lessons after an evaluator taking (state) only, an
    async one taking (state, runtime), and a Runnable, and keeps each one's verdict."""

    def verdict(state: Any) -> Evaluation:
        ok = state.answer == "Vltava"
        return Evaluation(float(ok), ok, "")

    async def async_verdict(state: Any, runtime: Any) -> Evaluation:
        assert runtime.context.lessons
        return verdict(state)

    for form in (verdict, async_verdict, RunnableLambda(verdict)):
        store = InMemoryStore()
        graph = build_reflexion_graph(
            make_cot_actor(ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])),
            form,
            make_reflector(ScriptedChatModel(replies=["Reflection: Check the city."]), family="qa"),
            family="qa",
        ).compile(checkpointer=InMemorySaver(), store=store)
        ctx = Context(max_trials=3, lessons=True)
        if form is async_verdict:
            out = asyncio.run(graph.ainvoke(PRAGUE, config("t"), context=ctx))
        else:
            out = graph.invoke(PRAGUE, config("t"), context=ctx)
        assert out["solved"] and out["trial"] == 2
        assert validated(store, "t:1") is True
