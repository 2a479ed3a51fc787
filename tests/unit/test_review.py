"""Human review of reflections: the review node's interrupt and its resume (keep, edit,
drop), LangGraph's interrupt_before the reflector, the bench runner's pending interrupts and
the CLI's --review prompt."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import stream_thread
from reflexion.harness.cli.app import main
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.qa.context import QAContext
from tests.conftest import answer
from tests.unit.test_faults import server as server  # a fixture

PRAGUE = {"task": "Which river flows through Prague?", "passages": "", "reference": "Vltava"}
PROPOSED = "I named the Elbe; I should check which river crosses Prague."
REVIEW = QAContext(max_trials=2, review_reflections=True, retry="informed")


def build() -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
    reflector = ScriptedChatModel(replies=[f"Reflection: {PROPOSED}"])
    graph = qa_builder(with_passages=False, actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    return graph, actor, reflector


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def pause(graph: Any, ctx: Context = REVIEW) -> Any:
    """Run until the review interrupt; return the paused state."""
    chunks = list(graph.stream(PRAGUE, cfg(), context=ctx, stream_mode="updates"))
    assert "__interrupt__" in chunks[-1]
    return graph.get_state(cfg())


def test_review_pauses_with_the_proposal_and_keeps_it_on_accept():
    """With review on the thread stops at the review node, showing the proposed reflection,
    the trial, its feedback and the task; resuming with {"action": "accept"} keeps the
    reflection, and the reflector model is not called again."""
    graph, actor, reflector = build()
    paused = pause(graph)
    assert paused.next == ("review",)
    value = paused.interrupts[0].value
    assert value["reflection"] == PROPOSED and value["trial"] == 1
    assert value["task"] == PRAGUE["task"] and "INCORRECT" in value["feedback"].upper()
    assert len(actor.prompts) == 1  # the next trial waits for the review
    out = graph.invoke(Command(resume={"action": "accept"}), cfg(), context=REVIEW)
    assert out["solved"] and out["reflections"] == [PROPOSED]
    assert PROPOSED in actor.prompt_text(1)
    assert len(reflector.prompts) == 1
    assert graph.get_state(cfg()).values.get("pending_review") is None


@pytest.mark.parametrize("resume", ["", "   ", {"reflection": " "}])
def test_other_accept_answers_keep_the_reflection(resume: Any):
    """An empty or blank string and an empty edit also keep the proposal."""
    graph, _, _ = build()
    pause(graph)
    out = graph.invoke(Command(resume=resume), cfg(), context=REVIEW)
    assert out["reflections"] == [PROPOSED]


@pytest.mark.parametrize(
    "resume", ["Prague is on the Vltava.", {"reflection": "Prague is on the Vltava."}]
)
def test_an_edit_replaces_the_reflection_in_state_and_in_the_next_prompt(resume: Any):
    """A string or {"reflection": text} replaces the newest reflection: the state holds the
    edit, the next trial's prompt shows it and not the proposal; the reflector ran once."""
    graph, actor, reflector = build()
    pause(graph)
    out = graph.invoke(Command(resume=resume), cfg(), context=REVIEW)
    assert out["reflections"] == ["Prague is on the Vltava."]
    assert "Prague is on the Vltava." in actor.prompt_text(1)
    assert PROPOSED not in actor.prompt_text(1)
    assert len(reflector.prompts) == 1


def test_drop_removes_the_reflection():
    """{"action": "drop"} removes the proposal: the next trial has no reflections section."""
    graph, actor, _ = build()
    pause(graph)
    out = graph.invoke(Command(resume={"action": "drop"}), cfg(), context=REVIEW)
    assert out["reflections"] == []
    assert PROPOSED not in actor.prompt_text(1) and "reflections" not in actor.prompt_text(1)


def test_an_unreadable_answer_is_a_one_line_error():
    """A resume value the review cannot read raises a one-line ReflexionError naming the
    accepted forms."""
    graph, _, _ = build()
    pause(graph)
    with pytest.raises(ReflexionError) as exc:
        graph.invoke(Command(resume={"action": "maybe"}), cfg(), context=REVIEW)
    assert "\n" not in str(exc.value) and "'action': 'drop'" in str(exc.value)


def test_review_off_by_default_adds_no_step():
    """Without review the reflector goes straight to the actor: no review step runs and no
    reflection waits."""
    graph, _, _ = build()
    chunks = list(graph.stream(PRAGUE, cfg(), context=Context(max_trials=2), stream_mode="updates"))
    assert [next(iter(c)) for c in chunks] == [
        "actor",
        "evaluator",
        "reflector",
        "actor",
        "evaluator",
        "select_answer",
    ]
    assert graph.get_state(cfg()).values.get("pending_review") is None


def test_interrupt_before_the_reflector_then_resume():
    """LangGraph's run-level interrupt_before=["reflector"] stops a failed trial before the
    reflector (state.next == ("reflector",), no reflector call); resuming with None reflects
    and finishes the thread."""
    graph, actor, reflector = build()
    list(graph.stream(PRAGUE, cfg(), context=Context(max_trials=2), interrupt_before=["reflector"]))
    paused = graph.get_state(cfg())
    assert paused.next == ("reflector",)
    assert reflector.prompts == [] and len(actor.prompts) == 1
    out = graph.invoke(None, cfg(), context=Context(max_trials=2))
    assert out["solved"] and out["reflections"] == [PROPOSED]
    assert len(reflector.prompts) == 1


def test_stream_thread_returns_pending_interrupts_and_resumes_with_a_command():
    """The bench runner's stream_thread reports the pending interrupt (its id and the
    proposal) and the next node, and resumes when given Command(resume=...)."""
    graph, _, _ = build()
    events: list[str] = []
    state = stream_thread(graph, "t", PRAGUE, REVIEW, lambda e, _p: events.append(e))
    assert state["next"] == ["review"]
    assert state["interrupts"][0]["value"]["reflection"] == PROPOSED
    assert state["interrupts"][0]["id"]
    state = stream_thread(graph, "t", Command(resume="Edited."), REVIEW)
    assert state["interrupts"] == [] and state["next"] == []
    assert state["solved"] and state["reflections"] == ["Edited."]
    assert events == ["trial", "reflection"]


# ---- the CLI ----------------------------------------------------------------------------------

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


class Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def cli_args(server: Any, tmp_path: Any) -> list[str]:
    return [
        "reflexion",
        "run",
        "Which river flows through Prague?",
        "--reference",
        "Vltava",
        "--model",
        "openai:any-name",
        "--base-url",
        server.base_url,
        "--trials",
        "2",
        "--db",
        str(tmp_path / "t.sqlite"),
        "--thread-id",
        "cli-1",
        "--review",
    ]


def test_cli_review_without_a_terminal_is_a_one_line_error(server, tmp_path, monkeypatch, capsys):
    """`run --review` with stdin not a terminal fails at once with one line on stderr and
    exit code 2, instead of waiting for an answer."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys, "argv", cli_args(server, tmp_path))
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--review" in err and "terminal" in err
    assert server.requests == []


def test_cli_review_prompts_and_applies_the_typed_edit(server, tmp_path, monkeypatch, capsys):
    """`run --review` shows the proposed reflection, reads the person's replacement and the
    thread goes on with it: the next actor prompt and the saved thread hold the edit."""

    def decide(body: dict[str, Any]) -> str:
        if "reflecting on a failed attempt" in body["messages"][0]["content"]:
            return f"ok:Reflection: {PROPOSED}"
        last = body["messages"][-1]["content"]
        return "ok:" + answer("Vltava" if "TYPED-EDIT" in last else "Elbe")

    server.decide = decide
    monkeypatch.setattr(sys, "stdin", Terminal("TYPED-EDIT: it is the Vltava.\n"))
    monkeypatch.setattr(sys, "argv", cli_args(server, tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr().out
    assert exc.value.code in (0, None), out
    assert PROPOSED in out and "replaced" in out and "solved" in out
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert "TYPED-EDIT: it is the Vltava." in prompts[-1] and PROPOSED not in prompts[-1]
    monkeypatch.setattr(
        sys, "argv", ["reflexion", "show", "cli-1", "--db", str(tmp_path / "t.sqlite")]
    )
    with pytest.raises(SystemExit):
        main()
    shown = capsys.readouterr().out
    assert "TYPED-EDIT: it is the Vltava." in shown and PROPOSED not in shown
