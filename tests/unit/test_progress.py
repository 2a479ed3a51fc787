"""Live progress on LangGraph's custom stream (reflexion.core.progress): each node reports
what it did, so a client streaming ``["updates", "custom"]`` can draw a progress view and tell a
rejected answer from the one the thread returns. Scripted models."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from reflexion import Context, create_reflexion_graph
from reflexion.core.progress import event_of
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from tests.conftest import answer

PRAGUE = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava.",
    "reference": "Vltava",
    "task_id": "q",
}


def events(graph: Any, task: dict[str, Any], ctx: Any) -> list[tuple[str, dict[str, Any]]]:
    config = {"configurable": {"thread_id": "t"}}
    found = []
    for mode, chunk in graph.stream(task, config, context=ctx, stream_mode=["updates", "custom"]):
        if mode == "custom" and (event := event_of(chunk)) is not None:
            found.append(event)
    return found


def test_a_rejected_answer_and_the_returned_one_are_told_apart():
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
    reflector = ScriptedChatModel(replies=["Reflection: The context names the river."])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    found = events(graph, PRAGUE, Context(max_trials=3))
    assert [name for name, _ in found] == [
        "trial_started",
        "attempt_scored",
        "reflection_written",
        "trial_started",
        "attempt_scored",
        "answer_chosen",
    ]
    first, second = found[1][1], found[4][1]
    assert (first["trial"], first["record"]["answer"], first["record"]["success"]) == (
        1,
        "Elbe",
        False,
    )
    assert "INCORRECT" in first["record"]["feedback"]
    assert (second["record"]["answer"], second["record"]["success"]) == ("Vltava", True)
    assert found[2][1] == {"trial": 1, "text": "The context names the river."}
    assert found[5][1] == {
        "answer": "Vltava",
        "solved": True,
        "trial": 2,
        "why": "best",
        "stopped": "solved",
    }


def test_the_answer_chosen_says_which_attempt_and_why():
    """Two failed attempts, the first scored higher: under ``best`` it is the one returned,
    under ``last`` the last is (the paper's policy)."""
    scores = {"close": 0.4, "far": 0.1}  # both below the 0.5 that counts as success
    for policy, chosen in (("best", ("close", 1)), ("last", ("far", 2))):
        replies = iter(["Answer: close", "Answer: far"])
        graph = create_reflexion_graph(
            lambda _inputs, r=replies: next(r),
            lambda task, reply: scores[reply],
            reflector_model=ScriptedChatModel(replies=["Reflection: nearer."]),
            checkpointer=InMemorySaver(),
        )
        found = events(graph, {"task": "Guess."}, Context(max_trials=2, select_answer=policy))
        name, chosen_event = found[-1]
        assert name == "answer_chosen"
        assert (chosen_event["answer"], chosen_event["trial"]) == chosen
        assert chosen_event["why"] == policy and chosen_event["solved"] is False
        assert chosen_event["stopped"] == "max_trials"
        assert [p["record"]["success"] for n, p in found if n == "attempt_scored"] == [
            False,
            False,
        ]


def test_outside_a_run_the_events_go_nowhere():
    from reflexion.core.progress import emit

    emit("trial_started", trial=1)  # no run, no writer: nothing happens
    assert event_of({"other": 1}) is None
