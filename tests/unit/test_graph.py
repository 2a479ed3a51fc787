"""The Reflexion loop with scripted models: routing, memory, strategies, defaults."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reflexion.core.context import Context
from reflexion.core.window import update_window
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from tests.conftest import answer

TASK = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava.",
    "reference": "Vltava",
}


def run(graph: Any, ctx: Context | None, task: dict[str, Any] = TASK) -> dict[str, Any]:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(task, config, context=ctx)
    return dict(graph.get_state(config).values)


def test_success_on_first_trial_stops_without_reflecting(make_graph):
    graph, _actor, reflector = make_graph([answer("Vltava")])
    state = run(graph, Context(max_trials=3))
    assert state["trial"] == 1
    assert state["solved"] is True
    assert state["answer"] == "Vltava"
    assert [e["success"] for e in state["evaluations"]] == [True]
    assert reflector.prompts == []


def test_failure_reflects_then_retries_until_success(make_graph):
    graph, actor, reflector = make_graph(
        [answer("Elbe"), answer("Vltava")], ["Reflection: I named the wrong river."]
    )
    state = run(graph, QAContext(retry="informed", max_trials=5))
    assert state["trial"] == 2
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert len(reflector.prompts) == 1
    assert state["reflections"] == ["I named the wrong river."]
    assert "I named the wrong river." in actor.prompt_text(1)


def test_trial_limit_stops_the_loop(make_graph):
    graph, actor, reflector = make_graph([answer("Elbe")])
    state = run(graph, Context.paper(max_trials=3))
    assert state["trial"] == 3
    assert state["solved"] is False
    assert len(actor.prompts) == 3
    assert len(reflector.prompts) == 2  # no reflection after the last trial


def test_trajectory_is_reset_each_trial(make_graph):
    graph, _, _ = make_graph([answer("Elbe", "first thought"), answer("Vltava", "second thought")])
    state = run(graph, Context(max_trials=2))
    text = "\n".join(state["trajectory"])
    assert "second thought" in text
    assert "first thought" not in text


def test_reference_answer_never_reaches_actor_or_reflector(make_graph):
    graph, actor, reflector = make_graph([answer("Elbe")], ["Reflection: wrong river."])
    task = {**TASK, "reference": "Zzyzx-river"}
    run(graph, Context(max_trials=3), task)
    for model in (actor, reflector):
        for i in range(len(model.prompts)):
            assert "Zzyzx" not in model.prompt_text(i)


def test_malformed_actor_output_is_a_failed_trial_not_a_crash(make_graph):
    graph, actor, _ = make_graph(["I am not sure.", "still no action", answer("Vltava")])
    state = run(graph, Context(max_trials=2))
    first = state["evaluations"][0]
    assert first["answer"] is None
    assert first["success"] is False
    assert "no Finish" in first["feedback"]
    # the follow-up turn asked for the action once, then the next trial succeeded
    assert len(actor.prompts) == 3
    assert state["solved"] is True


def test_follow_up_turn_recovers_an_action(make_graph):
    graph, _actor, _ = make_graph(["Thought: it is the Vltava.", "Action: Finish[Vltava]"])
    state = run(graph, Context(max_trials=1))
    assert state["solved"] is True
    assert "Thought: it is the Vltava." in state["trajectory"][0]


def test_a_placeholder_answer_is_asked_again(make_graph):
    # A small model copies the format line's Finish[answer]: that is no answer.
    graph, actor, _ = make_graph(["Thought: x.\nAction: Finish[answer]", "Action: Finish[Vltava]"])
    state = run(graph, Context(max_trials=1))
    assert state["solved"] is True and len(actor.prompts) == 2
    assert "the answer itself" in actor.prompt_text(1)


def test_context_defaults_when_none_is_passed(make_graph):
    graph, _actor, _reflector = make_graph([answer("Elbe")])
    state = run(graph, None)
    defaults = graph.builder.context_schema()  # the graph's own defaults, routers included
    assert state["trial"] == defaults.max_trials
    assert len(state["reflections"]) == min(defaults.memory_size, defaults.max_trials - 1)


def test_strategy_none_carries_nothing(make_graph):
    graph, actor, reflector = make_graph([answer("Elbe", "first attempt thought")])
    run(graph, Context(max_trials=2, strategy="none"))
    assert reflector.prompts == []
    second = actor.prompt_text(1)
    assert "first attempt thought" not in second
    assert actor.prompt_text(0) == second  # identical prompt: nothing carried over


def test_strategy_last_attempt_shows_previous_trajectory_only(make_graph):
    graph, actor, reflector = make_graph([answer("Elbe", "first attempt thought")])
    run(graph, QAContext(retry="informed", max_trials=2, strategy="last_attempt"))
    assert reflector.prompts == []
    second = actor.prompt_text(1)
    assert "first attempt thought" in second
    assert "Answer is INCORRECT" in second
    assert "reflections are lessons" not in second


@pytest.mark.parametrize(
    ("strategy", "shows_trajectory"),
    [("reflexion", False), ("last_attempt_and_reflexion", True)],
)
def test_strategies_with_reflexion_show_the_reflection(make_graph, strategy, shows_trajectory):
    """reflexion shows the reflections, not the trajectory; last_attempt_and_reflexion both."""
    graph, actor, _ = make_graph(
        [answer("Elbe", "first attempt thought")], ["Reflection: Check the city's river."]
    )
    run(graph, QAContext(retry="informed", max_trials=2, strategy=strategy))
    second = actor.prompt_text(1)
    assert "Check the city's river." in second
    assert ("first attempt thought" in second) == shows_trajectory


@pytest.mark.parametrize(
    ("strategy", "redraws", "second", "calls"),
    [
        ("reflexion", 2, "Danube", 3),  # the repeat of Elbe is redrawn
        ("last_attempt", 1, "Danube", 3),
        ("reflexion", 0, "the elbe.", 2),  # the paper keeps the repeat
        ("none", 2, "the elbe.", 2),  # no memory, no redraw
    ],
)
def test_a_retry_repeating_a_rejected_answer_is_redrawn(
    make_graph, strategy, redraws, second, calls
):
    graph, actor, _ = make_graph([answer("Elbe"), answer("the elbe."), answer("Danube")])
    ctx = QAContext.paper(max_trials=2, strategy=strategy, repeat_guard=redraws)
    state = run(graph, ctx)
    assert [e["answer"] for e in state["evaluations"]] == ["Elbe", second]
    assert len(actor.prompts) == calls
    assert actor.prompt_text(calls - 1) == actor.prompt_text(1)  # the same prompt, redrawn


@pytest.mark.parametrize(("strategy", "corrected"), [("reflexion", True), ("none", False)])
def test_a_repeat_left_after_the_redraws_gets_one_correcting_turn(make_graph, strategy, corrected):
    replies = [answer("Elbe"), answer("Elbe", "second"), answer("ELBE"), "Action: Finish[Vltava]"]
    graph, actor, _ = make_graph(replies)
    state = run(graph, QAContext(retry="informed", max_trials=2, strategy=strategy, repeat_guard=1))
    assert state["solved"] is corrected
    if corrected:
        turn = actor.prompts[3]
        assert turn[-2].text == answer("Elbe", "second")  # the first draw, kept
        assert '"Elbe" was already judged incorrect' in turn[-1].text
        assert "Thought: second" in state["trajectory"]
    else:
        assert len(actor.prompts) == 2


@pytest.mark.parametrize("with_passages", [True, False])
def test_the_reflector_reads_the_passages_its_actor_read(make_graph, with_passages):
    """CoT (GT): the reflector checks the attempt against the same paragraphs (the paper's
    CoT (GT) reflection prompt has them); CoT: neither sees them."""
    graph, actor, reflector = make_graph([answer("Elbe")], with_passages=with_passages)
    run(graph, Context(max_trials=2))
    assert ("Prague lies on the Vltava." in actor.prompt_text(0)) == with_passages
    assert ("Prague lies on the Vltava." in reflector.prompt_text(0)) == with_passages


def test_memory_goes_before_the_task(make_graph):
    """Memory first (the paper's layout): the question is read last."""
    graph, actor, _ = make_graph([answer("Elbe")], ["Reflection: Look again."])
    run(graph, QAContext(retry="informed", max_trials=2))
    first, second = actor.prompt_text(0), actor.prompt_text(1)
    assert not second.startswith(first)
    assert second.endswith("Which river flows through Prague?")
    task = second.rindex("Context: Prague lies on the Vltava.")
    assert second.index("Look again.") < task


@given(
    window=st.lists(st.text(max_size=5), max_size=6),
    new=st.text(max_size=5),
    size=st.integers(min_value=0, max_value=5),
)
def test_window_never_exceeds_omega_and_keeps_newest(window, new, size):
    result = update_window(window, new, size)
    assert len(result) <= size
    if size:
        assert result[-1] == new
        assert result == [*window, new][-size:]
    else:
        assert result == []


@settings(max_examples=25, deadline=None)
@given(omega=st.integers(min_value=0, max_value=4), trials=st.integers(min_value=1, max_value=6))
def test_graph_window_holds_the_newest_omega_reflections(omega, trials):
    reflector = ScriptedChatModel(replies=[f"Reflection: lesson {i}." for i in range(1, 10)])
    actor = ScriptedChatModel(replies=[answer("Elbe")])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile()
    out = graph.invoke(TASK, context=Context(max_trials=trials, memory_size=omega))
    made = trials - 1 if omega else 0
    expected = [f"lesson {i}." for i in range(1, made + 1)][-omega:] if omega else []
    assert out.get("reflections", []) == expected
    assert len(out.get("reflections", [])) <= omega


def test_invalid_context_values_fail_clearly():
    from reflexion.core.errors import ReflexionError

    with pytest.raises(ReflexionError, match="max_trials"):
        Context(max_trials=0)
    with pytest.raises(ReflexionError, match="memory_size"):
        Context(memory_size=-1)
    for cls in (QAContext, ReActContext, CodeContext):
        for value in (-1, 11):
            with pytest.raises(
                ReflexionError, match=rf"repeat_guard is {value}: use a value in \[0, 10\]"
            ):
                cls(repeat_guard=value)


def test_empty_task_is_rejected(make_graph):
    from reflexion.core.errors import ReflexionError

    graph, _, _ = make_graph([answer("x")])
    with pytest.raises(ReflexionError, match="task is empty"):
        run(graph, Context(), {"task": "  ", "reference": "x"})


def test_the_reflectors_prompt_shows_the_worked_reflections(make_graph):
    graph, _actor, reflector = make_graph([answer("Elbe")], ["Reflection: Look again."])
    run(graph, Context(max_trials=2))
    prompt = reflector.prompts[0]
    assert len(prompt) > 2
    assert "Which river flows through Prague?" in prompt[-1].text
    assert prompt[0].type == "system"
