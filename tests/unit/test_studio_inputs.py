"""What a Studio user meets before a run: every served graph's input fields carry a description
with an example (Studio shows it beside the box), and the server guide gives each graph an
example input that its schema takes and its data holds."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from reflexion.alfworld.games import resolve_game
from reflexion.harness.bench.datasets import load_hotpotqa

ROOT = Path(__file__).resolve().parents[2]
SERVED: dict[str, Any] = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
GUIDE = ROOT / "docs" / "guide" / "server.md"


def served(graph_id: str) -> Any:
    """The compiled graph ``langgraph.json`` serves under ``graph_id``."""
    path, name = SERVED[graph_id]["path"].split(":")
    return getattr(importlib.import_module(f"reflexion.graphs.{Path(path).stem}"), name)


def examples() -> dict[str, dict[str, Any]]:
    """The server guide's example input of each graph (a row that says "as `x`" takes x's)."""
    section = GUIDE.read_text(encoding="utf-8").split("### An example input for each graph")[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", section.split("\n\n**")[0], flags=re.M)
    found: dict[str, dict[str, Any]] = {}
    for graph_id, cell in rows:
        same = re.fullmatch(r"as `(\w+)`", cell)
        found[graph_id] = found[same.group(1)] if same else json.loads(cell.strip("`"))
    return found


@pytest.mark.parametrize("graph_id", sorted(SERVED))
def test_every_input_field_has_a_description_with_an_example(graph_id):
    fields = served(graph_id).get_input_jsonschema()["properties"]
    plain = {k for k, v in fields.items() if "Example" not in v.get("description", "")}
    assert plain == set(), f"{graph_id}: fields without an example: {plain}"


def test_the_server_guide_gives_every_served_graph_an_example_its_schema_takes():
    given = examples()
    assert sorted(given) == sorted(SERVED)
    for graph_id, example in given.items():
        fields = served(graph_id).get_input_jsonschema()["properties"]
        assert set(example) <= set(fields), graph_id
        assert example.get("task") or example.get("game"), graph_id


def test_the_examples_hold_what_each_graph_needs():
    """ReAct's question is one of the bundled sample's (its offline corpus), with the sample's
    answer; the programming task defines its entry point; the game is bundled."""
    given = examples()
    sample = {q.question.strip(): q.answer for q in load_hotpotqa()}
    react = given["reflexion_react"]
    assert sample.get(react["task"].strip()) == react["reference"]
    code = given["reflexion_programming"]
    assert f"def {code['entry_point']}(" in code["task"]
    assert (
        resolve_game(given["reflexion_alfworld"]["game"]).name
        == (given["reflexion_alfworld"]["game"])
    )
