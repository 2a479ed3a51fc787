"""One source of defaults: every ``bench`` command run with no option runs each served graph's
context defaults, the configuration its family's figures were measured with. Compared field
by field, the reflexion variant of each command against the graph ``langgraph.json`` serves."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from reflexion.alfworld.context import AlfworldContext
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.own_tasks import SERVED, load_graph
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from tests.unit.test_presets import _workdir as _workdir  # a fixture
from tests.unit.test_presets import captured_contexts

COMMANDS: list[tuple[str, list[str], type[Any]]] = [
    ("programming", ["bench", "programming"], CodeContext),
    ("programming", ["bench", "programming", "--dataset", "humaneval-rs"], CodeContext),
    ("cot-gt", ["bench", "hotpotqa"], QAContext),
    ("cot", ["bench", "hotpotqa", "--agent", "cot"], QAContext),
    ("react", ["bench", "hotpotqa", "--agent", "react"], ReActContext),
    ("alfworld", ["bench", "alfworld"], AlfworldContext),
]


def differences(ran: Any, served: Any) -> dict[str, tuple[Any, Any]]:
    return {
        f.name: (getattr(ran, f.name), getattr(served, f.name))
        for f in dataclasses.fields(served)
        if getattr(ran, f.name) != getattr(served, f.name)
    }


@pytest.mark.usefixtures("_workdir")
@pytest.mark.parametrize(
    ("agent", "command", "schema"), COMMANDS, ids=[" ".join(c[1]) for c in COMMANDS]
)
def test_a_bench_command_without_options_runs_the_served_graph_s_defaults(
    monkeypatch, capsys, agent, command, schema
):
    served = AGENTS[agent].build().context_schema
    assert served is schema
    contexts = captured_contexts(monkeypatch, capsys, *command)
    ran = next(c for c in contexts if c.strategy == "reflexion" and c.max_trials > 1)
    assert type(ran) is schema
    found = differences(ran, schema())
    if command == ["bench", "programming"]:  # Python: rustc's fixes cannot act
        assert found.pop("compiler_fixes", None) in (None, (False, True))
    assert found == {}


TASKS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "word-problems.jsonl"


@pytest.mark.usefixtures("_workdir")
@pytest.mark.parametrize("graph", sorted(SERVED))
def test_bench_tasks_without_options_runs_the_chosen_graph_s_defaults(monkeypatch, capsys, graph):
    """``bench tasks --graph ID`` measures the graph as it is served: its context's defaults,
    not the generic graph's."""
    schema = load_graph(graph)().context_schema
    contexts = captured_contexts(
        monkeypatch, capsys, "bench", "tasks", str(TASKS), "--graph", graph
    )
    ran = next(c for c in contexts if c.strategy == "reflexion")
    assert type(ran) is schema
    assert differences(ran, schema()) == {}
