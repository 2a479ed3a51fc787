"""The server side of the benchmark without a server: thread ids, turning streamed parts into
results lines with their usage, final lines identical in shape to a local run's, and the
context schema Studio shows."""

from __future__ import annotations

import json
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.core.errors import ProviderError
from reflexion.graphs.qa import graph as qa_graph
from reflexion.graphs.qa import qa_builder
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.driver import run_benchmark, stream_thread
from reflexion.harness.bench.ledger import BenchTask, Sink, final_row
from reflexion.harness.bench.remote import (
    RemoteRunError,
    RunEvents,
    _snapshot,
    error_text,
    server_thread_id,
)
from reflexion.harness.checkpoints import replay_from, unfinished
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.harness.persistence import open_checkpointer
from tests.conftest import answer
from tests.unit.test_persistence import (
    cut_short_in_the_second_evaluator,
    killed_after_the_second_actor,
)

MODEL_FIELDS = ("actor_model", "evaluator_model", "reflector_model")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ai(text: str, *, input_tokens: int, output_tokens: int, msg_id: str) -> dict[str, Any]:
    return {
        "type": "ai",
        "id": msg_id,
        "content": text,
        "usage_metadata": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def test_server_thread_ids_are_stable_uuids_one_per_thread():
    """The server wants UUID thread ids: ours map to one UUID each, the same on every run
    (so a rerun finds its threads), and different threads never share one."""
    first = server_thread_id("hotpotqa-abc-q1")
    assert first == server_thread_id("hotpotqa-abc-q1")
    assert str(uuid.UUID(first)) == first
    assert server_thread_id("hotpotqa-abc-q2") != first


def test_every_cli_agent_maps_to_a_graph_in_langgraph_json():
    """`--server` submits runs to the graph of each CLI agent: every one is exported."""
    served = json.loads((Path(__file__).parents[2] / "langgraph.json").read_text())["graphs"]
    assert set(AGENTS) == {"cot-gt", "cot", "react", "programming", "alfworld"}
    assert {a.graph_id for a in AGENTS.values()} <= set(served)


def test_streamed_parts_become_trial_and_reflection_events_with_their_usage():
    """Parts in the order the server streams them (task start, model message, update, task
    result) give one trial event per evaluator update and one reflection event per reflector
    update; tokens and calls count for the top-level node that made the message (a subgraph's
    message for its parent node, chunks of one message once), wall time from task start to
    update; subgraph updates and updates without evaluations give no event."""
    clock = Clock()
    events = RunEvents(clock=clock)
    feed = events.feed
    assert feed("metadata", {"run_id": "r1"}) == []
    assert events.started is None
    feed("tasks", {"id": "a1", "name": "actor", "input": {}})
    assert events.started == 100.0
    clock.now = 103.0
    # a ReAct step inside the actor subgraph: its message and update carry the namespace
    feed(
        "messages|actor:a1",
        [
            ai("Thought: x", input_tokens=50, output_tokens=7, msg_id="m1"),
            {"langgraph_node": "think", "langgraph_checkpoint_ns": "actor:a1|think:t1"},
        ],
    )
    assert feed("updates|actor:a1", {"think": {"evaluations": [{"trial": 9}]}}) == []
    # a streamed reply arrives in chunks, then once more whole: counted once
    meta = {"langgraph_node": "actor", "langgraph_checkpoint_ns": "actor:a1"}
    chunk = {"type": "AIMessageChunk", "id": "m2", "content": "Fin"}
    feed("messages", [chunk, meta])
    feed("messages", [{**chunk, "usage_metadata": {"input_tokens": 20, "output_tokens": 3}}, meta])
    feed("messages", [ai("Finish", input_tokens=20, output_tokens=3, msg_id="m2"), meta])
    assert feed("updates", {"actor": {"trial": 1, "answer": "x"}}) == []
    feed("tasks", {"id": "a1", "name": "actor", "result": {}})  # already closed by its update
    feed("tasks", {"id": "e1", "name": "evaluator", "input": {}})
    clock.now = 103.5
    record = {"trial": 1, "answer": "x", "score": 0.0, "success": False, "feedback": "no"}
    [(kind, payload)] = feed("updates", {"evaluator": {"evaluations": [record], "solved": False}})
    assert kind == "trial"
    usage = payload.pop("usage")
    assert payload == record
    assert usage["actor"]["prompt_tokens"] == 70 and usage["actor"]["completion_tokens"] == 10
    assert usage["actor"]["calls"] == 2 and usage["actor"]["wall_s"] == 3.0
    assert usage["evaluator"]["calls"] == 0 and usage["evaluator"]["wall_s"] == 0.5
    feed("tasks", {"id": "r1", "name": "reflector", "input": {}})
    clock.now = 105.0
    feed(
        "messages",
        [
            ai("Reflection: y", input_tokens=30, output_tokens=9, msg_id="m3"),
            {"langgraph_node": "reflector", "langgraph_checkpoint_ns": "reflector:r1"},
        ],
    )
    [(kind, payload)] = feed("updates", {"reflector": {"reflections": ["old", "I should y."]}})
    assert kind == "reflection" and payload["text"] == "I should y."
    assert payload["usage"] == {
        "reflector": {
            "prompt_tokens": 30,
            "completion_tokens": 9,
            "calls": 1,
            "wall_s": 1.5,
            "model_s": 0.0,
        }
    }
    assert events.take() == {} and events.error is None


def test_an_error_part_is_kept_with_the_servers_class_and_message():
    """A run that fails streams an error part; it becomes the task's error reason, written
    like a local run's (`ProviderError: …`)."""
    events = RunEvents()
    events.feed("error", {"error": "ProviderError", "message": "429 Too Many Requests\nmore"})
    assert isinstance(events.error, RemoteRunError)
    assert events.error.kind == "ProviderError"
    assert error_text(events.error) == "ProviderError: 429 Too Many Requests"
    assert error_text(ProviderError("429 Too Many Requests")) == error_text(events.error)


def test_final_lines_have_the_shape_and_values_of_a_local_runs(tmp_path):
    """A final line built from a thread's state (as the server returns it) has the same keys,
    in the same order, and the same answer, verdicts, trials, evaluations and reflections as
    the line a local run writes for that thread, so reports and plots read both alike."""
    actor = ScriptedChatModel(
        replies=["Thought: a.\nAction: Finish[Brno]", "Thought: b.\nAction: Finish[Vltava]"]
    )
    reflector = ScriptedChatModel(replies=["Reflection: I should read the context."])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    task = BenchTask(
        thread_id="t-1",
        input={"task": "Which river?", "passages": "Vltava.", "reference": "Vltava"},
        label="",
        meta={"task_id": "q1", "question": "Which river?", "reference": "Vltava"},
    )
    settings = {"bench": "hotpotqa", "max_trials": 2}
    out = tmp_path / "local.jsonl"
    with out.open("a", encoding="utf-8") as handle:
        [local], errors = run_benchmark(
            graph, [task], Context(max_trials=2), Sink(handle), settings=settings
        )
    assert errors == []
    values = graph.get_state({"configurable": {"thread_id": "t-1"}}).values
    remote = final_row(
        task, values, wall_s=1.0, usage=local["usage"], resumed=False, settings=settings
    )
    assert list(remote) == list(local)
    for key in ("answer", "solved", "trials", "evaluations", "reflections", "settings"):
        assert remote[key] == local[key], key
    assert remote["trials"] == 2 and remote["solved"] is True


def test_every_context_field_is_described_for_studio():
    """Studio shows the context schema: every Context field has a description there, and the
    model fields are plain strings (no enum), so any provider:model string fits."""
    schema = qa_graph.get_context_jsonschema()["properties"]
    for field in fields(Context):
        description = field.metadata.get("description")
        assert isinstance(description, str) and description.strip(), field.name
        assert schema[field.name]["description"] == description
    for name in MODEL_FIELDS:
        assert schema[name]["type"] == "string" and "enum" not in schema[name]


def server_state(snap: Any) -> dict[str, Any]:
    """A local ``StateSnapshot`` as a LangGraph server sends a thread's state (JSON)."""
    return {
        "values": snap.values,
        "next": list(snap.next),
        "tasks": [
            {
                "id": t.id,
                "name": t.name,
                "path": list(t.path),
                "error": None if t.error is None else str(t.error),
                "interrupts": [],
                "checkpoint": None,
                "state": None,
                "result": t.result,
            }
            for t in snap.tasks
        ],
        "checkpoint": {
            "thread_id": "t",
            "checkpoint_ns": "",
            "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
        },
        "parent_checkpoint": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"},
        "metadata": snap.metadata,
        "created_at": snap.created_at,
    }


def test_a_server_run_cancelled_after_a_nodes_writes_is_resumed_not_taken_as_finished(
    tmp_path: Path,
) -> None:
    """A server run cancelled after the actor's writes were saved but before its step's
    checkpoint: the thread's state has no next node but still lists the actor's task, and
    the client reads it as unfinished "after actor" (a rerun resumes the thread instead of
    writing a final line from a trial never evaluated); a finished thread reads as finished."""
    db = tmp_path / "t.sqlite"
    killed_after_the_second_actor(db)
    with open_checkpointer(str(db)) as saver:
        graph = qa_builder(with_passages=False).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "qa-k"}}
        state = server_state(graph.get_state(config))
        assert state["next"] == [] and state["values"]["answer"] == "Vltava"
        assert unfinished(_snapshot(state)) == "after actor"  # type: ignore[arg-type]
        done = qa_builder(
            with_passages=False, actor_model=ScriptedChatModel(replies=[answer("x")])
        ).compile(checkpointer=saver)
        stream_thread(done, "qa-k", None, Context(max_trials=3))
        state = server_state(graph.get_state(config))
        assert unfinished(_snapshot(state)) is None  # type: ignore[arg-type]


def test_a_server_run_cancelled_halfway_through_a_nodes_writes_is_replayed(tmp_path: Path) -> None:
    """A server run cancelled between the evaluator's update and the edge after it: the
    thread's state (as the server sends it, the error as text) reads as cut short "during
    evaluator", and the rerun replays the step from the state's checkpoint id."""
    db = tmp_path / "t.sqlite"
    cut_short_in_the_second_evaluator(db, tmp_path / "r.jsonl")
    with open_checkpointer(str(db)) as saver:
        graph = qa_builder(with_passages=False).compile(checkpointer=saver)
        snap = graph.get_state({"configurable": {"thread_id": "qa-k"}})
        state = server_state(snap)
        assert state["tasks"][0]["error"] == "CancelledError()"
        latest = _snapshot(state)  # type: ignore[arg-type]
        assert unfinished(latest) == "during evaluator"
        assert replay_from(latest) == snap.config["configurable"]["checkpoint_id"]
