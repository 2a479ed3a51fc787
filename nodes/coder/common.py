"""What the programming nodes share: the problem a state describes, the code fences and the
reply stops, the feedback's fixed wording, and running internal tests in the sandbox.

The benchmark's hidden tests are not part of the graph state: nothing here can show them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from reflexion.core.errors import ReflexionError
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import (
    LANGUAGE_NAMES,
    CodeProblem,
    language_of,
)
from reflexion.programming.sandbox import (
    Limits,
    SuiteResult,
    run_python_tests,
    run_rust_tests,
)
from reflexion.programming.state import CodeState
from reflexion.prompts import render

FENCES = {"py": "python", "rs": "rust"}
_COMMENT = re.compile(r"^\s*(?:#|//)\s?")
"""The comment mark before a failed test's actual output in the feedback."""
NO_TESTS = "No unit tests were run"
"""How the feedback of an iteration without internal tests (``simple``, ``--no-tests``) starts."""
NOT_COMPILED = "The implementation does not compile:"
"""What the feedback on code that did not compile says, before the compiler's errors."""
NO_EVIDENCE = "No test that counts was passed"
"""How the feedback goes on when doubt left no counted test passed: no evidence, no success."""


STOPS = {
    "py": ["\n```\n", "\nprint(", "\n# Test", "\n# Example", "\nif __name__", "\nassert "],
    "rs": ["\n```\n", "\nfn main"],
}
"""Where a code reply is complete: the closing fence, or the demo code small models append
after the function (cut here instead of spending tokens on it)."""


def problem_of(state: CodeState) -> CodeProblem:
    """The problem a programming state describes (without hidden tests: it has none)."""
    if not state.task.strip():
        raise ReflexionError("the task is empty: give the function signature and documentation")
    if not state.entry_point.strip():
        raise ReflexionError("entry_point is empty: give the name of the function to implement")
    return CodeProblem(
        task_id=state.task_id or state.entry_point,
        language=language_of(state.language),
        prompt=state.task,
        entry_point=state.entry_point.strip(),
        test="",
        kind="multipl-e",
    )


def feedback_tests(
    feedback: str, tests: Iterable[str], heading: str = "Tests failed:"
) -> list[tuple[str, str]]:
    """The ``tests`` the evaluator's feedback (:func:`~reflexion.nodes.coder.evaluator.
    format_feedback`) lists under ``heading`` ("Tests failed:" or "Tests passed:"), in its
    order, each with the comment after it: the actual output or the error ("" for none)."""
    if heading not in feedback:
        return []
    block = feedback.split(heading, 1)[1].lstrip("\n").split("\n\n", 1)[0]
    known = sorted(set(tests), key=len, reverse=True)  # the longest test a line starts with
    found = []
    for line in block.splitlines():
        test = next((t for t in known if line == t or line.startswith(t + " ")), None)
        if test is not None:
            found.append((test, _COMMENT.sub("", line[len(test) :], count=1).strip()))
    return found


def own_tests_decide(state: CodeState) -> bool:
    """Whether every internal test is the model's own (no trusted test: the prompt gave no
    example and the input no test), so that any of them may be wrong."""
    return bool(state.written_tests) and set(state.written_tests).issuperset(state.tests)


def checks_own_tests(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the feedback asks to check the tests against the documentation: under
    ``CodeContext.test_trust="checked"`` where the model's own tests decide."""
    return ctx.test_trust == "checked" and own_tests_decide(state)


def held_out(state: CodeState, ctx: CodeContext) -> frozenset[str]:
    """Under ``CodeContext.test_trust="held_out"``, where the model's own tests decide: every
    second of them (by position, so the same tests on every trial), which the retries and the
    reflector never see. They still decide, so an attempt tuned to the tests it was shown must
    also pass tests it was not. Empty otherwise."""
    if ctx.test_trust != "held_out" or not own_tests_decide(state):
        return frozenset()
    return frozenset(state.written_tests[1::2])


def shown_feedback(feedback: str, state: CodeState, ctx: CodeContext) -> str:
    """The evaluator's feedback as a retry or the reflector may read it: without the
    :func:`held_out` tests, and with a line saying how many of them the attempt passed."""
    hidden = held_out(state, ctx)
    if not hidden or "Tests passed:" not in feedback:
        return feedback
    passed = {t for t, _ in feedback_tests(feedback, hidden, "Tests passed:")}
    blocks = []
    for block in feedback.split("\n\n"):
        head, *lines = block.split("\n")
        if not (head.startswith("Tests ") and head.endswith(":")):
            blocks.append(block)
            continue
        kept = [ln for ln in lines if not any(ln == t or ln.startswith(t + " ") for t in hidden)]
        kept = [ln for ln in kept if ln != "(none)"]
        if kept or head in ("Tests passed:", "Tests failed:"):
            blocks.append("\n".join([head, *(kept or ["(none)"])]))
    note = render("code_held_out", held=str(len(hidden)), passed=str(len(passed)))
    return "\n\n".join([*blocks, note])


def fenced(code: str, language: str) -> str:
    return f"```{FENCES[language]}\n{code.strip()}\n```"


def prompt_names(language: str) -> dict[str, str]:
    return {"language": LANGUAGE_NAMES[language], "fence": FENCES[language]}


def did_compile(record: Mapping[str, Any]) -> bool:
    """Whether a trial's answer compiled: its ``compiled`` flag, or for a record written
    before the flag existed (a thread forked from an older run), what its feedback says."""
    flag = record.get("compiled")
    return flag if flag is not None else NOT_COMPILED not in record["feedback"]


def run_tests(
    program: str, tests: list[str], language: str, limits: Limits, entry_point: str
) -> SuiteResult:
    """Run internal tests against a program in the sandbox."""
    if language == "rs":
        return run_rust_tests(program, tests, limits, entry_point=entry_point)
    return run_python_tests(program, tests, limits)


def counted_part(result: SuiteResult, tests: list[str]) -> SuiteResult:
    """The part of ``result`` that concerns ``tests`` (the probe tests left out)."""
    kept = set(tests)
    return replace(result, outcomes=tuple(o for o in result.outcomes if o.test in kept))
