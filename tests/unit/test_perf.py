"""Smoke tests of ``reflexion perf``: each command runs at a tiny size and its figures are sane
(positive, counted right, a speed-up where one must show). Nothing here checks a timing."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console

from reflexion.core.context import Context
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import stream_thread
from reflexion.harness.cli.app import main
from reflexion.harness.fakes import InstantChatModel
from reflexion.harness.perf import learning_cost, machine, overhead
from reflexion.harness.perf.learning_cost import learning_cost_figures
from reflexion.harness.perf.overhead import real_run_figures


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def figures(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    assert doc["machine"]["cores"] >= 1 and doc["machine"]["python"]
    return doc["figures"]


@pytest.fixture(autouse=True)
def _workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Wide enough that no table cell wraps.
    wide = Console(width=250, highlight=False)
    for module in (machine, learning_cost):
        monkeypatch.setattr(module, "console", wide)


# ---- overhead -----------------------------------------------------------------------------------


def test_overhead_times_the_loop_under_each_checkpointer(monkeypatch, capsys, tmp_path):
    code, out, err = cli(
        monkeypatch, capsys, "perf", "overhead", "--trials", "3", "--json", "o.json"
    )
    assert code == 0, err
    assert "SqliteSaver" in out and "machine" in out
    loop = figures(tmp_path / "o.json")["loop"]
    assert [row["checkpointer"] for row in loop] == ["none", "InMemorySaver", "SqliteSaver"]
    for row in loop:
        # One thread of 3 failing trials: actor, evaluator, reflector, actor, …, evaluator,
        # then the answer policy (select_answer).
        assert row["threads"] == 1 and row["trials"] == 3 and row["supersteps"] == 9
        assert row["seconds"] > 0 and row["ms_per_trial"] > row["ms_per_superstep"] > 0


def test_postgres_without_the_extra_is_one_clear_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)
    code, _, err = cli(
        monkeypatch, capsys, "perf", "overhead", "--trials", "3", "--postgres", "postgresql://x/y"
    )
    assert code == 2
    assert err.strip().count("\n") == 0 and "postgres extra" in err


def final(thread: str, wall: float, usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "final", "thread_id": thread, "wall_s": wall, "usage": usage, **extra}


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_real_run_share_outside_model_calls(monkeypatch, capsys, tmp_path):
    node = {"prompt_tokens": 1, "completion_tokens": 1, "calls": 1}
    results = write_lines(
        tmp_path / "r.jsonl",
        [
            {"type": "trial", "thread_id": "a", "usage": {}},
            final(
                "a",
                6.0,
                {
                    "actor": {**node, "wall_s": 4.0, "model_s": 3.5},
                    "evaluator": {**node, "calls": 0, "wall_s": 0.5, "model_s": 0.0},
                },
            ),
            final("b", 4.0, {"actor": {**node, "wall_s": 3.0, "model_s": 3.0}}),
            final("c", 99.0, {"actor": {**node, "wall_s": 1.0, "model_s": 1.0}}, resumed=True),
        ],
    )
    fig = real_run_figures(results)
    assert fig["tasks"] == 2 and fig["wall_s"] == 10.0 and fig["model_s"] == 6.5
    assert fig["share_outside_model_calls"] == pytest.approx(0.35)
    assert fig["share_outside_nodes"] == pytest.approx(0.25)
    assert fig["nodes"]["actor"] == {"calls": 2, "wall_s": 7.0, "model_s": 6.5}

    code, out, err = cli(
        monkeypatch, capsys, "perf", "overhead", "--trials", "0", "--real-run", str(results)
    )
    assert code == 0, err
    assert "35.0%" in out


def test_real_run_of_an_older_file_says_model_time_is_missing(tmp_path):
    results = write_lines(
        tmp_path / "old.jsonl",
        [final("a", 5.0, {"actor": {"prompt_tokens": 1, "calls": 1, "wall_s": 4.0}})],
    )
    fig = real_run_figures(results)
    assert fig["model_time_recorded"] is False and fig["share_outside_model_calls"] is None
    assert fig["share_outside_nodes"] == pytest.approx(0.2)


class SlowModel(InstantChatModel):
    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        time.sleep(0.02)
        return super()._generate(messages, *args, **kwargs)


def test_usage_records_model_time_per_node():
    actor = SlowModel(text=overhead.WRONG_ACTOR)
    reflector = SlowModel(text=overhead.REFLECTION)
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    state = stream_thread(graph, "t", dict(overhead.LOOP_TASK), Context(max_trials=2))
    usage = state["usage"]
    for node in ("actor", "reflector"):
        calls = usage[node]["calls"]
        assert usage[node]["model_s"] >= 0.02 * calls > 0
        assert usage[node]["model_s"] <= usage[node]["wall_s"]
    assert usage["evaluator"]["model_s"] == 0.0  # exact match calls no model


# ---- concurrency --------------------------------------------------------------------------------


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_concurrency_overlaps_calls_to_the_fake_server(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, out, err = cli(
        monkeypatch,
        capsys,
        "perf",
        "concurrency",
        "--tasks",
        "4",
        "--levels",
        "1,2",
        "--latency",
        "0.2",
        "--json",
        "c.json",
    )
    assert code == 0, err
    assert "speed-up" in out
    levels = figures(tmp_path / "c.json")["levels"]
    assert [row["concurrency"] for row in levels] == [1, 2]
    for row in levels:
        # Every task solved at trial 2: two actor calls and one reflector call.
        assert row["errors"] == 0 and row["uneven"] == 0 and row["model_calls"] == 12
        assert row["tasks_per_s"] > 0 and row["calls_per_s"] > 0
    # Overlap shown without a clock (a loaded machine stretches any timing): one call at a time
    # at c=1, two tasks' calls answered at once at c=2.
    assert [row["peak_in_flight"] for row in levels] == [1, 2]


def test_served_needs_a_server_python_with_reflexion(monkeypatch, capsys, tmp_path):
    """(The measurement itself starts ``langgraph dev``: tests/integration/test_served_perf.py.)"""
    code, _, err = cli(
        monkeypatch, capsys, "perf", "served", "--server-python", sys.executable + "-x"
    )
    assert code == 2 and "--server-python" in err and len(err.strip().splitlines()) == 1


def test_bad_levels_are_one_clear_line(monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "perf", "concurrency", "--levels", "1,two")
    assert code == 2 and "--levels" in err


# ---- inference ----------------------------------------------------------------------------------


def test_inference_needs_an_embedded_model(monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "perf", "inference", "--model", "openai:gpt-4o-mini")
    assert code == 2 and "local:" in err


# ---- learning cost ------------------------------------------------------------------------------


def usage(tokens: int, calls: int = 1) -> dict[str, Any]:
    return {"actor": {"prompt_tokens": tokens, "completion_tokens": 0, "calls": calls}}


def hotpot(path: Path, strategy: str, solved: list[bool], tokens: int) -> Path:
    settings = {"bench": "hotpotqa", "agent": "cot-gt", "strategy": strategy, "actor_model": "m"}
    return write_lines(
        path,
        [
            final(f"t{i}", 1.0, usage(tokens), solved=ok, settings=settings)
            for i, ok in enumerate(solved)
        ],
    )


def test_learning_cost_compares_tokens_per_solved_task(monkeypatch, capsys, tmp_path):
    none = hotpot(tmp_path / "none.jsonl", "none", [True, False], 100)
    refl = hotpot(tmp_path / "refl.jsonl", "reflexion", [True, True], 300)
    code_settings = {"bench": "programming", "strategy_name": "simple", "language": "py"}
    simple = write_lines(
        tmp_path / "simple.jsonl",
        [final("p0", 1.0, usage(50), hidden_pass=True, settings=code_settings)],
    )
    rows = learning_cost_figures([none, refl, simple])
    assert [r["tokens_per_solved"] for r in rows] == [200.0, 300.0, 50.0]
    assert [r["vs_baseline"] for r in rows] == [None, 1.5, None]
    assert rows[1]["solved"] == 2 and rows[1]["calls"] == 2

    code, out, err = cli(
        monkeypatch, capsys, "perf", "learning-cost", str(none), str(refl), "--json", "l.json"
    )
    assert code == 0, err
    assert "1.50x" in out
    assert len(figures(tmp_path / "l.json")["runs"]) == 2


def test_learning_cost_counts_gold_where_an_llm_judged(tmp_path):
    """A judged run's solved tasks are those right on gold, not those the judge accepted."""
    settings = {"bench": "hotpotqa", "agent": "cot-gt", "strategy": "none", "actor_model": "m"}
    judged = write_lines(
        tmp_path / "judged.jsonl",
        [
            final("t0", 1.0, usage(100), solved=True, gold_final=False, settings=settings),
            final("t1", 1.0, usage(100), solved=False, gold_final=True, settings=settings),
            final("t2", 1.0, usage(100), solved=True, gold_final=True, settings=settings),
        ],
    )
    (row,) = learning_cost_figures([judged])
    assert row["solved"] == 2 and row["tokens_per_solved"] == 150.0


def test_learning_cost_run_shells_the_fixed_slice(monkeypatch, capsys, tmp_path):
    commands: list[list[str]] = []

    def fake_run(command: list[str], check: bool) -> Any:
        commands.append(command)
        out = Path(command[command.index("--output") + 1])
        option = "--loop" if "--loop" in command else "--strategy"
        strategy = command[command.index(option) + 1]
        out.parent.mkdir(parents=True, exist_ok=True)
        hotpot(out, strategy, [True], 10)
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(learning_cost.subprocess, "run", fake_run)
    monkeypatch.setattr("reflexion.alfworld.env.engine_available", lambda: False)
    code, out, err = cli(monkeypatch, capsys, "perf", "learning-cost", "--run", "--model", "m:x")
    assert code == 0, err
    assert [c[4] for c in commands] == ["hotpotqa", "hotpotqa", "programming", "programming"]
    assert all(c[c.index("--model") + 1] == "m:x" for c in commands)
    assert "skipping alfworld" in out


def test_learning_cost_needs_files_or_run(monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "perf", "learning-cost")
    assert code == 2 and "--run" in err


# ---- sandbox ------------------------------------------------------------------------------------


def test_sandbox_times_a_judged_python_test_in_wall_and_cpu_time():
    from reflexion.harness.perf.sandbox import sandbox_figures

    fig = sandbox_figures(tests=2, reps=1, rust=False)
    assert set(fig) == {"py"}
    assert fig["py"]["wall_ms_per_test"] > 0 and fig["py"]["cpu_ms_per_test"] > 0
    assert fig["py"]["tests"] == 2 and fig["py"]["reps"] == 1
