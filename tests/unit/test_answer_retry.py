"""How a chain-of-thought retry is drawn: fresh first (as the none baseline draws it, the
memory speaking only when that repeats a rejected answer) or with the memory (the paper), and
the seeds that make strategies forking one trial 1 draw alike (Context.retry,
Context.seeds)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel, SeededScriptedChatModel
from reflexion.qa.context import QAContext
from tests.conftest import answer

TASK = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava.",
    "reference": "Vltava",
    "task_id": "q-prague",
}
LESSON = "Reflection: The question names the city; read its sentence again."


def run(actor: ScriptedChatModel, ctx: Context) -> dict[str, Any]:
    reflector = ScriptedChatModel(replies=[LESSON])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(TASK, config, context=ctx)
    return dict(graph.get_state(config).values)


def test_a_fresh_first_retry_with_a_new_answer_is_drawn_from_trial_ones_prompt():
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
    state = run(actor, QAContext(max_trials=2, retry="informed_once"))
    assert state["solved"] is True
    assert len(actor.prompts) == 2
    assert actor.prompt_text(1) == actor.prompt_text(0)  # what none would have drawn
    assert state["reflections"] == ["The question names the city; read its sentence again."]


@pytest.mark.parametrize(
    "fresh",
    [
        [answer("the Elbe.")],  # a rejected answer again
        ["Thought: I cannot tell.", "still no action"],  # no answer, even when asked again
    ],
)
def test_a_fresh_draw_repeating_a_rejected_answer_or_giving_none_turns_to_the_memory(fresh):
    actor = ScriptedChatModel(replies=[answer("Elbe"), *fresh, answer("Vltava")])
    state = run(actor, QAContext(max_trials=2, retry="informed_once"))
    assert state["solved"] is True
    assert len(actor.prompts) == 2 + len(fresh)
    assert "read its sentence again" not in actor.prompt_text(1)
    assert "read its sentence again" in actor.prompt_text(len(fresh) + 1)


def test_the_memory_draw_keeps_the_redraws_and_the_correcting_turn():
    """After the fresh draw, the memory retry is the one retry=informed makes: redrawn
    while it repeats, then one turn asking for another answer."""
    replies = [answer("Elbe"), answer("Elbe"), answer("Elbe"), answer("elbe"), answer("Vltava")]
    actor = ScriptedChatModel(replies=replies)
    state = run(actor, QAContext(max_trials=2, retry="informed_once", repeat_guard=1))
    assert state["solved"] is True
    assert len(actor.prompts) == 5  # trial 1, fresh, memory, one redraw, correcting turn
    assert '"Elbe" was already judged incorrect' in actor.prompts[4][-1].text


def test_retry_informed_draws_every_retry_with_the_memory():
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
    state = run(actor, QAContext(max_trials=2, retry="informed"))
    assert state["solved"] is True
    assert "read its sentence again" in actor.prompt_text(1)


@pytest.mark.parametrize("strategy", ["none", "reflexion"])
def test_strategies_draw_their_fresh_retry_with_the_same_seed(strategy):
    """A rerun draws the same, and none's retry and a fresh-first retry get one seed, so the
    two differ only where the memory acts."""

    def seeds(ctx: Context) -> list[Any]:
        actor = SeededScriptedChatModel(replies=[answer(a) for a in ("Elbe", "Danube", "Rhine")])
        run(actor, ctx)
        return [kw.get("seed") for kw in actor.kwargs_seen]

    ctx = Context(max_trials=3, strategy=strategy)
    drawn = seeds(ctx)
    baseline = seeds(Context(max_trials=3, strategy="none"))
    assert drawn[0] is None  # trial 1 draws as the run does
    assert None not in drawn[1:] and drawn[1] != drawn[2]  # named by the trial
    assert drawn == seeds(ctx) == baseline
    assert seeds(QAContext(max_trials=3, strategy=strategy, seeds="process")) == [None] * 3


def test_seeds_are_named_by_the_question():
    def first_retry_seed(task_id: str) -> Any:
        actor = SeededScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
        reflector = ScriptedChatModel(replies=[LESSON])
        graph = qa_builder(actor_model=actor, reflector_model=reflector).compile()
        graph.invoke({**TASK, "task_id": task_id}, context=Context(max_trials=2))
        return actor.kwargs_seen[1]["seed"]

    assert first_retry_seed("a") != first_retry_seed("b")


def test_resample_redraws_a_rejected_answer_from_trial_ones_prompt_on_reflexions_budget():
    """retry=resample under strategy none (the equal-budget baseline): the retry draws from
    trial 1's prompt, and draws again while it repeats an answer judged incorrect, as often as
    a fresh-first retry could (1 + repeat_guard + the correcting turn); no reflection is written
    and none is shown."""
    reflector = ScriptedChatModel(replies=[LESSON])
    replies = [answer("Elbe"), answer("the Elbe."), answer("Elbe"), answer("Vltava")]
    actor = ScriptedChatModel(replies=replies)
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "resample"}}
    ctx = QAContext(max_trials=2, strategy="none", retry="resample", repeat_guard=2)
    graph.invoke(TASK, config, context=ctx)
    state = dict(graph.get_state(config).values)
    assert state["solved"] is True and state["answer"] == "Vltava"
    assert len(actor.prompts) == 4
    assert all(actor.prompt_text(n) == actor.prompt_text(0) for n in range(1, 4))
    assert reflector.prompts == [] and not state.get("reflections")


def test_resample_keeps_the_last_draw_when_every_draw_repeats():
    actor = ScriptedChatModel(replies=[answer("Elbe")] * 5)
    ctx = QAContext(max_trials=2, strategy="none", retry="resample", repeat_guard=1)
    state = run(actor, ctx)
    assert len(actor.prompts) == 1 + 1 + 3  # trial 1, the fresh draw, 1 + 1 + 1 redraws
    assert [e["answer"] for e in state["evaluations"]] == ["Elbe", "Elbe"]
