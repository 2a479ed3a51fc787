"""The benchmark runner with fake models and a real SQLite checkpointer: results lines,
resume after an interruption or a failure, bounded concurrency, learning curves."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import solved_by_trial
from reflexion.harness.bench.plots import learning_curve
from reflexion.harness.cli.app import main
from reflexion.harness.fakes import RuleChatModel
from tests import benchkit
from tests.benchkit import QUESTIONS, gold_on_trial, rows


def graph_with(saver: SqliteSaver, actor: RuleChatModel) -> Any:
    reflector = RuleChatModel(rule=lambda _m: "Reflection: lesson learned.")
    return qa_builder(with_passages=False, actor_model=actor, reflector_model=reflector).compile(
        checkpointer=saver
    )


def bench(graph: Any, ids: list[str], out: Path, **kwargs: Any) -> tuple[list, list]:
    settings = {"agent": "cot", "strategy": "reflexion", "max_trials": 3}
    return benchkit.bench(graph, ids, out, settings, **kwargs)


def test_every_trial_reflection_and_final_is_written(saver, tmp_path):
    out = tmp_path / "r.jsonl"
    finals, errors = bench(graph_with(saver, RuleChatModel(rule=gold_on_trial(2))), ["q0"], out)
    assert errors == []
    assert [r["type"] for r in rows(out)] == ["trial", "reflection", "trial", "final"]
    assert finals[0]["solved"] is True and finals[0]["trials"] == 2
    assert [e["success"] for e in finals[0]["evaluations"]] == [False, True]
    assert finals[0]["reflections"] == ["lesson learned."]
    assert finals[0]["task_id"] == "q0" and finals[0]["wall_s"] >= 0
    assert "results_format" not in finals[0]  # names come from what ran, not a version


def test_rerun_skips_finished_tasks_and_appends_nothing(saver, tmp_path):
    out = tmp_path / "r.jsonl"
    actor = RuleChatModel(rule=gold_on_trial(1))
    bench(graph_with(saver, actor), ["q0", "q1"], out)
    before, calls = out.read_text(), actor.calls
    finals, _ = bench(graph_with(saver, actor), ["q0", "q1"], out)
    assert out.read_text() == before and actor.calls == calls
    assert [f["task_id"] for f in finals] == ["q0", "q1"]


def test_interrupted_run_resumes_where_it_stopped(saver, tmp_path):
    out = tmp_path / "r.jsonl"
    state = {"calls": 0}

    def interrupt_on_fourth_call(messages: list[BaseMessage]) -> str:
        state["calls"] += 1
        if state["calls"] == 4:  # q1's second trial: Ctrl-C arrives
            raise KeyboardInterrupt
        return gold_on_trial(2)(messages)

    with pytest.raises(KeyboardInterrupt):
        bench(graph_with(saver, RuleChatModel(rule=interrupt_on_fourth_call)), ["q0", "q1"], out)
    first = rows(out)
    assert [r["type"] for r in first if r["thread_id"] == "t-q0"][-1] == "final"
    assert [r["type"] for r in first if r["thread_id"] == "t-q1"] == ["trial", "reflection"]

    actor = RuleChatModel(rule=gold_on_trial(2))
    finals, errors = bench(graph_with(saver, actor), ["q0", "q1"], out)
    assert errors == [] and actor.calls == 1  # only q1's interrupted second trial ran again
    resumed = finals[1]
    assert resumed["resumed"] is True and resumed["solved"] is True
    assert [e["trial"] for e in resumed["evaluations"]] == [1, 2]
    trial_lines = [r for r in rows(out) if r["type"] == "trial" and r["thread_id"] == "t-q1"]
    assert [r["trial"] for r in trial_lines] == [1, 2]  # no trial recorded twice


def test_a_failing_task_is_recorded_and_the_run_goes_on(saver, tmp_path):
    out = tmp_path / "r.jsonl"

    def flaky(messages: list[BaseMessage]) -> str:
        if "item 1?" in messages[-1].text:
            raise ConnectionError("503 from the provider")
        return gold_on_trial(1)(messages)

    finals, errors = bench(graph_with(saver, RuleChatModel(rule=flaky)), ["q0", "q1", "q2"], out)
    assert [f["task_id"] for f in finals] == ["q0", "q2"]
    assert errors[0]["task_id"] == "q1" and "503 from the provider" in errors[0]["error"]
    # The retry picks the failed task up; the finished ones are not run again.
    actor = RuleChatModel(rule=gold_on_trial(1))
    finals, errors = bench(graph_with(saver, actor), ["q0", "q1", "q2"], out)
    assert errors == [] and actor.calls == 1
    assert [f["task_id"] for f in finals] == ["q0", "q1", "q2"]


def test_concurrency_is_bounded_and_every_task_finishes_once(saver, tmp_path):
    out = tmp_path / "r.jsonl"
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow(messages: list[BaseMessage]) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return gold_on_trial(2)(messages)

    ids = list(QUESTIONS)
    finals, errors = bench(graph_with(saver, RuleChatModel(rule=slow)), ids, out, concurrency=3)
    assert errors == []
    assert [f["task_id"] for f in finals] == ids  # task order, whatever the finishing order
    assert 2 <= peak[0] <= 3
    lines = rows(out)
    for i in ids:
        mine = [r["type"] for r in lines if r["thread_id"] == f"t-{i}"]
        assert mine == ["trial", "reflection", "trial", "final"]


def test_solved_by_trial_is_cumulative():
    finals = [
        {"solved": True, "evaluations": [{}]},
        {"solved": True, "evaluations": [{}, {}, {}]},
        {"solved": False, "evaluations": [{}, {}, {}]},
        {"solved": True, "evaluations": [{}, {}]},
    ]
    assert solved_by_trial(finals, 3) == [0.25, 0.5, 0.75]
    assert solved_by_trial([], 2) == [0.0, 0.0]


def test_learning_curve_is_a_png(tmp_path):
    path = learning_curve({"reflexion": [0.2, 0.4], "none": [0.2, 0.2]}, tmp_path / "c.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_command_draws_one_line_per_results_file(saver, tmp_path, monkeypatch, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    bench(graph_with(saver, RuleChatModel(rule=gold_on_trial(1))), ["q0", "q1"], a)
    bench(graph_with(saver, RuleChatModel(rule=gold_on_trial(3))), ["q2", "q3"], b)
    png = tmp_path / "curve.png"
    monkeypatch.setattr(sys, "argv", ["reflexion", "plot", str(a), str(b), "-o", str(png)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr().out
    assert exc.value.code in (0, None), out
    assert "cot reflexion: 2 task(s), 1.00 1.00 1.00" in out
    assert "0.00 0.00 1.00" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
