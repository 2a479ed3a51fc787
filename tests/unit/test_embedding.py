"""The embedding API (``graphs.custom.create_reflexion_graph``) and the generic graph, with fakes."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, fields
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import drive
from reflexion.graphs.custom import create_reflexion_graph, read_reply
from reflexion.graphs.generic import generic_evaluation
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.nodes.evaluator import Evaluation

ROOT = Path(__file__).parents[2]
LESSON = "I named the Elbe, but Prague lies on the Vltava."
TASK = {"task": "Which river flows through Prague?", "reference": "Vltava"}


def reflector() -> ScriptedChatModel:
    return ScriptedChatModel(replies=[f"Reflection: {LESSON}"])


def run(graph: Any, task: dict[str, Any], ctx: Context | None = None) -> dict[str, Any]:
    """Run one thread to the end; the graph's output (answer, solved, trial, evaluations,
    reflections)."""
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    out: dict[str, Any] = graph.invoke(task, config, context=ctx)
    return out


def river_actor(seen: list[dict[str, Any]]) -> RunnableLambda[dict[str, Any], dict[str, Any]]:
    """A user's own actor: wrong until it has a reflection, with a trajectory of its own."""

    def act(inputs: dict[str, Any]) -> dict[str, Any]:
        seen.append(inputs)
        river = "Vltava" if inputs["reflections"] else "Elbe"
        return {"answer": river, "trajectory": [f"Thought: I recall the {river}.", river]}

    return RunnableLambda(act)


def test_runnable_actor_python_evaluator_fails_reflects_then_succeeds():
    """A RunnableLambda actor and a (task, answer) function: trial 1 fails, our reflector
    writes a lesson from the actor's own trajectory, the lesson reaches the actor's input on
    trial 2 (never the reference), and trial 2 succeeds."""
    seen: list[dict[str, Any]] = []
    model = reflector()
    graph = create_reflexion_graph(
        river_actor(seen),
        lambda task, answer: answer == "Vltava",
        reflector_model=model,
        checkpointer=InMemorySaver(),
    )
    state = run(graph, TASK, Context(max_trials=3))
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert state["answer"] == "Vltava" and state["solved"] is True and state["trial"] == 2
    assert [s["trial"] for s in seen] == [1, 2]
    assert seen[0]["reflections"] == [] and seen[0]["memory"] == ""
    assert seen[1]["reflections"] == [LESSON]
    assert LESSON in seen[1]["memory"]
    assert set(seen[0]) == {"task", "passages", "reflections", "memory", "trial"}
    assert len(model.prompts) == 1
    assert "Thought: I recall the Elbe." in model.prompt_text(0)
    assert "Vltava" not in model.prompt_text(0)


def test_a_prompt_naming_the_removed_lessons_is_refused():
    """``{lessons}`` (the long-term lesson store's, removed) is no actor variable any more: a
    prompt naming it is a one-line error at build time."""
    with pytest.raises(ReflexionError) as exc:
        create_reflexion_graph(
            ScriptedChatModel(replies=["Answer: x"]),
            lambda task, answer: True,
            prompt="{task}\n{lessons}",
        )
    assert "\n" not in str(exc.value) and "lessons" in str(exc.value)


def test_chat_model_actor_with_user_chat_prompt_template():
    """A chat model with the user's ChatPromptTemplate: the template gets {reflections} as
    lines and {trial}; the reply's final ``Answer:`` line is the answer and the reasoning
    before it is the trajectory the reflector reads; a 3-argument evaluator gets the reference."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Lessons so far:\n{reflections}"), ("human", "Trial {trial}. {task}")]
    )
    actor = ScriptedChatModel(
        replies=["Thought: Germany's big river.\nAnswer: Elbe", "Answer: Vltava"]
    )
    model = reflector()
    calls: list[tuple[str, str, str | None]] = []

    def evaluate(task: str, answer: str, reference: str | None) -> bool:
        calls.append((task, answer, reference))
        return answer == reference

    graph = create_reflexion_graph(
        actor, evaluate, prompt=prompt, reflector_model=model, checkpointer=InMemorySaver()
    )
    state = run(graph, TASK)
    assert state["solved"] is True and state["trial"] == 2
    assert calls == [(TASK["task"], "Elbe", "Vltava"), (TASK["task"], "Vltava", "Vltava")]
    assert actor.prompt_text(0) == "Lessons so far:\n\nTrial 1. " + TASK["task"]
    assert actor.prompt_text(1) == f"Lessons so far:\n- {LESSON}\nTrial 2. " + TASK["task"]
    assert "Thought: Germany's big river.\nAnswer: Elbe" in model.prompt_text(0)


def test_chat_model_actor_default_prompt_and_string_prompt():
    """Without a prompt the chat actor uses the generic prompt files (memory after the task on
    a retry); a string prompt becomes one user message."""
    actor = ScriptedChatModel(replies=["Thought: hm.\nAnswer: Elbe", "Answer: Vltava"])
    graph = create_reflexion_graph(actor, lambda t, a: a == "Vltava", reflector_model=reflector())
    run(graph, TASK)
    first, second = actor.prompts
    assert "Answer: your final answer." in first[0].text
    assert first[-1].text == f"Task: {TASK['task']}"
    assert second[-1].text.startswith(f"Task: {TASK['task']}\n\nYou have attempted")
    assert LESSON in second[-1].text

    actor = ScriptedChatModel(replies=["Vltava"])
    graph = create_reflexion_graph(actor, lambda t, a: a == "Vltava", prompt="Q: {task}")
    state = run(graph, TASK)
    assert [m.type for m in actor.prompts[0]] == ["human"]
    assert actor.prompt_text(0) == f"Q: {TASK['task']}" and state["solved"] is True


def test_llm_judge_evaluator_with_a_scripted_judge():
    """A chat model as evaluator is our LLM judge: it reads the task and the attempt, its
    verdict decides the loop, and its feedback reaches the reflector."""
    judge = ScriptedChatModel(
        replies=[
            '{"correct": false, "score": 0.1, "feedback": "The Elbe does not cross Prague."}',
            '{"correct": true, "score": 0.9, "feedback": "Right river."}',
        ]
    )
    model = reflector()
    seen: list[dict[str, Any]] = []
    graph = create_reflexion_graph(river_actor(seen), judge, reflector_model=model)
    state = run(graph, {"task": TASK["task"]})
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert state["evaluations"][0]["feedback"].endswith("The Elbe does not cross Prague.")
    assert "Final answer: Elbe" in judge.prompt_text(0)
    assert "The Elbe does not cross Prague." in model.prompt_text(0)


@pytest.mark.parametrize(
    ("threshold", "successes"), [(0.5, [False, True]), (0.7, [False, False, False])]
)
def test_float_scores_succeed_at_the_context_threshold(threshold, successes):
    """A float from the evaluator is a score; success is score >= Context.judge_threshold."""
    scores = iter([0.4, 0.6, 0.6])
    graph = create_reflexion_graph(
        lambda inputs: "x", lambda t, a: next(scores), reflector_model=reflector()
    )
    state = run(graph, TASK, Context(judge_threshold=threshold))
    assert [e["success"] for e in state["evaluations"]] == successes
    assert state["evaluations"][0]["score"] == 0.4


def test_state_evaluator_and_evaluation_result_and_no_answer():
    """A one-argument evaluator gets the state (trajectory included) and may return an
    Evaluation whose feedback reaches the reflector; an actor that gives no answer fails its
    trial without calling a (task, answer) evaluator."""
    model = reflector()

    def by_state(state: State) -> Evaluation:
        ok = state.trajectory[0].startswith("Thought: I recall the Vltava")
        return Evaluation(float(ok), ok, "good" if ok else "Check which city the river crosses.")

    state = run(create_reflexion_graph(river_actor([]), by_state, reflector_model=model), TASK)
    assert [e["feedback"] for e in state["evaluations"]] == [
        "Check which city the river crosses.",
        "good",
    ]
    assert "Check which city the river crosses." in model.prompt_text(0)

    called: list[str] = []
    graph = create_reflexion_graph(
        lambda inputs: {"answer": "  "},
        lambda t, a: called.append(a) or True,
        reflector_model=reflector(),
    )
    state = run(graph, TASK, Context(max_trials=2))
    assert called == [] and state["solved"] is False and state["trial"] == 2
    assert state["evaluations"][0]["feedback"] == "Answer is INCORRECT: the actor gave no answer"


def test_stream_updates_show_trials_and_reflections():
    """``stream(stream_mode="updates")`` yields actor, evaluator (the trial record) and
    reflector (the lesson) events in loop order."""
    graph = create_reflexion_graph(
        river_actor([]), lambda t, a: a == "Vltava", reflector_model=reflector()
    )
    events = list(graph.stream(TASK, stream_mode="updates"))
    assert [next(iter(e)) for e in events] == [
        "actor",
        "evaluator",
        "reflector",
        "actor",
        "evaluator",
        "select_answer",
    ]
    assert events[1]["evaluator"]["evaluations"][0]["answer"] == "Elbe"
    assert events[2]["reflector"]["reflections"] == [LESSON]


class Support(TypedDict, total=False):
    """A user's own parent state, with its own key names."""

    question: str
    reply: str
    tries: int


@dataclass
class AppContext:
    """A user's own context schema for the parent graph."""

    user: str = "ana"


def test_subgraph_in_a_user_graph_streams_child_events():
    """The compiled graph runs inside a node of a user's StateGraph (with its own state keys
    and its own context schema): state maps in and out, the child's context is passed at
    invoke, and ``stream(subgraphs=True)`` delivers the child's evaluator and reflector events
    under the parent node's namespace."""
    child = create_reflexion_graph(
        river_actor([]), lambda t, a: a == "Vltava", reflector_model=reflector()
    )

    def solve(state: Support) -> Support:
        out = child.invoke({"task": state["question"]}, context=Context(max_trials=3))
        return {"reply": out["answer"], "tries": out["trial"]}

    builder = StateGraph(Support, context_schema=AppContext)
    builder.add_node("solve", solve)
    builder.add_edge(START, "solve")
    parent = builder.compile(checkpointer=InMemorySaver())
    events = list(
        parent.stream(
            {"question": TASK["task"]},
            {"configurable": {"thread_id": "p1"}},
            context=AppContext(),
            stream_mode="updates",
            subgraphs=True,
        )
    )
    child_nodes = [next(iter(u)) for ns, u in events if ns and ns[0].startswith("solve:")]
    assert child_nodes == [
        "actor",
        "evaluator",
        "reflector",
        "actor",
        "evaluator",
        "select_answer",
    ]
    assert events[-1] == ((), {"solve": {"reply": "Vltava", "tries": 2}})


class Shared(TypedDict, total=False):
    task: str
    answer: str
    solved: bool


def test_compiled_graph_as_a_node_shares_keys_and_inherits_the_context():
    """Added directly as a node, the graph reads the parent's ``task`` and writes back the
    output keys the parent has; a parent without a context schema hands its ``Context`` down
    (max_trials=1 stops the child after one failed trial)."""
    child = create_reflexion_graph(
        river_actor([]), lambda t, a: a == "Vltava", reflector_model=reflector()
    )
    builder = StateGraph(Shared)
    builder.add_node("reflexion", child)
    builder.add_edge(START, "reflexion")
    parent = builder.compile()
    assert parent.invoke({"task": TASK["task"]}) == {
        "task": TASK["task"],
        "answer": "Vltava",
        "solved": True,
    }
    one = parent.invoke({"task": TASK["task"]}, context=Context(max_trials=1))
    assert one["answer"] == "Elbe" and one["solved"] is False


@dataclass
class ParentContext:
    """A parent's own context schema that shares one field with ours."""

    max_trials: int = 1
    user: str = "ana"


def test_a_parent_context_schema_of_its_own_passes_the_shared_fields():
    """Added directly as a node of a parent whose context schema is its own dataclass, the
    graph takes the fields the two share (max_trials=1 stops after one failed trial) and our
    defaults for the rest, instead of failing on the foreign object."""
    child = create_reflexion_graph(
        river_actor([]), lambda t, a: a == "Vltava", reflector_model=reflector()
    )
    builder = StateGraph(Shared, context_schema=ParentContext)
    builder.add_node("reflexion", child)
    builder.add_edge(START, "reflexion")
    parent = builder.compile()
    one = parent.invoke({"task": TASK["task"]}, context=ParentContext(max_trials=1))
    assert one["answer"] == "Elbe" and one["solved"] is False
    two = parent.invoke({"task": TASK["task"]}, context=ParentContext(max_trials=3))
    assert two["answer"] == "Vltava" and two["solved"] is True


def test_read_reply_finds_the_last_answer_line():
    """The reply reader: the text after the last ``Answer:`` marker (multi-line allowed) is
    the answer, reasoning lines come before it; no marker means the whole reply."""
    assert read_reply("Thought: a\nb\nAnswer: x") == ("x", ["Thought: a", "b", "Answer: x"])
    assert read_reply("Answer: no\n**Answer:** def f():\n    return 1") == (
        "def f():\n    return 1",
        ["Answer: no", "Answer: def f():\n    return 1"],
    )
    assert read_reply("  Paris ") == ("Paris", ["Answer: Paris"])
    assert read_reply("Thought: unsure\nAnswer:") == (None, ["Thought: unsure", "Answer: (none)"])
    assert read_reply("") == (None, ["Answer: (none)"])


@pytest.mark.parametrize(
    ("reply", "answer", "reasoning"),
    [
        (
            "Thought: Australia's best-known city. The capital of Australia is Sydney. Answer: Sydney",
            "Sydney",
            ["Thought: Australia's best-known city. The capital of Australia is Sydney."],
        ),
        (
            "Answer: Canberra\nOn second thought, Answer: Sydney",
            "Sydney",
            ["Answer: Canberra", "On second thought,"],
        ),
        ("I would say ANSWER: 42 then. Final answer: 43", "43", ["I would say ANSWER: 42 then."]),
        ("**Answer:** x", "x", []),
    ],
)
def test_read_reply_finds_a_marker_anywhere_and_the_last_wins(reply, answer, reasoning):
    assert read_reply(reply) == (answer, [*reasoning, f"Answer: {answer}"])


def test_read_reply_leaves_a_lower_case_answer_inside_code_whole():
    """Inside a line only ``Answer:`` (or ``ANSWER:``, ``final answer:``) after a space is a
    marker: a parameter called answer is code, not a marker."""
    code = "def f(answer: int) -> int:\n    return (lambda answer: answer)(answer)"
    assert read_reply(f"Answer: {code}") == (code, [f"Answer: {code}"])
    assert read_reply("the answer: no") == ("the answer: no", ["Answer: the answer: no"])


def test_the_chat_actor_scores_the_answer_after_an_inline_marker():
    """The generic actor's reply "… Sydney. Answer: Sydney" is the answer Sydney, so exact
    match against the reference accepts it."""
    graph = create_reflexion_graph(
        ScriptedChatModel(replies=["The capital of Australia is Canberra. Answer: Canberra"]),
        "exact_match",
    )
    out = graph.invoke(
        {"task": "What is the capital of Australia?", "reference": "Canberra"},
        context=Context(max_trials=1),
    )
    assert (out["answer"], out["solved"]) == ("Canberra", True)


def four(a: Any, b: Any, c: Any, d: Any) -> bool:
    return True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actor": 42}, "the actor is a int: pass a chat model, a Runnable"),
        ({"prompt": "{task}"}, "prompt is only used with a chat-model actor"),
        ({"actor": "chat", "prompt": "{question}"}, r"unknown variable\(s\) question"),
        ({"actor": "chat", "prompt": "Answer: {passages}"}, r"never uses \{task\}"),
        ({"actor": "chat", "prompt": 3}, "prompt is a int"),
        ({"evaluator": "fuzzy"}, "the evaluator 'fuzzy' is unknown"),
        ({"evaluator": 42}, "the evaluator is a int"),
        ({"evaluator": four}, "requires 4 positional arguments"),
        ({"reflector_model": 1.5}, "reflector_model is a float"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    """Wrong actor, prompt, evaluator or reflector arguments fail at build time with a
    one-line ReflexionError naming the problem."""
    args: dict[str, Any] = {"actor": lambda inputs: "x", "evaluator": lambda t, a: True}
    args.update(kwargs)
    if args["actor"] == "chat":
        args["actor"] = ScriptedChatModel(replies=["x"])
    with pytest.raises(ReflexionError, match=message) as info:
        create_reflexion_graph(args.pop("actor"), args.pop("evaluator"), **args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("actor", "evaluator", "message"),
    [
        (lambda i: "x", lambda t, a: "yes", "the evaluator returned a str"),
        (lambda i: "x", lambda t, a: 1.5, r"returned the score 1.5: scores must lie in \[0, 1\]"),
        (lambda i: ["x"], lambda t, a: True, "the actor returned a list"),
        (lambda i: {"text": "x"}, lambda t, a: True, 'without "answer" \\(keys: text\\)'),
        (lambda i: {"answer": 3}, lambda t, a: True, 'the actor\'s "answer" is a int'),
        (
            lambda i: {"answer": "x", "trajectory": [1]},
            lambda t, a: True,
            '"trajectory" is a list',
        ),
    ],
)
def test_wrong_results_at_run_time_are_one_line_errors(actor, evaluator, message):
    """An actor or evaluator returning a wrong type stops the run with a one-line
    ReflexionError naming the type."""
    graph = create_reflexion_graph(actor, evaluator, reflector_model=reflector())
    with pytest.raises(ReflexionError, match=message) as info:
        graph.invoke(TASK)
    assert "\n" not in str(info.value)


def test_empty_task_is_a_one_line_error():
    """An empty task stops the run before the actor is called."""
    called: list[Any] = []
    graph = create_reflexion_graph(lambda i: called.append(i) or "x", lambda t, a: True)
    with pytest.raises(ReflexionError, match="the task is empty"):
        graph.invoke({"task": "  "})
    assert called == []


def test_generic_evaluation_exact_match_with_reference_else_judge():
    """The generic graph's evaluator: exact match when a reference is given (the judge is not
    asked), the LLM judge without one or with evaluator=llm."""
    judge = ScriptedChatModel(replies=['{"correct": true, "score": 1, "feedback": "fine"}'])
    steps = generic_evaluation(judge)

    def evaluate(state: State, ctx: Context) -> Evaluation:
        return drive(steps(state, ctx))

    state = State(task="Which river?", reference="Vltava", answer="the Vltava")
    assert evaluate(state, Context()).success is True
    assert judge.prompts == []
    assert evaluate(State(task="Which river?", answer="x"), Context()).feedback.endswith("fine")
    assert evaluate(state, Context(evaluator="llm")).success is True
    assert len(judge.prompts) == 2
    agreeing = generic_evaluation(ScriptedChatModel(replies=["Vltava", "Elbe"]))
    assert drive(agreeing(state, Context(evaluator="agreement"))).success is True
    assert drive(agreeing(state, Context(evaluator="agreement"))).success is False


def test_langgraph_json_exports_every_graph_with_a_description():
    """Every graph in langgraph.json, the generic ``reflexion`` one included, has a
    description and its path names a compiled graph."""
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert {
        "reflexion",
        "reflexion_qa",
        "reflexion_qa_cot",
        "reflexion_react",
        "reflexion_programming",
        "reflexion_alfworld",
    } <= set(graphs)
    for entry in graphs.values():
        assert len(entry["description"]) > 40
        module, _, attr = entry["path"].removeprefix("./").partition(":")
        compiled = getattr(import_module(module.removesuffix(".py").replace("/", ".")), attr)
        assert isinstance(compiled, CompiledStateGraph)


def test_a_model_object_passed_in_keeps_its_own_temperature_and_max_tokens():
    """Context.temperature and max_tokens configure models named by a string; an object the
    caller built is used as it is, so neither reaches its calls (the field descriptions say so)."""
    actor = ScriptedChatModel(replies=["Answer: 407", "Answer: 408"])
    reflector = ScriptedChatModel(replies=["Reflection: one more."])
    graph = create_reflexion_graph(
        actor, lambda task, answer: answer == "408", reflector_model=reflector
    )
    result = graph.invoke(
        {"task": "What is 17 * 24?"}, context=Context(temperature=0.3, max_tokens=17)
    )
    assert result["solved"] and result["trial"] == 2
    for seen in (*actor.kwargs_seen, *reflector.kwargs_seen):
        assert "temperature" not in seen and "max_tokens" not in seen, seen
    described = {f.name: f.metadata["description"] for f in fields(Context)}
    for name in ("temperature", "max_tokens"):
        assert "a model object you pass in keeps its own settings" in described[name]
