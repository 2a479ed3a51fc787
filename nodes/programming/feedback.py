"""The evaluator's feedback, rendered from the per-test outcomes a trial record keeps (the
sandbox's :class:`~reflexion.programming.sandbox.OutcomeRecord`, as it returned them but for
the doubted ones), and what a retry and the reflector read
of it: whether the next retry reads it at all (``Context.retry``) and, where the tests
are the model's own, under every ``CodeContext.internal_tests`` but ``"all"`` the held-out
tests left out of it.

The evaluator's records keep the whole feedback; only the prompts built from them change.
Nothing here reads the feedback's text back: every decision rests on the outcomes.
"""

from __future__ import annotations

from collections.abc import Iterable

from reflexion.programming.context import CodeContext
from reflexion.programming.sandbox import OutcomeRecord
from reflexion.programming.state import CodeState, CodeTrialRecord
from reflexion.prompts import render


def retry_reads_feedback(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the next retry reads the evaluator's feedback and the reflections: never under
    ``Context.retry="resample"`` (or ``one_attempt``); under ``"informed_once"`` only while no
    retry the model wrote has failed yet (a compiler's fix is not one); always otherwise."""
    if not ctx.retries_read_feedback:
        return False
    if ctx.retry == "informed_once":
        return all(e.get("compiler_fix") for e in state.evaluations[1:])
    return True


PASSED = "Tests passed:"
FAILED = "Tests failed:"
DOUBTED = render("programming/feedback_doubted")
NONE = "(none)"


def render_outcomes(
    outcomes: Iterable[OutcomeRecord],
    language: str,
    notes: Iterable[str] = (),
    hidden: frozenset[str] = frozenset(),
) -> str:
    """The feedback on a compiled attempt, in the paper's format: the passed tests, then each
    failed one that counts with its actual value or error as a comment; doubted tests listed
    apart, as tests that may themselves be wrong; then the ``notes``. ``hidden`` tests are left
    out (an empty list that is not the passed or the failed one is left out with them), and a
    last line says how many of them the attempt passed."""
    comment = "#" if language == "py" else "//"
    outcomes = list(outcomes)
    shown = [o for o in outcomes if o["test"] not in hidden]

    def line(o: OutcomeRecord) -> str:
        return f"{o['test']} {comment} {o['detail']}"

    passed = [o["test"] for o in shown if o["passed"]]
    failed = [line(o) for o in shown if not o["passed"] and o["standing"] == "counted"]
    blocks = [
        "\n".join([PASSED, *(passed or [NONE])]),
        "\n".join([FAILED, *(failed or [NONE])]),
    ]
    doubted = [o["test"] for o in shown if o["standing"] == "doubted"]
    if doubted:
        blocks.append("\n".join([DOUBTED, *doubted]))
    blocks.extend(notes)
    if hidden:
        held = sum(o["passed"] for o in outcomes if o["test"] in hidden)
        blocks.append(render("programming/held_out", held=str(len(hidden)), passed=str(held)))
    return "\n\n".join(blocks)


def own_tests_decide(state: CodeState) -> bool:
    """Whether every internal test is the model's own (no trusted test: the prompt gave no
    example and the input no test), so that any of them may be wrong."""
    return bool(state.written_tests) and set(state.written_tests).issuperset(state.tests)


def held_out(state: CodeState, ctx: CodeContext) -> frozenset[str]:
    """Under every ``CodeContext.internal_tests`` but ``"all"``, where the model's own tests
    decide: every second of them (by position, so the same tests on every trial), which the
    retries and the reflector never see. They still decide, so an attempt tuned to the tests
    it was shown must also pass tests it was not. Empty otherwise."""
    if ctx.every_test_decides or not own_tests_decide(state):
        return frozenset()
    return frozenset(state.written_tests[1::2])


def shown_feedback(record: CodeTrialRecord | None, state: CodeState, ctx: CodeContext) -> str:
    """A trial's feedback as a retry or the reflector may read it: rendered again from its
    outcomes without the :func:`held_out` tests (:func:`render_outcomes`); the record's own
    text where nothing is hidden or no test ran."""
    if record is None:
        return "The tests failed."
    hidden = held_out(state, ctx)
    outcomes = record.get("outcomes")
    if not hidden or not outcomes:
        return record["feedback"]
    return render_outcomes(outcomes, state.language, record.get("notes", []), hidden)
