"""The loop owns the trial: no actor or evaluator module but the loop's (graphs/loop.py) counts
the trial, emits ``trial_started`` or builds a trial record; the actors that
are subgraphs of their own (ReAct, ALFWorld) included: their first node is the loop's."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State, TrialInput
from reflexion.core.steps import Steps, block
from reflexion.graphs.loop import build_reflexion_graph, trial_start

ROOT = Path(__file__).parents[2]


def _bookkeeping(tree: ast.AST) -> list[str]:
    """What of the trial's bookkeeping a module does: ``trial_started`` events,
    ``"trial": <...>.trial + 1`` in a state update (a dict with a spread or the
    attempt's keys; the trial's number among a prompt's inputs is no count), trial records
    built."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            first = node.args[0] if node.args else None
            if (
                name == "emit"
                and isinstance(first, ast.Constant)
                and first.value == "trial_started"
            ):
                found.append(f"{node.lineno}: emits trial_started")
            if name in {"TrialRecord", "CodeTrialRecord"}:
                found.append(f"{node.lineno}: builds a trial record")
        keys = {k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant)}
        # a state update (a spread, or the attempt's keys), not a prompt's inputs
        update = None in getattr(node, "keys", []) or bool(keys & {"answer", "trajectory"})
        if isinstance(node, ast.Dict) and update:
            for key, value in zip(node.keys, node.values, strict=True):
                counted = (
                    isinstance(value, ast.BinOp)
                    and isinstance(value.op, ast.Add)
                    and isinstance(value.left, ast.Attribute)
                    and value.left.attr == "trial"
                )
                if isinstance(key, ast.Constant) and key.value == "trial" and counted:
                    found.append(f"{node.lineno}: counts the trial")
    return found


def test_no_family_node_keeps_the_trials_books():
    modules = [*sorted((ROOT / "nodes").rglob("*.py")), *sorted((ROOT / "graphs").rglob("*.py"))]
    offenders = {}
    for path in modules:
        name = path.relative_to(ROOT).as_posix()
        if name == "graphs/loop.py":
            continue
        found = _bookkeeping(ast.parse(path.read_text()))
        if found:
            offenders[name] = found
    assert not offenders, f"only graphs/loop.py keeps the trial's books: {offenders}"


def test_the_check_sees_the_loop():
    """The check finds what it looks for where it is (so an empty result above means
    something)."""
    found = _bookkeeping(ast.parse((ROOT / "graphs/loop.py").read_text()))
    for what in ("trial_started", "counts the trial", "record"):
        assert any(what in f for f in found), what


@dataclass(kw_only=True)
class Play(TrialInput):
    """A subgraph actor's state: the game it is given, and the kind its fresh trial sets."""

    game: str = ""
    kind: str = ""


def resolve(game: str) -> str:
    """A game's name, or the one-line error of a game that does not exist."""
    if game == "bad":
        raise ReflexionError("no game named 'bad'")
    return game.upper()


def start_graph(empty_task: str | None = None) -> Any:
    """A one-node actor subgraph whose ``begin`` is the loop's, around a game-like check and
    fresh trial that say on the custom stream when they run."""

    def check(state: Play, runtime: Runtime[Context]) -> Steps[str]:
        get_stream_writer()({"step": "check"})
        return (yield from block(resolve, state.game))

    def fresh(state: Play, runtime: Runtime[Context], checked: str) -> Steps[dict[str, Any]]:
        get_stream_writer()({"step": "fresh", "checked": checked})
        yield from ()  # no call out: the trial starts from its game alone
        return {"task": f"Your task is to: put some mug on shelf ({checked}).", "kind": "put"}

    builder = StateGraph(Play, context_schema=Context)
    begin = trial_start(
        fresh, family=lambda s: f"game-{s.kind}", empty_task=empty_task, check=check
    )
    builder.add_node("begin", begin)
    builder.add_edge(START, "begin")
    return builder.compile()


def streamed(graph: Any, given: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The custom chunks of a run, in order, and its last values."""
    chunks, values = [], {}
    for mode, chunk in graph.stream(given, context=Context(), stream_mode=["custom", "values"]):
        if mode == "custom":
            chunks.append(chunk)
        else:
            values = chunk
    return chunks, values


def test_a_subgraph_actor_s_first_node_keeps_the_trial_s_books():
    """``trial_start``: the family's check, then ``trial_started``, then its fresh trial
    (handed what the check returned); the trial counted."""
    graph = start_graph()
    chunks, values = streamed(graph, {"game": "g1"})
    assert chunks == [
        {"step": "check"},
        {"reflexion": "trial_started", "trial": 1},
        {"step": "fresh", "checked": "G1"},
    ]
    assert values["task"] == "Your task is to: put some mug on shelf (G1)."
    assert (values["kind"], values["trial"]) == ("put", 1)
    # a later trial counts on
    chunks, values = streamed(graph, {"game": "g1", "trial": 2})
    assert chunks[1] == {"reflexion": "trial_started", "trial": 3}
    assert values["trial"] == 3


def test_a_failed_check_or_an_empty_task_starts_no_trial():
    graph = start_graph()
    chunks: list[Any] = []
    with pytest.raises(ReflexionError) as bad:
        for _, chunk in graph.stream({"game": "bad"}, stream_mode=["custom"]):
            chunks.append(chunk)
    assert bad.value.args == ("no game named 'bad'",)
    assert chunks == [{"step": "check"}]
    graph = start_graph(empty_task="give the question to answer")
    chunks = []
    with pytest.raises(ReflexionError) as empty:
        for _, chunk in graph.stream({"game": "g1", "task": " "}, stream_mode=["custom"]):
            chunks.append(chunk)
    assert empty.value.args == ("the task is empty: give the question to answer",)
    assert chunks == []


def test_an_evaluator_that_returns_no_evaluation_is_a_one_line_error():
    """The loop builds every trial record itself, from an ``Evaluation``: an evaluator that
    hands back a record (or anything else) of its own is refused, naming what to return."""

    def actor(state: State) -> dict[str, Any]:
        return {"answer": "42", "trajectory": ["Answer: 42"]}

    def evaluator(state: State) -> dict[str, Any]:
        return {"evaluations": [{"trial": 1, "success": True}], "solved": True}

    def reflector(state: State) -> dict[str, Any]:
        return {}

    graph = build_reflexion_graph(actor, evaluator, reflector, family="t").compile()
    with pytest.raises(ReflexionError) as bad:
        graph.invoke({"task": "What is six times seven?"})
    assert bad.value.args == (
        "the evaluator returned a dict: return an Evaluation "
        "(reflexion.Evaluation: score, success, feedback)",
    )
