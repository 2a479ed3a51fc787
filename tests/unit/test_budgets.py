"""Budgets and a plateau stop (``Context.budget``: ``tokens``, ``cost``, ``seconds``,
``plateau_trials``): each reason with scripted models whose usage is known (10 prompt and 5
completion tokens a call), the answer a cut thread returns (its best attempt so far), the
spending kept across a resume, and the reason in the output and on the custom stream."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion import Context, create_reflexion_graph
from reflexion.core.budget import plateaued, stop_reason
from reflexion.core.errors import ReflexionError
from reflexion.core.progress import event_of
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.qa.context import QAContext, ReActContext
from reflexion.qa.wiki import OfflineCorpus
from tests.conftest import answer
from tests.unit.test_wiki import PAGES, write_hotpotqa

TASK = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava.",
    "reference": "Vltava",
}
WRONG = [answer("Elbe"), answer("Oder"), answer("Rhine"), answer("Danube"), answer("Po")]
PER_CALL = 15
"""Tokens a scripted model reports per call (10 prompt + 5 completion)."""


def qa(cost: float | None = None) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    actor = ScriptedChatModel(replies=WRONG, cost=cost)
    reflector = ScriptedChatModel(replies=["Reflection: another river."], cost=cost)
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    return graph, actor, reflector


def run(graph: Any, ctx: Context, config: dict[str, Any] | None = None) -> dict[str, Any]:
    config = config or {"configurable": {"thread_id": str(uuid.uuid4())}}
    return dict(graph.invoke(TASK, config, context=ctx))


def calls(*models: ScriptedChatModel) -> int:
    return sum(len(m.prompts) for m in models)


def test_defaults_spend_no_budget_and_say_why_the_thread_ended():
    graph, actor, reflector = qa()
    out = run(graph, QAContext(max_trials=3))
    assert out["stopped"] == "max_trials" and out["trial"] == 3
    made = calls(actor, reflector)
    assert made == 5  # three attempts, two reflections
    assert out["spent"]["prompt_tokens"] == 10 * made
    assert out["spent"]["completion_tokens"] == 5 * made
    assert out["spent"]["calls"] == made and out["spent"]["cost"] == 0.0
    assert out["spent"]["seconds"] > 0.0
    solved = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("Vltava")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: x."]),
    ).compile(checkpointer=InMemorySaver())
    assert run(solved, QAContext(max_trials=3))["stopped"] == "solved"


@pytest.mark.parametrize("policy", ["best", "last"])
def test_a_token_budget_ends_the_thread_after_the_trial_that_reached_it(policy):
    """Trial 1 spends 15 tokens, its reflection and trial 2 30 more: a budget of 40 lets trial
    2 run to its verdict and ends the thread there, with the best attempt so far (the
    earliest of equals: trial 1's), whatever ``select_answer`` says."""
    graph, actor, reflector = qa()
    out = run(graph, QAContext(max_trials=5, budget={"tokens": 40}, select_answer=policy))
    assert (out["stopped"], out["trial"]) == ("token_budget", 2)
    assert out["spent"]["prompt_tokens"] + out["spent"]["completion_tokens"] == 3 * PER_CALL
    assert calls(actor, reflector) == 3
    assert out["answer"] == "Elbe"  # trial 1's, not the last trial's "Oder"


def test_a_cost_budget_counts_tokens_at_the_given_prices():
    """At $1000 and $2000 per million prompt and completion tokens a call costs $0.02: a
    budget of $0.05 ends the thread after trial 2 ($0.06)."""
    graph, _actor, _reflector = qa()
    ctx = QAContext(
        max_trials=5, budget={"cost": 0.05, "prompt_price": 1000.0, "completion_price": 2000.0}
    )
    out = run(graph, ctx)
    assert (out["stopped"], out["trial"]) == ("cost_budget", 2)
    assert out["spent"]["cost"] == pytest.approx(3 * 0.02)


def test_a_cost_the_provider_reports_is_taken_over_the_prices():
    graph, _actor, _reflector = qa(cost=0.5)
    ctx = QAContext(
        max_trials=5, budget={"cost": 1.0, "prompt_price": 0.0, "completion_price": 0.0}
    )
    out = run(graph, ctx)
    assert (out["stopped"], out["trial"]) == ("cost_budget", 2)  # 0.5, then 1.5
    assert out["spent"]["cost"] == pytest.approx(1.5)


def test_a_cost_budget_without_prices_is_refused_in_one_line():
    with pytest.raises(ReflexionError, match=r"^budget.cost is set but prompt_price"):
        Context(budget={"cost": 1.0})
    with pytest.raises(ReflexionError, match=r"^budget.tokens is 0: use 1 or more"):
        Context(budget={"tokens": 0})


def test_a_time_budget_counts_the_nodes_running_time():
    """Each attempt takes 0.5 s: a budget of 0.8 s lets trial 2 finish and ends there."""

    def slow(inputs: dict[str, Any]) -> str:
        time.sleep(0.5)
        return f"Answer: guess {inputs['trial']}"

    graph = create_reflexion_graph(
        slow,
        lambda task, reply: 0.0,
        reflector_model=ScriptedChatModel(replies=["Reflection: guess better."]),
        checkpointer=InMemorySaver(),
    )
    out = run(graph, Context(max_trials=5, budget={"seconds": 0.8}))
    assert (out["stopped"], out["trial"]) == ("time_budget", 2)
    assert 1.0 <= out["spent"]["seconds"] < 5.0


def test_a_plateau_ends_the_thread_after_k_trials_without_a_better_score():
    scores = {"a": 0.1, "b": 0.3, "c": 0.2, "d": 0.3, "e": 0.4}
    replies = iter(["Answer: a", "Answer: b", "Answer: c", "Answer: d", "Answer: e"])
    graph = create_reflexion_graph(
        lambda _inputs: next(replies),
        lambda task, reply: scores[reply],
        reflector_model=ScriptedChatModel(replies=["Reflection: aim higher."]),
        checkpointer=InMemorySaver(),
    )
    out = run(graph, Context(max_trials=5, budget={"plateau_trials": 2}, select_answer="last"))
    # b improved on a; c and d did not improve on b (a tie is no improvement)
    assert (out["stopped"], out["trial"]) == ("plateau", 4)
    assert out["answer"] == "b"  # the best attempt so far, under select_answer=last too


def test_plateau_rule():
    def records(*scores: float) -> list[dict[str, Any]]:
        return [{"trial": i + 1, "score": s, "success": False} for i, s in enumerate(scores)]

    assert not plateaued(records(0.2), 1)  # nothing before to compare with
    assert plateaued(records(0.2, 0.2), 1)
    assert not plateaued(records(0.2, 0.3), 1)
    assert not plateaued(records(0.2, 0.1, 0.3), 2)
    assert plateaued(records(0.5, 0.1, 0.3), 2)
    # the trial limit is named before a budget that ran out on the same trial
    ctx = Context(max_trials=2, budget={"tokens": 1, "plateau_trials": 1})
    assert stop_reason(records(0.1, 0.1), 2, {"prompt_tokens": 9}, ctx) == "max_trials"
    assert stop_reason(records(0.1), 1, {"prompt_tokens": 9}, ctx) == "token_budget"
    assert stop_reason(records(0.1), 1, {}, ctx) is None


def test_the_spending_survives_a_resume_from_the_checkpoint():
    """A thread paused before its reflector and resumed (a new invocation) goes on from what
    its checkpoint says it spent: trial 2 still reaches the budget of 40 tokens."""
    actor = ScriptedChatModel(replies=WRONG)
    reflector = ScriptedChatModel(replies=["Reflection: another river."])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver(), interrupt_before=["reflector"]
    )
    config = {"configurable": {"thread_id": "resumed"}}
    ctx = QAContext(max_trials=5, budget={"tokens": 40})
    graph.invoke(TASK, config, context=ctx)
    assert graph.get_state(config).values["spent"]["prompt_tokens"] == 10
    graph.invoke(None, config, context=ctx)  # reflector, trial 2: 45 tokens in all
    out = graph.get_state(config).values
    assert (out["stopped"], out["trial"]) == ("token_budget", 2)
    assert out["spent"]["prompt_tokens"] + out["spent"]["completion_tokens"] == 45


def test_a_subgraph_actor_s_model_calls_count(tmp_path):
    """The ReAct actor is a subgraph: every step's model call counts for the thread, and it
    is still drawn as a subgraph."""
    data = write_hotpotqa(tmp_path / "data.jsonl", PAGES)
    corpus = OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")
    actor = ScriptedChatModel(
        replies=["Thought: I search.\nAction: Search[Ada Lovelace]", answer("Paris")] * 3
    )
    reflector = ScriptedChatModel(replies=["Reflection: read the page."])
    graph = react_builder(actor_model=actor, reflector_model=reflector, backend=corpus).compile(
        checkpointer=InMemorySaver()
    )
    task = {"task": "Where was Ada Lovelace born?", "reference": "London"}
    ctx = ReActContext(max_trials=2)
    out = graph.invoke(task, {"configurable": {"thread_id": "sync"}}, context=ctx)
    assert out["stopped"] == "max_trials"
    assert out["spent"]["calls"] == calls(actor, reflector) >= 5
    assert out["spent"]["prompt_tokens"] == 10 * calls(actor, reflector)
    before = calls(actor, reflector)  # and so when a server runs it (async)
    out = asyncio.run(graph.ainvoke(task, {"configurable": {"thread_id": "async"}}, context=ctx))
    assert out["spent"]["calls"] == calls(actor, reflector) - before >= 5
    assert {"actor:begin", "actor:think"} <= set(graph.get_graph(xray=True).nodes)


def test_the_stop_reason_is_on_the_custom_stream():
    graph, _actor, _reflector = qa()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = QAContext(max_trials=5, budget={"tokens": 40})
    found = [
        event_of(chunk) for chunk in graph.stream(TASK, config, context=ctx, stream_mode="custom")
    ]
    name, payload = found[-1]  # type: ignore[misc]
    assert name == "answer_chosen"
    assert payload["stopped"] == "token_budget" and payload["why"] == "best"
    assert (payload["answer"], payload["trial"]) == ("Elbe", 1)
