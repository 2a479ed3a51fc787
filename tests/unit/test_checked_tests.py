"""Where the tests are the model's own: ``internal_tests`` ``held_out``, and ``examples`` where
the prompt has no example (every second test decides unseen by the retries and the
reflector); nothing changes where trusted tests decide. ``examples`` is the default. And ``reflexion perf retries``, which judges every attempt by the
hidden tests. Scripted models, the real sandbox."""

from __future__ import annotations

import json
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from reflexion.graphs.programming import programming_builder
from reflexion.harness.bench.settings import first_trial_key
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.harness.perf.code_retries import (
    failed_tests,
    passed_tests,
    quotes_input,
    retry_figures,
)
from reflexion.nodes.programming.feedback import render_outcomes
from reflexion.programming.context import CodeContext
from tests.clikit import cli
from tests.recordkit import code_record

NO_EXAMPLES = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n'
ONE_EXAMPLE = (
    'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n'
    '    >>> add(2, 3)\n    5\n    """\n'
)
RIGHT = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
SUBTRACTS = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```"
# The model's second test is wrong (1 + 2 is 3).
TESTS = "assert add(1, 1) == 2\nassert add(1, 2) == 4\n"


def run(prompt: str, ctx: CodeContext) -> tuple[ScriptedChatModel, ScriptedChatModel]:
    actor = ScriptedChatModel(replies=[SUBTRACTS, RIGHT])
    reflector = ScriptedChatModel(replies=["Reflection: I subtract instead of adding."])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=[TESTS]),
        reflector_model=reflector,
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": prompt, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=ctx)
    return actor, reflector


def test_held_out_changes_nothing_where_trusted_tests_decide():
    """The prompt's example decides alone (no test is written): nothing is held out, and the
    retry is asked to pass the tests."""
    actor, reflector = run(ONE_EXAMPLE, CodeContext(max_trials=2))
    for prompt in (actor.prompt_text(1), reflector.prompt_text(0)):
        assert "assert add(2, 3) == 5 # output: -1" in prompt and "held out" not in prompt
    assert "passes these tests" in actor.prompt_text(1)


def test_held_out_tests_decide_but_neither_the_retry_nor_the_reflector_sees_them():
    """The wrong second test (add(1, 2) == 4) is held out: the retry and the reflector see
    only the first one, and how many held-out tests passed; the trial record keeps both."""
    actor, reflector = run(NO_EXAMPLES, CodeContext(max_trials=2, internal_tests="held_out"))
    for prompt in (actor.prompt_text(1), reflector.prompt_text(0)):
        assert "assert add(1, 1) == 2 # output: 0" in prompt
        assert "add(1, 2)" not in prompt
        assert "1 more of your tests ran and are held out" in prompt
        assert "This implementation passed 0 of them." in prompt


def test_the_default_holds_out_every_second_own_test():
    """Measured on whole HumanEval with the model's own tests (docs/results/noisy-evidence.md):
    the default holds them out where the prompt has no example, so a context that names no
    internal_tests hides the second test."""
    actor, reflector = run(NO_EXAMPLES, CodeContext(max_trials=2))
    assert "add(1, 2)" not in actor.prompt_text(1)
    assert "add(1, 2)" not in reflector.prompt_text(0)


def test_held_out_names_the_files_of_one_attempt_and_of_resample_as_it_is():
    """Neither one attempt nor a retry from the task alone reads the tests; their files are
    named by the setting as given (before anchored was removed, they were named anchored)."""
    from reflexion.harness.bench.settings import result_settings

    def trust(**kw: object) -> object:
        return result_settings(CodeContext(**kw))["test_trust"]  # type: ignore[arg-type]

    assert trust(max_trials=1) == "held_out"
    assert trust(strategy="none", retry="resample") == "held_out"
    assert trust(strategy="none", retry="resample", internal_tests="all") == "all"
    assert trust(internal_tests="held_out") == "held_out"


def test_an_attempt_must_pass_the_held_out_tests_too():
    """The right retry passes the shown test and fails the wrong held-out one: no success
    (doubted only once every attempt failed it, which the first one's error also did)."""
    actor = ScriptedChatModel(replies=[RIGHT, RIGHT])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=[TESTS]),
        reflector_model=ScriptedChatModel(replies=["Reflection: fine."]),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": NO_EXAMPLES, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=CodeContext(max_trials=1))
    record = graph.get_state(config).values["evaluations"][0]
    assert record["success"] is False and "add(1, 2) == 4" in record["feedback"]


def test_held_out_and_all_run_different_first_trials():
    base = {"bench": "programming", "strategy": "reflexion", "max_trials": 4}
    held_out = first_trial_key({**base, "test_trust": "held_out"})
    assert first_trial_key({**base, "test_trust": "all"}) != held_out


def test_the_feedback_is_rendered_from_the_outcomes_and_read_from_them_alone():
    """A test whose text holds a comment mark, or starts with another test's text, is read
    back exactly: nothing parses the feedback's prose."""
    tests = ["assert f('a # b') == 1", "assert f(1) == 2", "assert f(1) == 2 or True"]
    record = code_record(
        1, "x", {tests[0]: "output: 3", tests[1]: None, tests[2]: "ZeroDivisionError"}
    )
    record["outcomes"].append(
        {"test": "assert f(9)", "passed": False, "detail": "", "standing": "doubted"}
    )
    record["feedback"] = render_outcomes(record["outcomes"], "py")
    assert record["feedback"] == (
        "Tests passed:\nassert f(1) == 2\n\nTests failed:\n"
        "assert f('a # b') == 1 # output: 3\nassert f(1) == 2 or True # ZeroDivisionError\n\n"
        "Tests every attempt failed (self-written, possibly wrong; not counted):\nassert f(9)"
    )
    assert failed_tests(record, [*tests, "assert f(9)"]) == [
        ("assert f('a # b') == 1", "output: 3"),
        ("assert f(1) == 2 or True", "ZeroDivisionError"),
    ]
    assert passed_tests(record, tests) == ["assert f(1) == 2"]
    assert failed_tests({"feedback": "The implementation does not compile:"}, tests) == []


def test_held_out_tests_are_left_out_by_name_even_where_a_shown_test_starts_with_one():
    """Every second self-written test is held out: a shown test whose text begins with a held
    out one's stays shown (reading the prose back once hid it too); the held out ones never
    appear, and the note counts how many of them passed. Which tests are held out is the
    reader's setting, so a record written under ``anchored`` is read the same way."""
    from reflexion.nodes.programming.feedback import shown_feedback
    from reflexion.programming.state import CodeState

    tests = ["assert f('<') == 0", "assert f('<>') == 1", "assert f('[]') == 1", "assert f('[]')"]
    record = code_record(
        1, "x", {tests[0]: None, tests[1]: "output: 0", tests[2]: None, tests[3]: None}
    )
    state = CodeState(task="def f(s): ...", tests=tests, written_tests=tests, language="py")
    shown = shown_feedback(record, state, CodeContext(internal_tests="held_out"))  # type: ignore[arg-type]
    assert shown.startswith("Tests passed:\nassert f('<') == 0\nassert f('[]') == 1\n\n")
    assert "Tests failed:\n(none)" in shown and "f('<>')" not in shown
    assert "assert f('[]')\n" not in shown + "\n" and "passed 1 of them" in shown
    assert shown_feedback(record, state, CodeContext(internal_tests="all")) == record["feedback"]  # type: ignore[arg-type]


def thread(verdicts: list[bool], hidden: bool, **extra: Any) -> dict[str, Any]:
    """A final line whose attempts are ``code0``, ``code1``…; the judge reads the verdicts."""
    tests = ["assert add(1, 1) == 2", "assert add(1, 2) == 4"]
    evaluations = [
        code_record(i + 1, f"code{i}", {tests[0]: None, tests[1]: "output: 3"})
        for i in range(len(verdicts))
    ]
    return {
        "task_id": f"t/{len(verdicts)}{hidden}",
        "thread_id": f"x-t/{len(verdicts)}{hidden}",
        "entry_point": "add",
        "evaluations": evaluations,
        "hidden_pass": hidden,
        "tests": tests,
        "written_tests": tests,
        "_verdicts": verdicts,
        **extra,
    }


def test_retry_figures_count_fixes_breaks_kept_answers_wrong_tests_and_grounding():
    finals = [thread([False, True], True), thread([True, False, True], False)]
    finals.append(thread([False, False], False))
    reflections = {  # the reflection rows of a results file, by thread: (trial, text)
        "x-t/2True": [(1, "For add(1, 2) I subtract.")],
        "x-t/3False": [(1, "generic"), (2, "I will check add(1,1).")],  # passed, not failed
    }
    by_task = {f["task_id"]: f["_verdicts"] for f in finals}
    fig = retry_figures(
        finals, lambda task, code: by_task[task][int(code.removeprefix("code"))], reflections
    )
    assert (fig.after_wrong, fig.fixed) == (3, 2)
    assert (fig.after_right, fig.broke) == (1, 1)
    assert (fig.drew_right, fig.returned_right) == (2, 1)
    # three right attempts, each ran both tests and failed the wrong one
    assert (fig.right_tests, fig.wrong_tests) == (6, 3)
    assert (fig.reflections, fig.grounded) == (3, 1)
    # every attempt fails add(1, 2) with output 3: each retry ran it again, the same way
    assert (fig.failed_before, fig.passed_after, fig.same_output) == (4, 0, 4)
    # one of those retries followed the grounded reflection (thread 1, after trial 1)
    assert (fig.grounded_failed, fig.grounded_passed) == (1, 0)
    # attempt 2 after a wrong first one: threads 1 and 3, right in thread 1; no attempt 3
    # follows two wrong ones (thread 2's first attempt was right)
    assert (fig.after_all_wrong, fig.right_after_all_wrong) == ({2: 2}, {2: 1})


def test_retry_figures_read_each_failed_test_again():
    """A retry follows the attempt before it; a failed test counts as passed, failed alike,
    or failed otherwise by the retry's run."""
    final = thread([False, False, True], True)
    tests = final["tests"]
    final["evaluations"][2] = code_record(3, "code2", {tests[0]: None, tests[1]: None})
    verdicts = final["_verdicts"]
    final["evaluations"][1] = code_record(2, "code1", {tests[0]: None, tests[1]: "output: 5"})
    fig = retry_figures([final], lambda task, code: verdicts[int(code.removeprefix("code"))])
    assert (fig.after_wrong, fig.failed_before, fig.passed_after, fig.same_output) == (2, 2, 1, 0)


def test_retry_figures_count_threads_that_ended_on_a_tie_with_trials_left():
    """A tie stops a thread early only when trials were left; the final answer's verdict is
    counted with it."""
    early = thread([True, True], True, task_id="early", settings={"max_trials": 4})
    early["evaluations"][1].update(success=True, ties=1)
    wrong = thread([False, False], False, task_id="wrong", settings={"max_trials": 4})
    wrong["evaluations"][1].update(success=True, ties=1)
    spent = thread([False, False], False, task_id="spent", settings={"max_trials": 2})
    spent["evaluations"][1].update(success=True, ties=1)  # no trial was left
    plain = thread([False, True], True, task_id="plain", settings={"max_trials": 4})
    plain["evaluations"][1].update(success=True)  # a success that no earlier attempt ties
    by_task = {f["task_id"]: f for f in (early, wrong, spent, plain)}
    fig = retry_figures(
        by_task.values(),
        lambda task, code: by_task[task]["_verdicts"][int(code.removeprefix("code"))],
    )
    assert (fig.tie_stops, fig.tie_stops_right) == (2, 1)


def test_a_reflection_is_grounded_when_it_quotes_a_failed_input():
    failed = ["assert add(1, 2) == 4", "assert add() == 0"]
    assert quotes_input('For add(1,2) my code gave "3".', failed, "add")
    assert not quotes_input("I will check the arithmetic.", failed, "add")
    assert not quotes_input("add() is wrong", ["assert add() == 0"], "add")  # nothing to quote


def test_perf_retries_judges_each_attempt_with_the_hidden_tests(tmp_path, monkeypatch, capsys):
    """A results file with one HumanEval thread: a wrong first attempt, then a right one."""
    head = "def truncate_number(number: float) -> float:\n    return "
    tests = ["assert truncate_number(3.5) == 0.5"]
    final = {
        "type": "final",
        "thread_id": "p-HumanEval/2",
        "task_id": "HumanEval/2",
        "entry_point": "truncate_number",
        "settings": {"bench": "programming", "strategy_name": "reflexion", "dataset": "humaneval"},
        "evaluations": [
            code_record(1, head + "number", {tests[0]: "output: 3.5"}),
            code_record(2, head + "number % 1.0", {tests[0]: None}),
        ],
        "hidden_pass": True,
        "tests": tests,
        "written_tests": tests,
    }
    reflection = {
        "type": "reflection",
        "thread_id": "p-HumanEval/2",
        "trial": 1,
        "text": "For truncate_number(3.5) I return 3.5, not the decimal part.",
    }
    results = tmp_path / "run.jsonl"
    results.write_text(json.dumps(reflection) + "\n" + json.dumps(final) + "\n")
    out = tmp_path / "figures.json"
    code, _ = cli(monkeypatch, capsys, "perf", "retries", str(results), "--json", str(out))
    fig = json.loads(out.read_text())["figures"][str(results)]
    assert code == 0
    assert (fig["after_wrong"], fig["fixed"], fig["drew_right"], fig["returned_right"]) == (
        1,
        1,
        1,
        1,
    )
    assert (fig["right_tests"], fig["wrong_tests"], fig["grounded"]) == (1, 0, 1)
    assert (fig["grounded_failed"], fig["grounded_passed"]) == (1, 1)
    code, err = cli(monkeypatch, capsys, "perf", "retries", str(tmp_path / "none.jsonl"))
    assert code != 0 and "does not exist" in err


def _tie_thread(task: str, entry: str, tests: list[str], code: str, hidden: bool) -> dict[str, Any]:
    """A thread that ended on a tie at trial 2: both attempts fail the same tests."""
    return {
        "type": "final",
        "thread_id": f"reflexion-{task}",
        "task_id": task,
        "entry_point": entry,
        "settings": {"max_trials": 4, "test_trust": "anchored", "code_retry": "fresh"},
        "tests": tests,
        "written_tests": tests,
        "hidden_pass": hidden,
        "evaluations": [
            {"trial": 1, "answer": code, "success": False, "score": 0.5, "compiled": True},
            {"trial": 2, "answer": code + "  # again", "success": True, "ties": 1, "score": 0.5},
        ],
    }


def _redraws(thread: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    """The resample run of the same task: its attempts, trial by trial."""
    evaluations = [{"trial": k, "answer": code} for k, code in enumerate(codes, start=1)]
    return {**thread, "settings": {"code_retry": "resample"}, "evaluations": evaluations}


def test_perf_own_tests_checks_them_on_the_canonical_solution_and_replays_ties(
    tmp_path, monkeypatch, capsys
):
    """HumanEval/0 kept a right first attempt on a tie over a wrong test; replayed, a redraw
    that fails a right test does not end it, the next one passes both tests (and is wrong),
    wins and loses the answer. HumanEval/2 kept a wrong attempt over a right and a wrong
    test; its redraws stop at trial 3 on another tie, so its replay gets no verdict."""
    close = "def has_close_elements(numbers, threshold):\n    return "
    right = (
        close + "any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[:i])"
    )
    close_tests = [
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0], 0.3) == True",  # right
        "assert has_close_elements([1.0, 2.0], 0.5) == True",  # wrong: 1.0 apart
    ]
    decimal = "def truncate_number(number):\n    return number"
    decimal_tests = [
        "assert truncate_number(3.5) == 0.5",  # right
        "assert truncate_number(1.25) == 0.5",  # wrong
        "assert truncate_number(2.0) == 0.0",  # right
        "assert truncate_number(0.25) == 0.25",  # right, and the attempt passes it
    ]
    kept = _tie_thread("HumanEval/0", "has_close_elements", close_tests, right, True)
    stuck = _tie_thread("HumanEval/2", "truncate_number", decimal_tests, decimal, False)
    first_blind = [close + "False", close + "False", close + "False", close + "True", right]
    results, redraws = tmp_path / "reflexion.jsonl", tmp_path / "resample.jsonl"
    results.write_text(json.dumps(kept) + "\n" + json.dumps(stuck) + "\n")

    def figures(*blind: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
        redraws.write_text("".join(json.dumps(b) + "\n" for b in blind))
        out = tmp_path / "figures.json"
        args = ("perf", "own-tests", str(results), "--blind", str(redraws), "--json", str(out))
        code, err = cli(monkeypatch, capsys, *args)
        return code, json.loads(out.read_text())["figures"] if code == 0 else {}, err

    code, fig, _ = figures(_redraws(kept, first_blind), _redraws(stuck, [decimal] * 3))
    assert code == 0
    assert (fig["tests"], fig["right"], fig["problems"], fig["problems_all_right"]) == (6, 4, 2, 0)
    assert fig["ties"] == {
        "right": {"all wrong": ["HumanEval/0"]},
        "wrong": {"mixed": ["HumanEval/2"]},
    }
    assert fig["replay"] == {"lost": ["HumanEval/0"], "partial": ["HumanEval/2"]}
    code, fig, _ = figures(_redraws(kept, first_blind[:2]), _redraws(stuck, [decimal] * 2))
    assert fig["replay"] == {"no_draw": ["HumanEval/0", "HumanEval/2"]}
    code, _, err = figures(kept, stuck)  # not a resample run
    assert code != 0 and "is not a `--loop resample` run" in err
    code, _, err = figures(_redraws(kept, first_blind))
    assert code != 0 and "does not hold HumanEval/2" in err


def _two_attempts(
    task: str, tests: list[str], first: dict[str, str | None], code: str
) -> dict[str, Any]:
    """A thread of two attempts: the first one's outcomes, the second one's code."""
    return {
        "type": "final",
        "thread_id": f"reflexion-{task}",
        "task_id": task,
        "tests": tests,
        "written_tests": tests,
        "hidden_pass": False,
        "evaluations": [
            code_record(1, "x", first),
            code_record(2, code, {}),
        ],
    }


def test_perf_own_tests_follows_the_first_failed_shown_test_into_the_second_attempt(
    tmp_path, monkeypatch, capsys
):
    """HumanEval/2: the first failed test is held out (every second one is), so the first
    failed shown one is the third, which is right, and the retry passes it. HumanEval/0: the
    first failed test is wrong (1.0 and 2.0 are 1.0 apart), and the retry fails it with the
    same output. The retries run in the sandbox."""
    decimal = [
        "assert truncate_number(1.25) == 0.5",  # wrong, and the first attempt passes it
        "assert truncate_number(3.5) == 0.5",  # right, held out
        "assert truncate_number(2.0) == 0.0",  # right, shown
    ]
    fixed = _two_attempts(
        "HumanEval/2",
        decimal,
        {decimal[0]: None, decimal[1]: "output: 3.5", decimal[2]: "output: 2.0"},
        "def truncate_number(number):\n    return number % 1.0",
    )
    close = [
        "assert has_close_elements([1.0, 2.0], 0.5) == True",  # wrong
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0], 0.3) == True",  # right
    ]
    kept = _two_attempts(
        "HumanEval/0",
        close,
        {close[0]: "output: False", close[1]: None},
        "def has_close_elements(numbers, threshold):\n    return False",
    )
    results, out = tmp_path / "run.jsonl", tmp_path / "figures.json"
    results.write_text(json.dumps(fixed) + "\n" + json.dumps(kept) + "\n")
    code, _ = cli(monkeypatch, capsys, "perf", "own-tests", str(results), "--json", str(out))
    assert code == 0
    second = json.loads(out.read_text())["figures"]["second"]
    assert second == {"right": {"passed": 1}, "wrong": {"same output": 1}}
