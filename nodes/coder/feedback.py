"""What a retry and the reflector read of the evaluator's feedback: whether the next retry
reads it at all (``CodeContext.code_retry``) and, where the tests are the model's own, the
tests a feedback lists (with their actual outputs), and under ``CodeContext.test_trust`` the
held-out tests left out of it (``held_out``) or the request to check a failed test against
the documentation (``checked``).

The evaluator's records keep the whole feedback; only the prompts built from it change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeState
from reflexion.prompts import render

_COMMENT = re.compile(r"^\s*(?:#|//)\s?")
"""The comment mark before a failed test's actual output in the feedback."""


def retry_reads_feedback(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the next retry reads the evaluator's feedback and the reflections: never under
    ``CodeContext.code_retry="resample"``; under ``"fresh_once"`` only while no retry the
    model wrote has failed yet (a compiler's fix is not one); always otherwise."""
    if ctx.code_retry == "resample":
        return False
    if ctx.code_retry == "fresh_once":
        return all(e.get("compiler_fix") for e in state.evaluations[1:])
    return True


def _test_of(line: str, tests: Iterable[str]) -> str | None:
    """The test a feedback line lists (the line itself, or the test and its comment), the first
    of ``tests`` that matches; ``None`` for any other line."""
    return next((t for t in tests if line == t or line.startswith(t + " ")), None)


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
        test = _test_of(line, known)
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
    """Under ``CodeContext.test_trust="held_out"`` (and ``"checked"``, which builds on it),
    where the model's own tests decide: every second of them (by position, so the same tests
    on every trial), which the retries and the reflector never see. They still decide, so an
    attempt tuned to the tests it was shown must also pass tests it was not. Empty
    otherwise."""
    if ctx.test_trust not in ("held_out", "checked") or not own_tests_decide(state):
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
        kept = [ln for ln in lines if ln != "(none)" and _test_of(ln, hidden) is None]
        if kept or head in ("Tests passed:", "Tests failed:"):
            blocks.append("\n".join([head, *(kept or ["(none)"])]))
    note = render("code_held_out", held=str(len(hidden)), passed=str(len(passed)))
    return "\n\n".join([*blocks, note])
