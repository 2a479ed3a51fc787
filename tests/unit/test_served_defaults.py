"""One source of defaults: every ``bench`` command run with no option runs each served graph's
context defaults, the configuration its family's figures were measured with. Compared field
by field, the reflexion variant of each command against the graph ``langgraph.json`` serves."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reflexion.alfworld.context import AlfworldContext
from reflexion.graphs.agents import AGENTS
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
