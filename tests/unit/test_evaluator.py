"""The evaluator contract: exact match, the LLM judge, and a custom callable."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.nodes.evaluator import Evaluation
from tests.conftest import answer

TASK = {"task": "Which river flows through Prague?", "passages": "Prague lies on the Vltava."}


def run_with_judge(
    judge_replies: list[str], ctx: Context, actor: list[str] | None = None
) -> dict[str, Any]:
    judge = ScriptedChatModel(replies=judge_replies)
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=actor or [answer("Vltava")]),
        evaluator_model=judge,
        reflector_model=ScriptedChatModel(replies=["Reflection: check."]),
    ).compile()
    return graph.invoke(TASK, context=ctx)


def test_llm_judge_binary_verdict():
    out = run_with_judge(
        ['{"correct": true, "score": 1, "feedback": "right"}'], Context(evaluator="llm")
    )
    assert out["solved"] is True
    assert out["evaluations"][0]["score"] == 1.0
    assert "right" in out["evaluations"][0]["feedback"]


def test_llm_judge_score_mode_uses_threshold():
    ctx = Context(evaluator="llm", judge_threshold=0.8, max_trials=2)
    out = run_with_judge(['{"correct": true, "score": 0.6, "feedback": "partly"}'], ctx)
    assert out["solved"] is False
    assert [e["score"] for e in out["evaluations"]] == [0.6, 0.6]


def test_llm_judge_text_fallback_and_garbage():
    out = run_with_judge(
        ["INCORRECT, wrong river.", "Correct."], Context(evaluator="llm", max_trials=2)
    )
    assert [e["success"] for e in out["evaluations"]] == [False, True]
    garbage = run_with_judge(["¯\\_(ツ)_/¯"], Context(evaluator="llm", max_trials=1))
    assert garbage["evaluations"][0]["success"] is False
    assert "no verdict" in garbage["evaluations"][0]["feedback"]


def test_llm_judge_needs_no_reference_and_never_sees_one():
    judge = ScriptedChatModel(replies=['{"correct": false, "score": 0, "feedback": "no"}'])
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("Elbe")]),
        evaluator_model=judge,
        reflector_model=ScriptedChatModel(replies=["Reflection: check."]),
    ).compile()
    graph.invoke(
        {**TASK, "reference": "Qwerty-secret"}, context=Context(evaluator="llm", max_trials=2)
    )
    assert all("Qwerty-secret" not in judge.prompt_text(i) for i in range(len(judge.prompts)))
    assert "Final answer: Elbe" in judge.prompt_text(0)


def test_agreement_judge_answers_blind_and_accepts_a_matching_answer():
    judge = ScriptedChatModel(replies=["The Vltava."])
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("Vltava")]),
        evaluator_model=judge,
    ).compile()
    out = graph.invoke(
        {**TASK, "reference": "Qwerty-secret"}, context=Context(evaluator="agreement")
    )
    assert out["solved"] is True
    assert len(out["evaluations"]) == 1
    prompt = judge.prompt_text(0)
    assert "Prague lies on the Vltava." in prompt and "Which river" in prompt
    assert "Qwerty-secret" not in prompt and "Finish[" not in prompt


def test_agreement_judge_rejects_a_different_answer_without_revealing_its_own():
    ctx = Context(evaluator="agreement", max_trials=2, memory_size=1)
    out = run_with_judge(
        ["Moldau river", "Vltava\n\nIt flows north."],
        ctx,
        actor=[answer("Elbe"), answer("Vltava")],
    )
    first, second = out["evaluations"]
    assert first["success"] is False and "Moldau" not in first["feedback"]
    assert second["success"] is True
    assert out["answer"] == "Vltava"


def test_agreement_reads_the_judges_answer_after_an_inline_marker():
    """The judge's first line is read as an actor's reply: "… Answer: X" is X."""
    ctx = Context(evaluator="agreement", max_trials=1)
    out = run_with_judge(["It is on the Vltava. Answer: Vltava"], ctx, actor=[answer("Vltava")])
    assert out["solved"] is True


def test_agreement_with_an_empty_reply_is_no_success():
    out = run_with_judge(["", ""], Context(evaluator="agreement", max_trials=1))
    assert out["solved"] is False


def test_exact_match_without_reference_is_a_clear_error():
    graph = qa_builder(actor_model=ScriptedChatModel(replies=[answer("x")])).compile()
    with pytest.raises(ReflexionError, match="reference"):
        graph.invoke(TASK, context=Context())


def test_custom_evaluator_callable_fits_the_contract():
    seen: list[str | None] = []

    def length_judge(state: State, ctx: Context) -> Evaluation:
        seen.append(state.answer)
        ok = state.answer is not None and len(state.answer) > 4
        return Evaluation(
            score=1.0 if ok else 0.3, success=ok, feedback="long enough" if ok else "too short"
        )

    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: longer."]),
        evaluate=length_judge,
    ).compile()
    out = graph.invoke(TASK, {"configurable": {"thread_id": str(uuid.uuid4())}}, context=Context())
    assert seen == ["Elbe", "Vltava"]
    assert [(e["score"], e["success"]) for e in out["evaluations"]] == [(0.3, False), (1.0, True)]
