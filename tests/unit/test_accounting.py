"""Accounting: prompt and completion tokens, model calls and wall time per node on every
trial and reflection line, totals on the final line — exact with fake models that report 10
prompt and 5 completion tokens per call, unchanged by a resume or by concurrency."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from reflexion.core.context import Context
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.bench.driver import run_benchmark, stream_thread
from reflexion.harness.bench.ledger import Sink
from reflexion.harness.bench.usage import UsageRecorder, merge, node_of, recorded_usage, totals
from reflexion.harness.fakes import RuleChatModel, ScriptedChatModel
from reflexion.qa.wiki import OfflineCorpus
from tests.benchkit import QUESTIONS, bench, gold_on_trial, rows, tasks
from tests.conftest import answer
from tests.unit.test_wiki import PAGES, write_hotpotqa

CALL = {"prompt_tokens": 10, "completion_tokens": 5}
"""What one call of the fake models reports."""


def counts(calls: int) -> dict[str, int]:
    return {"prompt_tokens": 10 * calls, "completion_tokens": 5 * calls, "calls": calls}


def no_wall(usage: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    times = ("wall_s", "model_s")
    return {node: {k: v for k, v in c.items() if k not in times} for node, c in usage.items()}


def CountingRuleModel(rule: Any) -> RuleChatModel:
    """The thread-safe rule model, reporting 10 prompt and 5 completion tokens per call."""
    return RuleChatModel(rule=rule, usage=(10, 5))


def rule_graph(saver: SqliteSaver, actor: RuleChatModel) -> Any:
    reflector = CountingRuleModel(rule=lambda _m: "Reflection: lesson learned.")
    return qa_builder(with_passages=False, actor_model=actor, reflector_model=reflector).compile(
        checkpointer=saver
    )


def test_every_trial_and_reflection_line_counts_its_nodes_exactly(saver, tmp_path):
    wrong, right = answer("wrong"), answer("answer 0")
    actor = ScriptedChatModel(replies=[wrong, right])
    judge = ScriptedChatModel(
        replies=[
            '{"correct": false, "score": 0, "feedback": "no"}',
            '{"correct": true, "score": 1, "feedback": "yes"}',
        ]
    )
    reflector = ScriptedChatModel(replies=["Reflection: lesson learned."])
    graph = qa_builder(
        with_passages=False, actor_model=actor, evaluator_model=judge, reflector_model=reflector
    ).compile(checkpointer=saver)
    out = tmp_path / "r.jsonl"
    with out.open("a", encoding="utf-8") as handle:
        finals, errors = run_benchmark(
            graph, tasks(["q0"]), Context(max_trials=3, evaluator="llm"), Sink(handle), settings={}
        )
    assert errors == [] and finals[0]["solved"] is True
    lines = rows(out)
    assert [r["type"] for r in lines] == ["trial", "reflection", "trial", "final"]
    trial1, reflection, trial2, final = lines
    assert no_wall(trial1["usage"]) == {"actor": counts(1), "evaluator": counts(1)}
    assert no_wall(reflection["usage"]) == {"reflector": counts(1)}
    assert no_wall(trial2["usage"]) == {"actor": counts(1), "evaluator": counts(1)}
    assert no_wall(final["usage"]) == {
        "actor": counts(2),
        "evaluator": counts(2),
        "reflector": counts(1),
    }
    assert len(actor.prompts) == 2 and len(judge.prompts) == 2 and len(reflector.prompts) == 1
    # Wall time per node: positive, and the final's is the sum of the lines'.
    for line in (trial1, trial2):
        assert line["usage"]["actor"]["wall_s"] > 0 and line["usage"]["evaluator"]["wall_s"] >= 0
    assert reflection["usage"]["reflector"]["wall_s"] > 0
    summed = merge(trial1["usage"], reflection["usage"], trial2["usage"])
    assert final["usage"] == summed
    assert totals(final["usage"])["calls"] == 5
    assert totals(final["usage"])["wall_s"] <= final["wall_s"] + 0.01


def test_subgraph_calls_count_for_the_actor(tmp_path):
    corpus = OfflineCorpus.from_hotpotqa(
        write_hotpotqa(tmp_path / "data.jsonl", PAGES), cache_dir=tmp_path / "cache"
    )
    steps = [
        "Thought: I need the page.\nAction: Search[Ada Lovelace]",
        "Thought: Found it.\nAction: Finish[London]",
    ]
    actor = ScriptedChatModel(replies=steps)
    graph = react_builder(
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: x"]),
        backend=corpus,
    ).compile(checkpointer=InMemorySaver())
    seen: list[tuple[str, dict[str, Any]]] = []
    state = stream_thread(
        graph,
        "react-1",
        {"task": "Where was Ada Lovelace born?", "reference": "London"},
        Context(max_trials=1),
        lambda event, payload: seen.append((event, payload)),
    )
    assert [e for e, _ in seen] == ["trial"]
    assert no_wall(seen[0][1]["usage"])["actor"] == counts(2)  # think ran twice, inside actor
    assert no_wall(state["usage"]) == no_wall(seen[0][1]["usage"])


def test_a_resumed_thread_counts_nothing_twice(saver, tmp_path):
    # A clean run for reference.
    clean = tmp_path / "clean.jsonl"
    conn = sqlite3.connect(tmp_path / "clean.sqlite", check_same_thread=False)
    try:
        finals, _ = bench(
            rule_graph(SqliteSaver(conn), CountingRuleModel(rule=gold_on_trial(2))), ["q1"], clean
        )
    finally:
        conn.close()
    expected = no_wall(finals[0]["usage"])
    assert expected == {"actor": counts(2), "evaluator": counts(0), "reflector": counts(1)}

    out = tmp_path / "r.jsonl"
    state = {"calls": 0}

    def interrupt_on_second_call(messages: list[BaseMessage]) -> str:
        state["calls"] += 1
        if state["calls"] == 2:  # trial 2's actor, after the reflection was written
            raise KeyboardInterrupt
        return gold_on_trial(2)(messages)

    with pytest.raises(KeyboardInterrupt):
        bench(rule_graph(saver, CountingRuleModel(rule=interrupt_on_second_call)), ["q1"], out)
    assert [r["type"] for r in rows(out)] == ["trial", "reflection"]

    actor = CountingRuleModel(rule=gold_on_trial(2))
    finals, errors = bench(rule_graph(saver, actor), ["q1"], out)
    assert errors == [] and actor.calls == 1 and finals[0]["resumed"] is True
    assert no_wall(finals[0]["usage"]) == expected
    lines = [r for r in rows(out) if r["type"] in ("trial", "reflection")]
    assert no_wall(recorded_usage(lines)["t-q1"]) == expected
    # A rerun of the finished benchmark skips the task and adds nothing.
    again, _ = bench(rule_graph(saver, actor), ["q1"], out)
    assert again[0]["usage"] == finals[0]["usage"] and actor.calls == 1


def test_concurrency_gives_the_same_totals(tmp_path):
    ids = list(QUESTIONS)
    results = {}
    for concurrency in (1, 4):
        conn = sqlite3.connect(tmp_path / f"c{concurrency}.sqlite", check_same_thread=False)
        try:
            graph = rule_graph(SqliteSaver(conn), CountingRuleModel(rule=gold_on_trial(2)))
            finals, errors = bench(
                graph, ids, tmp_path / f"c{concurrency}.jsonl", concurrency=concurrency
            )
        finally:
            conn.close()
        assert errors == []
        results[concurrency] = {f["task_id"]: no_wall(f["usage"]) for f in finals}
    assert results[1] == results[4]
    every = no_wall(merge(*results[4].values()))
    assert every == {"actor": counts(12), "evaluator": counts(0), "reflector": counts(6)}


def test_node_of_reads_the_top_level_node():
    assert node_of({"langgraph_checkpoint_ns": "actor:1|think:2", "langgraph_node": "think"}) == (
        "actor"
    )
    assert node_of({"langgraph_checkpoint_ns": "reflector:9", "langgraph_node": "reflector"}) == (
        "reflector"
    )
    assert node_of({"langgraph_node": "evaluator"}) == "evaluator"
    assert node_of(None) == "other"


def test_recorder_take_hands_over_and_resets():
    recorder = UsageRecorder()
    assert recorder.take() == {}
    assert merge(None, {"actor": {"calls": 1}}, {"actor": {"calls": 2, "wall_s": 0.5}}) == {
        "actor": {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "calls": 3,
            "wall_s": 0.5,
            "model_s": 0.0,
        }
    }
    assert totals({}) == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "calls": 0,
        "wall_s": 0.0,
        "model_s": 0.0,
    }


def test_usage_table_reports_tokens_per_solved_task():
    from reflexion.harness.bench.reports import (
        outcome_table,
    )

    finals = [
        {"solved": True, "usage": {"actor": {**counts(2), "wall_s": 1.0}}},
        {"solved": False, "usage": {"actor": {**counts(4), "wall_s": 1.0}}},
        {"solved": True},  # an older results line without usage
    ]
    table = outcome_table(
        {"cot reflexion": finals}, {"cot reflexion": 1}, lambda f: f["solved"], "questions"
    )
    cells = [list(column.cells) for column in table.columns]
    assert [c[0] for c in cells] == ["cot reflexion", "2/3", "1", "6", "60", "30", "45"]
    assert "1 task(s) from older runs" in str(table.caption)
