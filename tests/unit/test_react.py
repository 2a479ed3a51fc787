"""The ReAct actor with a scripted model and the offline corpus: steps, halting, memory, resume."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.progress import event_of
from reflexion.graphs.qa import react_builder, react_graph
from reflexion.harness.fakes import RuleChatModel, ScriptedChatModel
from reflexion.nodes.qa.react import REACT_GRAMMAR
from reflexion.qa.context import QAContext, ReActContext
from reflexion.qa.wiki import OfflineCorpus
from tests.unit.test_wiki import PAGES, write_hotpotqa

TASK = {
    "task": "In which city was the author of the first published algorithm born?",
    "reference": "London",
}
SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "reflexion_react.mmd"


def step(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


@pytest.fixture
def corpus(tmp_path: Path) -> OfflineCorpus:
    data = write_hotpotqa(tmp_path / "data.jsonl", PAGES)
    return OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")


def build(
    corpus: OfflineCorpus,
    replies: list[str],
    reflections: list[str] | None = None,
    checkpointer: Any = None,
) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    actor = ScriptedChatModel(replies=replies)
    reflector = ScriptedChatModel(replies=reflections or ["Reflection: I will open Ada Lovelace."])
    graph = react_builder(actor_model=actor, reflector_model=reflector, backend=corpus).compile(
        checkpointer=checkpointer or InMemorySaver()
    )
    return graph, actor, reflector


def run(graph: Any, ctx: Context, thread_id: str | None = None) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread_id or str(uuid.uuid4())}}
    graph.invoke(TASK, config, context=ctx)
    return dict(graph.get_state(config).values)


SOLVING = [
    step("I need the page of the author.", "Search[Ada Lovelace]"),
    step("Where was she born?", "Lookup[born]"),
    step("She was born in London.", "Finish[London]"),
]


def test_search_lookup_finish_solves_in_one_trial(corpus):
    graph, actor, reflector = build(corpus, SOLVING)
    state = run(graph, Context(max_trials=3))
    assert state["solved"] is True and state["trial"] == 1 and state["answer"] == "London"
    assert state["trajectory"][:3] == [
        "Thought: I need the page of the author.",
        "Action: Search[Ada Lovelace]",
        "Observation: " + " ".join(s.strip() for s in PAGES["Ada Lovelace"]),
    ]
    assert state["trajectory"][5] == "Observation: (Result 1 / 2) She was born in London in 1815."
    assert state["trajectory"][-1] == "Action: Finish[London]"
    assert len(actor.prompts) == 3 and reflector.prompts == []


def test_each_step_sees_the_previous_observations_as_turns(corpus):
    graph, actor, _ = build(corpus, SOLVING)
    run(graph, Context())
    last = actor.prompts[2]
    assert last[-1].text == "Observation: (Result 1 / 2) She was born in London in 1815."
    assert last[-2].text == "Thought: Where was she born?\nAction: Lookup[born]"
    assert actor.prompts[0][-1].text == f"Question: {TASK['task']}"
    assert actor.kwargs_seen[0]["stop"][0] == "\nObservation"
    assert "gbnf" not in actor.kwargs_seen[0]  # the grammar is for the embedded model only


def test_each_trial_is_announced_and_counted_once_and_an_empty_question_refused(corpus):
    """``begin`` (the loop's): ``trial_started`` once per trial, the trial counted once; an
    empty question is refused with the QA graphs' one-line error, before any model call."""
    graph, actor, _ = build(corpus, [step("I know it.", "Finish[Paris]"), *SOLVING])
    config = {"configurable": {"thread_id": "announced"}}
    stream = graph.stream(
        TASK, config, context=Context(max_trials=2), stream_mode=["custom"], subgraphs=True
    )  # the subgraph's events reach the caller with subgraphs=True
    found = [event for _, _, chunk in stream if (event := event_of(chunk)) is not None]
    assert [(name, payload.get("trial")) for name, payload in found] == [
        ("trial_started", 1),
        ("attempt_scored", 1),
        ("reflection_written", 1),
        ("trial_started", 2),
        ("attempt_scored", 2),
        ("answer_chosen", 2),
    ]
    assert graph.get_state(config).values["trial"] == 2
    graph, actor, _ = build(corpus, SOLVING)
    with pytest.raises(ReflexionError) as empty:
        graph.invoke({**TASK, "task": "  "}, {"configurable": {"thread_id": "empty"}})
    assert empty.value.args == ("the task is empty: give the question to answer",)
    assert actor.prompts == []


def test_grammar_admits_exactly_the_three_actions():
    assert '"Search[" arg "]"' in REACT_GRAMMAR
    assert '"Lookup[" arg "]"' in REACT_GRAMMAR
    assert '"Finish[" arg "]"' in REACT_GRAMMAR


def test_unparseable_reply_becomes_an_observation_and_the_trial_goes_on(corpus):
    graph, _actor, _ = build(corpus, ["I am not sure what to do.", *SOLVING])
    state = run(graph, Context(max_trials=1))
    assert state["trajectory"][1] == "Action: I am not sure what to do."
    assert state["trajectory"][2].startswith("Observation: Invalid action (no Search[...]")
    assert state["solved"] is True


def test_empty_reply_and_empty_argument_are_invalid_actions(corpus):
    graph, _actor, _ = build(corpus, ["", step("x", "Search[]"), step("y", "Finish[London]")])
    state = run(graph, Context(max_trials=1))
    observations = [line for line in state["trajectory"] if line.startswith("Observation:")]
    assert "Invalid action (the reply was empty)" in observations[0]
    assert "Invalid action (Search[] was empty)" in observations[1]
    assert state["solved"] is True


def test_step_limit_halts_the_trial_as_a_failure_with_the_reason(corpus):
    graph, actor, _ = build(corpus, [step("Again.", "Search[Mercury]")])
    state = run(graph, ReActContext(max_trials=1, max_steps=4, repeat_guard=0))
    assert len(actor.prompts) == 4
    assert state["answer"] is None and state["solved"] is False
    assert state["evaluations"][0]["feedback"] == (
        "Answer is INCORRECT: halted: the step limit (4) was reached before Finish[answer]"
    )


@pytest.mark.parametrize("redraws", [0, 2])
def test_a_repeat_left_after_the_redraws_is_answered_without_searching_again(corpus, redraws):
    replies = [
        step("The author.", "Search[Ada Lovelace]"),
        *[step("Again.", "Search[ada  lovelace]")] * (1 + redraws),
        step("Where was she born?", "Lookup[born]"),
        step("London.", "Finish[London]"),
    ]
    graph, actor, _ = build(corpus, replies)
    state = run(graph, ReActContext(max_trials=1, repeat_guard=redraws))
    observations = [line for line in state["trajectory"] if line.startswith("Observation:")]
    assert observations[1].startswith("Observation: You already searched [ada lovelace]")
    assert observations[2] == "Observation: (Result 1 / 2) She was born in London in 1815."
    assert state["solved"] is True and len(actor.prompts) == 4 + redraws


def test_a_repeated_search_is_drawn_again_before_it_runs(corpus):
    replies = [
        step("The author.", "Search[Ada Lovelace]"),
        step("The page is called Ada Lovelace. I will search it.", "Search[Ada Lovelace]"),
        step("Where was she born?", "Lookup[born]"),
        step("London.", "Finish[London]"),
    ]
    graph, actor, _ = build(corpus, replies)
    state = run(graph, Context(max_trials=1))
    assert state["solved"] is True
    assert "Action: Search[Ada Lovelace]" not in state["trajectory"][3:]  # the repeat never ran
    assert actor.prompt_text(2) == actor.prompt_text(1)  # the same prompt, drawn again


def test_a_redraw_without_an_action_does_not_replace_the_step(corpus):
    replies = [
        step("The author.", "Search[Ada Lovelace]"),
        step("Again.", "Search[Ada Lovelace]"),
        "no action here",
        step("London.", "Finish[London]"),
    ]
    graph, actor, _ = build(corpus, replies)
    state = run(graph, ReActContext(max_trials=1, repeat_guard=1))
    assert state["trajectory"][4] == "Action: Search[Ada Lovelace]"  # the repeat, answered
    assert "Invalid action" not in "\n".join(state["trajectory"])
    assert state["solved"] is True and len(actor.prompts) == 4


def test_redraws_are_drawn_hotter(corpus, monkeypatch):
    actor = ScriptedChatModel(replies=[step("a", "Search[Ada Lovelace]")] * 2 + SOLVING[1:])
    temperatures: list[float] = []

    def load(spec: str, *, temperature: float, **_: Any) -> ScriptedChatModel:
        temperatures.append(temperature)
        return actor

    monkeypatch.setattr("reflexion.nodes.common.load_chat_model", load)
    graph = react_builder(backend=corpus).compile(checkpointer=InMemorySaver())
    state = run(graph, Context(max_trials=1, temperature=0.3))
    assert state["solved"] is True
    assert temperatures == [0.3, 0.3, 0.8, 0.3]  # the repeated second step is redrawn at 0.8


def test_a_search_that_found_nothing_tried_again_says_it_will_not_find_it(corpus):
    replies = [step("x", "Search[Nowhere Land]")] * 3
    graph, _actor, _ = build(corpus, [*replies, step("z", "Finish[London]")])
    state = run(graph, ReActContext(max_trials=1, repeat_guard=0))
    observations = [line for line in state["trajectory"] if line.startswith("Observation:")]
    assert observations[0].startswith("Observation: Could not find [Nowhere Land]. Similar:")
    assert len(observations) == 3
    for again in observations[1:]:
        assert again.startswith("Observation: You already searched [Nowhere Land] in this trial")
        assert "will not find it either" in again and "Could not find [Nowhere Land]" in again


def test_finish_on_the_last_allowed_step_counts(corpus):
    graph, _actor, _ = build(corpus, SOLVING)
    assert run(graph, ReActContext(max_trials=1, max_steps=3))["solved"] is True


def test_context_budget_halts_before_calling_the_model(corpus):
    graph, actor, _ = build(corpus, SOLVING)
    state = run(graph, ReActContext(max_trials=1, context_budget=256, max_tokens=64))
    assert actor.prompts == []
    assert "over the context budget of 256" in state["evaluations"][0]["feedback"]


def test_budget_counts_the_growing_scratchpad(corpus):
    graph, actor, _ = build(corpus, [step("Again.", "Search[Ada Lovelace]")])
    # The few-shot prefix is ~1,400 estimated tokens; each step adds ~60.
    ctx = ReActContext(
        max_trials=1, max_steps=50, context_budget=1800, max_tokens=64, repeat_guard=0
    )
    state = run(graph, ctx)
    assert 2 <= len(actor.prompts) < 50
    assert "context budget" in (state["stop_reason"] or "")


def failed_then_solved(corpus: OfflineCorpus, strategy: str) -> tuple[ScriptedChatModel, Any]:
    wrong = [
        step("Guessing.", "Search[Charles Babbage]"),
        step("He is English.", "Finish[England]"),
    ]
    graph, actor, reflector = build(corpus, [*wrong, *SOLVING])
    state = run(graph, Context(max_trials=2, strategy=strategy))  # type: ignore[arg-type]
    assert state["trial"] == 2 and state["solved"] is True
    return actor, reflector


def test_strategy_none_carries_nothing_into_the_next_trial(corpus):
    actor, reflector = failed_then_solved(corpus, "none")
    second = "\n".join(m.text for m in actor.prompts[2])
    assert "Babbage was an English polymath" not in second
    assert "Finish[England]" not in second
    assert "reflections" not in second and "previous attempt" not in second
    assert reflector.prompts == []
    assert actor.prompts[2] == actor.prompts[0]


def test_strategy_reflexion_carries_only_the_reflection(corpus):
    actor, reflector = failed_then_solved(corpus, "reflexion")
    second = "\n".join(m.text for m in actor.prompts[2])
    assert "- I will open Ada Lovelace." in second
    assert "Finish[England]" not in second
    # The reflector saw the whole failed trial, observations included.
    seen = reflector.prompt_text(0)
    assert "Action: Search[Charles Babbage]" in seen and "Babbage was an English polymath" in seen
    assert "Finish[England]" in seen and "Answer is INCORRECT" in seen


def test_strategy_last_attempt_carries_only_the_trajectory(corpus):
    actor, reflector = failed_then_solved(corpus, "last_attempt")
    second = actor.prompts[2][-1].text
    assert "This was your previous attempt:" in second
    assert "Action: Finish[England]" in second and "Observation: Answer is INCORRECT" in second
    assert "I will open Ada Lovelace" not in second
    assert reflector.prompts == []


@pytest.mark.parametrize(
    ("strategy", "answer", "calls"), [("reflexion", "London", 5), ("none", "england", 4)]
)
def test_a_retry_finishing_with_a_rejected_answer_is_drawn_again(corpus, strategy, answer, calls):
    replies = [
        step("Guessing.", "Search[Charles Babbage]"),
        step("He is English.", "Finish[England]"),
        step("The author.", "Search[Ada Lovelace]"),
        step("Still English.", "Finish[england]"),
        step("She was born in London.", "Finish[London]"),
    ]
    graph, actor, _ = build(corpus, replies)
    ctx = QAContext(max_trials=2, strategy=strategy, repeat_guard=1)  # type: ignore[arg-type]
    state = run(graph, ctx)
    assert state["evaluations"][1]["answer"] == answer  # none keeps nothing, so no redraw
    assert len(actor.prompts) == calls


def test_reflector_uses_the_react_examples(corpus):
    _actor, reflector = failed_then_solved(corpus, "reflexion")
    assert "Search[Quito river]" in reflector.prompt_text(0)


def test_memory_goes_before_the_question_after_a_stable_prefix(corpus):
    actor, _ = failed_then_solved(corpus, "last_attempt_and_reflexion")
    first, second = actor.prompts[0], actor.prompts[2]
    assert [m.text for m in first[:-1]] == [m.text for m in second[:-1]]
    assert second[-1].text.endswith(first[-1].text) and second[-1].text != first[-1].text


def test_resume_after_a_crash_mid_trial_keeps_the_finished_steps(corpus, tmp_path):
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    calls: list[int] = []

    def fail_on_third_step(_messages: Any) -> str:
        # A model call that fails (a killed process, a lost connection) on the third step.
        calls.append(1)
        if len(calls) > 2:
            raise ConnectionError("the model server went away")
        return SOLVING[len(calls) - 1]

    broken = react_builder(
        actor_model=RuleChatModel(rule=fail_on_third_step), backend=corpus
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(ConnectionError):
        broken.invoke(TASK, config, context=Context(max_trials=1))
    graph, actor, _ = build(corpus, [SOLVING[2]], checkpointer=saver)
    graph.invoke(None, config, context=Context(max_trials=1))
    state = graph.get_state(config).values
    assert state["solved"] is True and state["trial"] == 1
    assert len(actor.prompts) == 1  # only the missing step ran again
    assert actor.prompts[0][-1].text.startswith("Observation: (Result 1 / 2) She was born")
    assert [line for line in state["trajectory"] if line.startswith("Action:")] == [
        "Action: Search[Ada Lovelace]",
        "Action: Lookup[born]",
        "Action: Finish[London]",
    ]
    conn.close()


def test_react_topology_matches_snapshot():
    drawn = react_graph.get_graph(xray=True).draw_mermaid()
    assert drawn == SNAPSHOT.read_text(), "topology changed: update tests/snapshots/ if intended"


def test_react_graph_public_schemas_match_the_qa_graphs():
    assert set(react_graph.get_input_jsonschema()["properties"]) == {
        "task",
        "passages",
        "reference",
        "task_id",
    }
    context = react_graph.get_context_jsonschema()["properties"]
    for name in ("max_steps", "context_budget", "wiki", "corpus"):
        assert "description" in context[name]
