"""Cross-checking attempts against independent implementations (``Context.cross_check``): the
verdict by behaviour on probe tests, and the programming graph with scripted models and the
real sandbox (an attempt that passes the prompt's example yet behaves unlike two agreeing
implementations is retried; an agreeing one ends the thread; off, nothing changes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.programming import programming_builder
from reflexion.harness.bench.settings import result_settings
from reflexion.harness.perf.probes import probe_figures
from reflexion.programming.behaviour import disagreement, fingerprint, majority, verdict
from reflexion.programming.context import CodeContext
from reflexion.programming.probes import mutated_probes
from reflexion.programming.sandbox import SuiteResult, TestOutcome
from reflexion.testing import ScriptedChatModel

PROMPT = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n'
TESTS_REPLY = "assert both(True, False) == False\nassert both(True, True) == True\n"
RIGHT = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
CONST = "```python\ndef add(a: int, b: int) -> int:\n    return 5\n```"  # passes the example
MINUS = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```"
# The example's inputs varied; its value (5) is only a guess for them.
PROBES = [
    "assert add(3, 3) == 5",
    "assert add(4, 3) == 5",
    "assert add(2, 4) == 5",
    "assert add(2, 6) == 5",
]
SUMS = ["output: 6", "output: 7", "output: 6", "output: 8"]


# ---- the verdict ------------------------------------------------------------------------------


def test_one_agreeing_witness_backs_an_attempt_unless_a_larger_group_differs():
    a, b, c = ("pass",), ("output: 2",), ("output: 3",)
    assert verdict(a, []) == "open"
    assert verdict(a, [a]) == "agreed"
    assert verdict(a, [b]) == "open"  # one against one: undecided
    assert verdict(a, [b, b]) == "outvoted"
    assert verdict(a, [b, a]) == "agreed"  # two against one
    assert verdict(a, [b, c]) == "open"  # no two witnesses agree
    assert verdict(a, [b, b, a]) == "agreed"  # a tie between groups of two
    assert verdict(a, [b, b, b, a]) == "outvoted"
    assert majority(a, [b, c, c, a]) == c and majority(a, [a]) is None


def test_fingerprint_reads_the_probes_outcomes_whatever_they_expected():
    result = SuiteResult(
        (
            TestOutcome("assert f(1) == 1", True, ""),
            TestOutcome("assert f(2) == 9", False, "output: 4"),
            TestOutcome("assert f(3) == 9", True, ""),
        )
    )
    probes = ["assert f(2) == 9", "assert f(3) == 9"]
    assert fingerprint(result, probes) == ("output: 4", "pass")
    assert fingerprint(result, []) is None
    assert fingerprint(SuiteResult((), "SyntaxError"), probes) is None
    text = disagreement(("output: 4", "pass"), ("pass", "pass"), probes, 2, 3)
    assert "2 of 3 other implementations" in text
    assert "assert f(2) == 9  # yours: fails (output: 4); theirs: passes" in text
    assert "f(3)" not in text  # alike there


# ---- the graph --------------------------------------------------------------------------------


def run(
    actor: list[str], ctx: Context, prompt: str = PROMPT, entry_point: str = "add"
) -> tuple[dict[str, Any], ScriptedChatModel, Any]:
    actor_model = ScriptedChatModel(replies=actor)
    tests_model = ScriptedChatModel(replies=[TESTS_REPLY])
    reflector = ScriptedChatModel(replies=["Reflection: negative numbers lose their sign."])
    graph = programming_builder(
        actor_model=actor_model, evaluator_model=tests_model, reflector_model=reflector
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": prompt, "entry_point": entry_point, "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=ctx)
    return dict(graph.get_state(config).values), actor_model, tests_model


def test_an_attempt_two_agreeing_implementations_outnumber_is_retried():
    state, actor, tests_model = run(
        [CONST, RIGHT, RIGHT, RIGHT], CodeContext(max_trials=4, cross_check=2)
    )
    assert state["tests"] == ["assert add(2, 3) == 5"] and state["probe_tests"] == PROBES
    assert len(tests_model.prompts) == 0  # Python probes need no model
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert [e["score"] for e in state["evaluations"]] == [1.0, 1.0]  # both pass the example
    assert [w["fingerprint"] for w in state["witnesses"]] == [SUMS] * 2
    feedback = state["evaluations"][0]["feedback"]
    assert "Tests failed:\n(none)" in feedback and "2 of 2 other implementations" in feedback
    assert "assert add(3, 3) == 5  # yours: passes; theirs: fails (output: 6)" in feedback
    # Witnesses are drawn from the first trial's prompt; the retry is told where they differ.
    assert actor.prompt_text(1) == actor.prompt_text(0) == actor.prompt_text(2)
    assert "theirs: fails (output: 8)" in actor.prompt_text(3)
    assert "return a + b" in state["answer"]
    assert len(actor.prompts) == 4  # the retry agreed with the witnesses already drawn


def test_the_cross_check_is_a_node_of_its_own_and_the_evaluator_calls_no_model():
    """Its model calls and its verdict are the ``cross_check`` node's; the evaluator only
    runs the tests. Off, the node never runs."""
    for cross, expected in ((2, ["evaluator", "cross_check"]), (0, ["evaluator"])):
        actor = ScriptedChatModel(replies=[RIGHT, RIGHT, RIGHT])
        graph = programming_builder(
            actor_model=actor,
            evaluator_model=ScriptedChatModel(replies=[TESTS_REPLY]),
            reflector_model=ScriptedChatModel(replies=["Reflection: x."]),
        ).compile(checkpointer=InMemorySaver())
        start = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}
        config = {"configurable": {"thread_id": f"t{cross}"}, "recursion_limit": 50}
        calls, judged = [], []
        ctx = CodeContext(max_trials=4, cross_check=cross)
        for chunk in graph.stream(start, config, context=ctx, stream_mode="updates"):
            for node, update in chunk.items():
                if node in ("evaluator", "cross_check"):
                    calls.append((node, len(actor.prompts)))
                    judged += [node] if (update or {}).get("evaluations") else []
        assert [node for node, _ in calls] == expected
        assert judged == expected[-1:]
        assert calls[0][1] == 1  # the evaluator drew nothing: one prompt, the attempt's
        assert not graph.get_state(config).values.get("suite")


def test_an_attempt_the_first_witness_agrees_with_ends_the_thread():
    state, actor, _ = run([RIGHT, RIGHT], CodeContext(max_trials=4, cross_check=2))
    assert [e["success"] for e in state["evaluations"]] == [True]
    assert len(state["witnesses"]) == 1 and len(actor.prompts) == 2


def test_witnesses_that_fail_the_trusted_tests_do_not_vote():
    state, _, _ = run([CONST, MINUS, RIGHT], CodeContext(max_trials=4, cross_check=2))
    assert [w["fingerprint"] for w in state["witnesses"]] == [None, SUMS]
    # One witness against the attempt decides nothing: the attempt keeps its success.
    assert [e["success"] for e in state["evaluations"]] == [True]


def test_off_no_probes_are_written_and_a_false_positive_ends_the_thread():
    state, actor, tests_model = run([CONST], Context(max_trials=4))
    assert not state.get("probe_tests") and not state.get("witnesses")
    assert len(tests_model.prompts) == 0 and len(actor.prompts) == 1
    assert [e["success"] for e in state["evaluations"]] == [True]


def test_the_last_trial_is_not_cross_checked():
    state, actor, _ = run([CONST], CodeContext(max_trials=1, cross_check=2))
    assert state["probe_tests"] == PROBES and not state.get("witnesses")
    assert [e["success"] for e in state["evaluations"]] == [True] and len(actor.prompts) == 1


def test_the_model_writes_probes_where_the_examples_cannot_be_varied():
    prompt = 'def both(a: bool, b: bool) -> bool:\n    """a and b.\n    >>> both(True, False)\n    False\n    """\n'
    code = "```python\ndef both(a: bool, b: bool) -> bool:\n    return a and b\n```"
    state, _, tests_model = run([code], CodeContext(max_trials=1, cross_check=2), prompt, "both")
    assert len(tests_model.prompts) == 1 and "examples do not use" in tests_model.prompt_text(0)
    assert state["probe_tests"] == ["assert both(True, True) == True"]


def test_the_option_is_bounded_and_names_results_only_when_on():
    with pytest.raises(ReflexionError, match="cross_check is 11"):
        CodeContext(cross_check=11)
    assert "cross_check" not in result_settings(Context())
    assert result_settings(CodeContext(cross_check=2))["cross_check"] == 2


# ---- probes from the examples ------------------------------------------------------------------


def test_probes_vary_one_literal_argument_of_each_example_within_its_type():
    trusted = [
        "assert f([1, 2], 3) == 6",  # a sequence keeps its length: reversed, rotated
        "assert f('ab', 0) == 1",
        "assert f('two words', 1) == 2",  # formatted text: not varied
        "assert f(x, 1) == 2",  # not a literal: no probes from it
        "assert f(True) is None",  # not an equality: no probes
    ]
    probes = mutated_probes(trusted, "f", 50, "t")
    assert probes == [
        "assert f([2, 1], 3) == 6",
        "assert f([1, 2], 4) == 6",
        "assert f([1, 2], 6) == 6",
        "assert f('ba', 0) == 1",
        "assert f('ab', 1) == 1",
        "assert f('two words', 2) == 2",
    ]
    assert mutated_probes(trusted, "f", 3, "t") == mutated_probes(trusted, "f", 3, "t")
    assert len(mutated_probes(trusted, "f", 3, "t")) == 3
    # A variant that is another example's call is that example, not a probe.
    assert mutated_probes(["assert g(1) == 1", "assert g(2) == 4"], "g", 9, "t") == [
        "assert g(3) == 4",
        "assert g(4) == 4",
    ]


def test_perf_probes_counts_what_a_perfect_witness_could_catch(tmp_path):
    # HumanEval/69: keeps the last qualifying value met, not the greatest; it passes the
    # examples, and a reversed example list shows it. HumanEval/0: right.
    wrong = (
        "from collections import Counter\n\ndef search(lst):\n    best = -1\n"
        "    for value, count in Counter(lst).items():\n"
        "        if value > 0 and count >= value:\n            best = value\n    return best\n"
    )
    right = (
        "def has_close_elements(numbers, threshold):\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)"
        " for b in numbers[i + 1 :])\n"
    )
    rows = [
        ("HumanEval/69", wrong, False),
        ("HumanEval/0", right, True),
        ("HumanEval/1", "def separate_paren_groups(s):\n    return []\n", False),  # fails examples
    ]
    path = tmp_path / "results.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "type": "final",
                    "thread_id": task,
                    "task_id": task,
                    "evaluations": [{"answer": code}],
                    "pass_by_iteration": [passed],
                }
            )
            + "\n"
            for task, code, passed in rows
        )
    )
    figures = probe_figures(path, 6)
    assert figures["counts"] == {
        "right, alike": 1,
        "right, separated": 0,
        "wrong, separated": 1,
        "wrong, alike": 0,
        "no probes": 0,
    }
    assert figures["tasks"]["wrong, separated"] == ["HumanEval/69"]
    path.write_text(json.dumps({"type": "final", "thread_id": "x", "task_id": "MBPP/1"}) + "\n")
    with pytest.raises(ReflexionError, match="not a HumanEval problem"):
        probe_figures(path, 6)
