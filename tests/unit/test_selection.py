"""Beyond the paper, for weak models: the answer a thread returns (best by the evaluator's
evidence, or last), trusted tests that anchor the verdict, and self-written tests doubted when
they contradict the examples or every attempt fails them. Scripted models, the real sandbox."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context, context_from
from reflexion.core.errors import ReflexionError
from reflexion.core.selection import chosen_index
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.harness.scoring.programming import answers_in_force, score_thread
from reflexion.nodes.programming.feedback import retry_reads_feedback
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem
from reflexion.programming.state import CodeState
from reflexion.qa.context import QAContext, ReActContext

TWO_EXAMPLES = (
    'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n'
    '    >>> add(2, 3)\n    5\n    >>> add(0, 0)\n    0\n    """\n'
)
NO_EXAMPLES = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n'
HIDDEN = "def check(candidate):\n    assert candidate(40, 2) == 42\n"


def code(body: str) -> str:
    return f"```python\ndef add(a: int, b: int) -> int:\n    return {body}\n```"


RIGHT, SUBTRACTS, SEVEN = code("a + b"), code("a - b"), code("7")


def build(
    actor: list[str],
    tests: list[str] | None = None,
    reflection: str = "Reflection: I will check the arithmetic.",
):
    """The programming graph on scripted models: the graph, then the actor, test writer and
    reflector models (their prompts are what the tests read)."""
    actor_model = ScriptedChatModel(replies=actor)
    tests_model = ScriptedChatModel(replies=tests or ["assert add(1, 1) == 2\n"])
    reflector = ScriptedChatModel(replies=[reflection])
    graph = programming_builder(
        actor_model=actor_model, evaluator_model=tests_model, reflector_model=reflector
    ).compile(checkpointer=InMemorySaver())
    return graph, actor_model, tests_model, reflector


def run(graph: Any, prompt: str, ctx: Context) -> dict[str, Any]:
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": prompt, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=ctx)
    return dict(graph.get_state(config).values)


# ---- choosing the answer ----------------------------------------------------------------------


def test_best_ranks_success_then_score_and_keeps_the_earliest_of_equals():
    records = [
        {"answer": "a", "score": 0.5, "success": False},
        {"answer": None, "score": 0.9, "success": False},
        {"answer": "c", "score": 0.5, "success": False},
        {"answer": "d", "score": 0.2, "success": True},
    ]
    assert chosen_index(records[:3], "best") == 0  # a tie goes to the earlier attempt
    assert chosen_index(records[:3], "last") == 2  # the final attempt
    assert chosen_index(records[:2], "last") is None  # which gave no answer: none, as the graph
    assert chosen_index(records, "best") == 3  # success beats any score
    assert chosen_index([{"answer": None}], "best") is None
    assert answers_in_force(records, 5, "best") == ["a", "a", "a", "d", "d"]
    assert answers_in_force(records, 4, "last") == ["a", None, "c", "d"]


def test_a_worse_later_attempt_is_not_returned_under_best_but_is_under_last():
    """Trial 1 passes one of the two examples, trial 2 none: best keeps trial 1's code (and
    its per-iteration pass@1 never drops), last hands back the worse one."""
    problem = CodeProblem("t/0", "py", TWO_EXAMPLES, "add", HIDDEN, "humaneval")
    for choice, expected in (("best", "a - b"), ("last", "7")):
        graph, *_ = build([SUBTRACTS, SEVEN])
        state = run(graph, TWO_EXAMPLES, Context(max_trials=2, select_answer=choice))
        assert [e["score"] for e in state["evaluations"]] == [0.5, 0.0]
        assert f"return {expected}" in state["answer"] and state["solved"] is False
        scored = score_thread(problem, state["evaluations"], 2, choice=choice)
        assert f"return {expected}" in scored["implementation"]


def test_best_answer_also_applies_to_question_answering():
    """An LLM-free QA loop: every trial fails exact match, so best returns the first answer."""
    actor = ScriptedChatModel(replies=["Thought: x\nAction: Finish[Paris]", "Finish[Rome]"])
    reflector = ScriptedChatModel(replies=["Reflection: check the country."])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile()
    start = {"task": "Capital of Germany?", "passages": "Berlin is.", "reference": "Berlin"}
    out = graph.invoke(start, context=Context(max_trials=2, strategy="reflexion"))
    assert [e["answer"] for e in out["evaluations"]] == ["Paris", "Rome"]
    assert out["answer"] == "Paris"
    out = graph.invoke(start, context=Context(max_trials=2, select_answer="last"))
    assert out["answer"] == "Rome"


# ---- trusted and doubted tests ----------------------------------------------------------------


def test_anchored_tests_are_the_prompts_examples_and_the_model_writes_none():
    graph, actor, tests_model, _ = build([SUBTRACTS, RIGHT])
    state = run(graph, TWO_EXAMPLES, Context(max_trials=3))
    assert tests_model.prompts == []
    assert state["tests"] == ["assert add(2, 3) == 5", "assert add(0, 0) == 0"]
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert "assert add(2, 3) == 5 # output: -1" in actor.prompt_text(1)


@pytest.mark.parametrize("tests", ["held_out", "all"])
def test_under_held_out_and_all_the_models_own_tests_decide_though_the_prompt_has_examples(tests):
    """The examples do not become tests, so a written test that contradicts one stays."""
    wrong_twin = "assert add(2, 3) == 6\nassert add(4, 4) == 8\n"
    graph, _actor, tests_model, _ = build([RIGHT], tests=[wrong_twin])
    state = run(graph, TWO_EXAMPLES, CodeContext(max_trials=1, internal_tests=tests))
    assert len(tests_model.prompts) == 1
    assert sorted(state["tests"]) == ["assert add(2, 3) == 6", "assert add(4, 4) == 8"]
    assert state["written_tests"] == state["tests"]


def test_a_self_written_test_every_attempt_fails_is_doubted_and_stops_the_loop():
    """No examples: the model's tests decide. Its wrong test fails the right code twice, so
    under anchored it is doubted and trial 2 succeeds; under all, every trial is spent."""
    tests = ["assert add(1, 1) == 2\nassert add(1, 2) == 4\n"]
    graph, *_ = build([RIGHT, RIGHT, RIGHT], tests=tests)
    state = run(graph, NO_EXAMPLES, Context(max_trials=3))
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert "possibly wrong" in state["evaluations"][1]["feedback"]
    assert state["test_failures"] == [["assert add(1, 2) == 4"], ["assert add(1, 2) == 4"]]
    graph, *_ = build([RIGHT, RIGHT, RIGHT], tests=tests)
    state = run(graph, NO_EXAMPLES, CodeContext(max_trials=3, internal_tests="all"))
    assert [e["success"] for e in state["evaluations"]] == [False, False, False]


def test_a_test_only_some_attempts_fail_still_counts():
    """Trial 1 fails only add(1, 2), trial 2 only add(1, 1): no test is failed by both."""
    tests = ["assert add(1, 1) == 2\nassert add(1, 2) == 3\n"]
    graph, *_ = build([code("2 * a"), code("a + b + (a == b)"), RIGHT], tests=tests)
    state = run(graph, NO_EXAMPLES, Context(max_trials=3))
    assert [e["success"] for e in state["evaluations"]] == [False, False, True]


def test_no_success_when_doubt_leaves_no_test_and_the_earlier_attempt_stands():
    """The model wrote one test, and it is wrong: the right first attempt fails it, so does a
    wrong retry. Doubt then leaves nothing that counts, which is no evidence: the retry is no
    success, the thread goes on, and best hands back the first attempt (the same score, the
    earlier one)."""
    tests = ["assert add(1, 2) == 4\n"]
    graph, *_ = build([RIGHT, SUBTRACTS, SEVEN], tests=tests)
    state = run(graph, NO_EXAMPLES, Context(max_trials=3))
    records = state["evaluations"]
    assert [e["success"] for e in records] == [False, False, False]
    assert [(e["tests_passed"], e["tests_counted"]) for e in records] == [(0, 1), (0, 0), (0, 0)]
    assert "No test that counts was passed" in records[1]["feedback"]
    assert "return a + b" in state["answer"] and state["solved"] is False


def test_a_later_success_the_tests_cannot_tell_from_the_first_attempt_leaves_it_standing():
    """The model's third test is wrong. The right first attempt fails only it; the wrong
    retry (2 * a) fails it too and passes the rest, so the test is doubted and the retry
    succeeds. Judged on the tests that count now, the first attempt succeeds as well: the
    record ties with trial 1, and best returns the first attempt (last still the retry)."""
    tests = ["assert add(1, 1) == 2\nassert add(2, 2) == 4\nassert add(1, 2) == 4\n"]
    for choice, expected in (("best", "a + b"), ("last", "2 * a")):
        graph, *_ = build([RIGHT, code("2 * a")], tests=tests)
        state = run(graph, NO_EXAMPLES, Context(max_trials=3, select_answer=choice))
        records = state["evaluations"]
        assert [e["success"] for e in records] == [False, True]
        assert records[1]["ties"] == 1 and "earlier one stands" in records[1]["feedback"]
        assert f"return {expected}" in state["answer"] and state["solved"] is True


def test_an_accepted_attempt_records_how_many_counted_tests_it_passed():
    problem = CodeProblem("t/0", "py", TWO_EXAMPLES, "add", HIDDEN, "humaneval")
    graph, *_ = build([SUBTRACTS, RIGHT])
    state = run(graph, TWO_EXAMPLES, Context(max_trials=3))
    assert [(e["tests_passed"], e["tests_counted"]) for e in state["evaluations"]] == [
        (1, 2),
        (2, 2),
    ]
    scored = score_thread(problem, state["evaluations"], 3, choice="best")
    assert scored["internal_tests"] == [2, 2] and scored["internal_pass"] is True


def test_resample_retries_from_the_task_alone_with_no_reflection():
    """retry=resample under strategy none: best-of-n by the evaluator. Every prompt is
    the first trial's, no reflector is asked, the failed tests are never shown."""
    graph, actor_model, _, reflector = build(
        [SUBTRACTS, SEVEN, RIGHT], reflection="Reflection: unused."
    )
    ctx = CodeContext(max_trials=4, strategy="none", retry="resample")
    state = run(graph, TWO_EXAMPLES, ctx)
    assert [e["success"] for e in state["evaluations"]] == [False, False, True]
    assert actor_model.prompt_text(1) == actor_model.prompt_text(0)
    assert actor_model.prompt_text(2) == actor_model.prompt_text(0)
    assert "output" not in actor_model.prompt_text(2)
    assert reflector.prompts == []


def test_informed_once_reads_the_feedback_once_then_resamples_and_stops_reflecting():
    """retry=informed_once under reflexion: the first retry reads the failed test and the
    reflection; once it has failed too, every later prompt is the first trial's and the
    reflector is not asked again (nothing would read it)."""
    graph, actor_model, _, reflector = build(
        [SUBTRACTS, SEVEN, code("a * b"), RIGHT],
        reflection="Reflection: I subtracted instead of adding.",
    )
    state = run(graph, TWO_EXAMPLES, CodeContext(max_trials=4, retry="informed_once"))
    assert [e["success"] for e in state["evaluations"]] == [False, False, False, True]
    retry = actor_model.prompt_text(1)
    assert "I subtracted instead of adding" in retry and "output" in retry
    assert actor_model.prompt_text(2) == actor_model.prompt_text(0)
    assert actor_model.prompt_text(3) == actor_model.prompt_text(0)
    assert len(reflector.prompts) == 1
    assert state["answer"].strip().endswith("return a + b")


def test_informed_once_counts_only_retries_the_model_wrote():
    """A fix rustc suggested is no retry of the model's: after a first attempt and its fix,
    the next retry still reads the feedback; after a failed retry of the model's, none does.
    Every other mode but resample always reads it."""
    once = CodeContext(retry="informed_once")

    def state(*fixes: bool) -> CodeState:
        records = [{"answer": "x", "compiler_fix": fix} for fix in fixes]
        return CodeState(task=NO_EXAMPLES, entry_point="add", evaluations=records)

    assert retry_reads_feedback(state(False), once)
    assert retry_reads_feedback(state(False, True), once)
    assert not retry_reads_feedback(state(False, False), once)
    assert not retry_reads_feedback(state(False, True, False), once)
    assert retry_reads_feedback(state(False, False, False), CodeContext(retry="informed"))
    assert not retry_reads_feedback(state(False), CodeContext(retry="resample"))


# ---- choice fields are checked from their type ------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (Context, "strategy", "reflexon"),
        (Context, "evaluator", "exact"),
        (ReActContext, "wiki", "online"),
        (Context, "select_answer", "first"),
        (CodeContext, "internal_tests", "none"),
        (AlfworldContext, "alfworld_memory", "notes"),
    ],
)
def test_every_choice_field_rejects_a_value_outside_its_type(
    cls: type[Context], field: str, value: str
):
    with pytest.raises(ReflexionError, match=f"^{field} is '{value}': use one of "):
        cls(**{field: value})


def test_each_graph_offers_its_own_evaluators():
    """The base context offers the evaluators of short answers, ALFWorld's its own two: each
    refuses the other's with the choices that fit, when the context is made."""
    with pytest.raises(
        ReflexionError, match=r"^evaluator is 'heuristic': use one of exact_match, llm, agreement$"
    ):
        Context(evaluator="heuristic")
    with pytest.raises(
        ReflexionError, match=r"^evaluator is 'heuristic': use one of exact_match, llm, agreement$"
    ):
        context_from({"evaluator": "heuristic"}, QAContext)
    assert AlfworldContext().evaluator == "heuristic"
    assert AlfworldContext(evaluator="llm").evaluator == "llm"


def test_a_nested_fields_error_names_its_path():
    with pytest.raises(ReflexionError, match=r"^budget\.tokens is 0: use 1 or more$"):
        Context(budget={"tokens": 0})


@pytest.mark.parametrize(
    ("field", "value", "wanted"),
    [
        ("max_trials", "3", "a whole number"),
        ("memory_size", 1.5, "a whole number"),
        ("temperature", True, "a number"),
        ("temperature", "0.7", "a number"),
        ("judge_threshold", "high", "a number"),
        ("actor_model", 8080, "a string"),
        (
            "budget",
            "yes",
            "an object of tokens, cost, prompt_price, completion_price, seconds, plateau_trials",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_a_one_line_error(field: str, value: object, wanted: str):
    """A server's JSON context or an embedding app can send a string where a number belongs:
    that names the field and the type, instead of a TypeError from deep inside a node."""
    with pytest.raises(ReflexionError, match=f"^{field} is .*: give {wanted}$"):
        Context(**{field: value})


def test_an_int_is_accepted_where_a_float_belongs():
    assert CodeContext(temperature=1, test_timeout=2).temperature == 1


def test_unknown_context_keys_warn_and_known_ones_apply():
    from types import SimpleNamespace

    from reflexion.core.context import get_context

    runtime = SimpleNamespace(context={"max_trials": 2, "max_trails": 5, "strategi": "none"})
    with pytest.warns(UserWarning, match="max_trails, strategi are not fields of Context"):
        ctx = get_context(runtime)  # type: ignore[arg-type]
    assert ctx.max_trials == 2 and ctx.strategy == Context().strategy


def test_an_unknown_key_s_warning_names_what_to_write_instead():
    """A renamed key names its replacement; a removed one, the feature it belonged to; a field
    of another graph's context names that context; a typo asks for the spelling to be
    checked."""
    with pytest.warns(UserWarning) as caught:
        ctx = Context(judge_mode="score", lessons={"enabled": True})  # type: ignore[call-arg]
    message = str(caught[0].message)
    assert "judge_mode is now judge_threshold" in message
    assert "lessons belonged to the long-term lesson store (removed" in message
    assert "cde2057" in message and "check the spelling" not in message
    assert not hasattr(ctx, "lessons")
    with pytest.warns(UserWarning, match="max_tests is a field of CodeContext"):
        QAContext(max_tests=3)  # type: ignore[call-arg]
    with pytest.warns(UserWarning, match=r"\(check the spelling;"):
        CodeContext(max_tset=3)  # type: ignore[call-arg]
    with pytest.warns(UserWarning) as caught:
        ctx = CodeContext(repair=True, example_tests=False)  # type: ignore[call-arg]
    message = str(caught[0].message)
    assert "repair is now strategy: last_attempt or last_attempt_and_reflexion" in message
    assert "example_tests is now internal_tests" in message
    assert ctx == CodeContext()  # ignored: a typo must not stop a server run


def test_the_warning_names_another_family_s_context_that_the_caller_never_imported():
    """In a fresh interpreter that imported only the QA context, a programming field still
    names CodeContext."""
    script = (
        "import warnings\n"
        "from reflexion.qa.context import QAContext\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    QAContext(max_tests=3)\n"
        "print(caught[0].message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "max_tests is a field of CodeContext" in done.stdout


# ---- paired significance ----------------------------------------------------------------------


def test_exact_mcnemar_and_paired_counts():
    from reflexion.harness.bench.stats import mcnemar_exact, paired

    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 4096)
    counts = paired([(True, True), (False, True), (False, True), (True, False), (False, False)])
    assert (counts.tasks, counts.baseline, counts.method) == (5, 2, 3)
    assert (counts.fixed, counts.broken) == (2, 1) and counts.p_value == 1.0


# ---- a retry that repeats earlier code is sampled again ---------------------------------------


def test_a_retry_that_repeats_its_code_is_sampled_again():
    """The second reply only reformats trial 1's code (same syntax tree): it is drawn again,
    and the new sample is the attempt; with repeat_guard=0 the repeat stands."""
    same = "```python\ndef add(a: int, b: int) -> int:\n\n    return a - b  # again\n```"
    graph, actor, *_ = build([SUBTRACTS, same, RIGHT])
    state = run(graph, TWO_EXAMPLES, Context(max_trials=2))
    assert len(actor.prompts) == 3 and "return a + b" in state["answer"]
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    graph, actor, *_ = build([SUBTRACTS, same, RIGHT])
    state = run(graph, TWO_EXAMPLES, CodeContext(max_trials=2, repeat_guard=0))
    assert len(actor.prompts) == 2 and state["solved"] is False


def test_a_fresh_retry_shows_the_failures_and_reflection_but_not_the_previous_code():
    graph, actor, *_ = build([SUBTRACTS, RIGHT])
    state = run(graph, TWO_EXAMPLES, CodeContext(max_trials=2, retry="informed"))
    assert state["solved"] is True
    retry = actor.prompts[1]
    assert [m.type for m in retry] == ["system", "human"]
    text = actor.prompt_text(1)
    assert "a - b" not in text and "from scratch" in text
    assert "assert add(2, 3) == 5 # output: -1" in text and "check the arithmetic" in text
    graph, actor, *_ = build([SUBTRACTS, RIGHT])
    run(
        graph,
        TWO_EXAMPLES,
        CodeContext(max_trials=2, retry="informed", strategy="last_attempt_and_reflexion"),
    )
    assert [m.type for m in actor.prompts[1]] == ["system", "human", "ai", "human"]


def test_whether_an_answer_compiled_is_its_record_s_flag_never_its_feedback_s_text():
    """A record without ``compiled`` had no answer to build; the feedback's words decide
    nothing."""
    from reflexion.nodes.programming.common import NOT_COMPILED, did_compile

    old: Any = {"trial": 1, "answer": "x", "score": 0.0, "success": False}
    assert did_compile({**old, "feedback": f"{NOT_COMPILED}\nerror", "compiled": False}) is False
    assert did_compile({**old, "feedback": f"{NOT_COMPILED}\nerror", "compiled": True}) is True
    assert did_compile({**old, "answer": None, "feedback": "No implementation"}) is True


def test_copy_rate_counts_texts_that_reuse_a_run_of_the_examples_words():
    from reflexion.harness.bench.stats import copy_rate

    examples = "My filter only accepts lowercase vowels, so the uppercase A is not counted."
    copied = "My filter only accepts lowercase vowels in this list."
    own = "I return the sum of the digits instead of their product."
    assert copy_rate([copied, own], examples) == 0.5
    assert copy_rate([own], examples) == 0.0 and copy_rate([], examples) == 0.0


def test_the_paired_programming_table_reports_fixed_broken_p_and_copy_rate():

    from reflexion.harness.bench.family_tables import (
        code_paired,
    )

    copied = "My filter only accepts lowercase vowels, so nothing else counts."
    finals = [
        {"pass_by_iteration": [False, True], "hidden_pass": True, "evaluations": [{}, {}]},
        {"pass_by_iteration": [True], "hidden_pass": True, "evaluations": [{}]},
        {
            "pass_by_iteration": [False, False],
            "hidden_pass": False,
            "evaluations": [{}, {}],
            "reflections": [copied],
        },
    ]
    table = code_paired({"reflexion": finals})
    headers = [str(c.header).replace("\n", " ") for c in table.columns]
    assert headers[-2:] == ["McNemar p", "copied"]
    cells = [str(next(iter(c.cells))) for c in table.columns]
    assert cells[1:] == ["3", "1", "2", "1", "0", "1", "1/1"]
