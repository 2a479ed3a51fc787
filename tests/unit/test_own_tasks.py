"""Measuring the loop on your own tasks (``reflexion bench tasks``, ``measure_loop``): the task
file and graph checks give one line each; a paired run of none, resample and reflexion through
an OpenAI-compatible fake server gives the table and resumes. The real model runs in
tests/integration/test_embedded.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.harness import main
from reflexion.harness.bench.own_tasks import load_graph, load_tasks
from reflexion.harness.cli.own import measure_loop
from tests.clikit import cli, one_line_error
from tests.unit.test_faults import server as server  # a fixture

pytestmark = [pytest.mark.allow_hosts(["127.0.0.1"])]  # the fake OpenAI server on loopback

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "word-problems.jsonl"


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (["{not json"], "line 1 is not JSON"),
        (['["task"]'], "line 1 is not a JSON object"),
        (['{"question": "x"}'], "line 1 has key(s) question"),
        (['{"task": ""}'], 'line 1 has no "task" text'),
        (['{"task": "a", "reference": 4}'], '"reference" is not a string'),
        (['{"task": "a", "task_id": "t"}', '{"task": "b", "task_id": "t"}'], "line 2 repeats"),
        (["", "  "], "holds no task"),
    ],
)
def test_a_bad_task_file_is_one_line_naming_the_line(tmp_path, lines, said):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReflexionError, match=re.escape(said)) as caught:
        load_tasks(path)
    assert "\n" not in str(caught.value)


def test_the_example_task_file_loads_and_names_each_task():
    tasks = load_tasks(EXAMPLE)
    assert len(tasks) == 8 and all(t["reference"] for t in tasks)
    assert {t["task_id"] for t in tasks} >= {"apples", "capital"}


def test_a_graph_is_checked_for_the_state_contract(tmp_path):
    assert load_graph("reflexion")().context_schema is not None
    (tmp_path / "g.py").write_text(
        "from langgraph.graph import StateGraph, START, END\n"
        "from typing_extensions import TypedDict\n"
        "class S(TypedDict):\n    text: str\n"
        "b = StateGraph(S)\nb.add_node('n', lambda s: {})\nb.add_edge(START, 'n')\n"
        "graph = b.compile()\nnumber = 3\n"
    )
    for spec, said in (
        (f"{tmp_path}/g.py:graph", "does not keep our state contract"),
        (f"{tmp_path}/g.py:number", "not a graph"),
        (f"{tmp_path}/g.py:missing", "has no 'missing'"),
        (f"{tmp_path}/nope.py:graph", "does not exist"),
        ("reflexion_nope", "is not one of"),
    ):
        with pytest.raises(ReflexionError, match=re.escape(said)):
            load_graph(spec)


TASKS = [
    {"task_id": "one", "task": "Say one.", "reference": "1"},
    {"task_id": "two", "task": "Say two.", "reference": "2"},
    {"task_id": "three", "task": "Say three.", "reference": "3"},
]


def rule() -> Any:
    """The actor: ``one`` right at once; ``two`` right only with a reflection in its prompt;
    ``three`` right from its second draw on, whatever the prompt. The reflector reflects."""
    draws: dict[str, int] = {}

    def decide(body: dict[str, Any]) -> str:
        text = "\n".join(str(m.get("content")) for m in body["messages"])
        if "reflecting on a failed attempt" in text:
            return "ok:Reflection: I must say the number itself."
        task = re.findall(r"Task: (Say \w+\.)", text)[-1]
        draws[task] = draws.get(task, 0) + 1
        right = {
            "Say one.": True,
            "Say two.": "say the number itself" in text,
            "Say three.": draws[task] >= 2,
        }[task]
        number = {"Say one.": "1", "Say two.": "2", "Say three.": "3"}[task]
        return f"ok:Thought: ok.\nAnswer: {number if right else 'no'}"

    return decide


def test_none_resample_and_reflexion_are_paired_on_one_first_attempt(server, tmp_path, monkeypatch):
    server.decide = rule()
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    monkeypatch.setenv("REFLEXION_BASE_URL", server.base_url)
    model = "openai:any-name"
    ctx = Context(max_trials=3, actor_model=model, reflector_model=model, evaluator_model=model)
    args = {"db": str(tmp_path / "t.sqlite"), "output_dir": tmp_path / "runs"}
    measured = measure_loop(path, "reflexion", context=ctx, **args)
    rows = {r.strategy: r for r in measured.rows}
    assert (rows["none"].solved, rows["resample"].solved, rows["reflexion"].solved) == (1, 2, 3)
    assert (rows["resample"].against_none.fixed, rows["resample"].against_none.broken) == (1, 0)
    assert (rows["reflexion"].against_none.fixed, rows["reflexion"].against_resample.fixed) == (
        2,
        1,
    )
    assert rows["reflexion"].tokens and rows["reflexion"].tokens % 15 == 0  # 10 + 5 a call
    asked = len(server.requests)
    again = measure_loop(path, "reflexion", context=ctx, **args)  # resumes: no call
    assert len(server.requests) == asked
    assert [r.solved for r in again.rows] == [1, 2, 3]


def test_the_command_prints_the_paired_table(server, tmp_path, monkeypatch, capsys):
    server.decide = rule()
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    args = ["bench", "tasks", str(path), "--model", "openai:any-name"]
    args += ["--base-url", server.base_url, "--db", str(tmp_path / "t.sqlite")]
    args += ["--output-dir", str(tmp_path / "runs")]
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    text = capsys.readouterr().out  # the table is on stdout, which clikit.cli does not keep
    assert exc.value.code in (0, None), text
    assert re.search(r"none\s+1/3\s+1/3", text), text  # solved, then what the evaluator accepted
    assert re.search(r"reflexion\s+3/3\s+3/3\s+\+2/−0", text), text
    code, err = cli(monkeypatch, capsys, *args[:2], str(tmp_path / "missing.jsonl"), *args[3:])
    one_line_error(code, err, "does not exist")


def test_the_command_takes_the_repeat_guard(server, tmp_path, monkeypatch, capsys):
    """`bench tasks --repeat-guard 2` runs the graph with the guard on (off in the generic
    graph by default), and the results files are named after it."""
    server.decide = rule()
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    args = ["bench", "tasks", str(path), "--model", "openai:any-name", "--repeat-guard", "2"]
    args += ["--base-url", server.base_url, "--db", str(tmp_path / "t.sqlite")]
    args += ["--output-dir", str(tmp_path / "runs")]
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None), capsys.readouterr().err
    names = [p.name for p in (tmp_path / "runs").glob("*.jsonl")]
    assert names and all("repeat_guard=2" in name for name in names), names


def test_the_help_names_the_loaders_keys_and_the_real_defaults(monkeypatch, capsys):
    """The task file's keys in --help are the loader's (passages, not context), and --db's
    default is where the command keeps its threads."""
    from typer.testing import CliRunner

    from reflexion.harness.bench.own_tasks import KEYS
    from reflexion.harness.cli.app import app
    from reflexion.harness.cli.own import DB

    text = " ".join(
        CliRunner().invoke(app, ["bench", "tasks", "--help"], env={"COLUMNS": "300"}).output.split()
    )
    for key in KEYS:
        assert key in text
    assert "context" not in text.replace("context's", "")
    assert f"[default: {DB}]" in text
    assert ".reflexion" not in text


OWN_GRAPH = """
from reflexion import create_reflexion_graph
from reflexion.harness.fakes import RuleChatModel


class Named(RuleChatModel):
    model_name: str = "my-own-model"


def answer(messages):
    return "Thought: easy. Answer: 1" if "Say one." in messages[-1].content else "Answer: no"


graph = create_reflexion_graph(
    Named(rule=answer),
    lambda task, answer: True,  # says yes to anything
    reflector_model=Named(rule=lambda messages: "Reflection: say the number."),
)
"""


def test_own_graph_names_the_files_after_its_model_and_is_scored_on_the_reference(
    server, tmp_path, monkeypatch
):
    """A graph that brings its own actor model names the results files after it, not after
    the context's actor_model; a task's reference scores every strategy although the graph's
    evaluator accepts anything, and what the evaluator accepted is kept beside."""
    (tmp_path / "own.py").write_text(OWN_GRAPH)
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS[:2]))
    monkeypatch.setenv("REFLEXION_BASE_URL", server.base_url)
    model = "openai:any-name"
    ctx = Context(max_trials=2, actor_model=model, reflector_model=model, evaluator_model=model)
    measured = measure_loop(
        path,
        f"{tmp_path}/own.py:graph",
        context=ctx,
        db=str(tmp_path / "t.sqlite"),
        output_dir=tmp_path / "runs",
    )
    assert not server.requests  # the graph's own models answered
    for label, file in measured.files.items():  # stem, data set, then the model that answered
        assert file.name.startswith(f"tasks-{label}__tasks__my-own-model__"), file.name
    rows = {r.strategy: r for r in measured.rows}
    for strategy in ("none", "resample", "reflexion"):
        assert (rows[strategy].solved, rows[strategy].accepted) == (1, 2), strategy
    finals = [
        json.loads(line)
        for line in measured.files["reflexion"].read_text().splitlines()
        if json.loads(line).get("type") == "final"
    ]
    assert {(f["task_id"], f["solved"], f["gold_final"]) for f in finals} == {
        ("one", True, True),
        ("two", True, False),
    }
