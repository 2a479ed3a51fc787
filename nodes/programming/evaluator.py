"""The unit-test evaluator: runs the internal tests in the sandbox and records each test's
outcome, with the feedback rendered from them in the paper's format (which passed and, for
each failure, the actual value or the error).

Beyond the paper, it weighs its own evidence: self-written tests every attempt failed are
doubted, and an attempt is never a success when no counted test passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.steps import Node, Steps, block
from reflexion.nodes.evaluator import Evaluation
from reflexion.nodes.programming.common import (
    NO_EVIDENCE,
    NO_TESTS,
    NOT_COMPILED,
    problem_of,
    run_tests,
)
from reflexion.nodes.programming.feedback import outcome_records, render_outcomes
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import assemble
from reflexion.programming.sandbox import Limits, SuiteResult
from reflexion.programming.state import (
    CodeState,
    OutcomeRecord,
    lesson_family,
)
from reflexion.prompts import render, template


def doubted_tests(state: CodeState, failed_written: list[str], ctx: CodeContext) -> frozenset[str]:
    """Self-written tests this attempt failed that every earlier attempt with code failed too
    (agreement across attempts: the test, not the code, is the likelier culprit); none on the
    first attempt or under ``CodeContext.internal_tests="all"``."""
    if ctx.every_test_decides or not state.test_failures:
        return frozenset()
    common = set(failed_written)
    for earlier in state.test_failures:
        common &= set(earlier)
    return frozenset(common)


def earlier_equal(state: CodeState, set_apart: frozenset[str]) -> int | None:
    """The first earlier trial whose attempt compiled and failed only tests now set apart
    (doubted): judged on the tests that count now, it succeeds as well, so a later
    success is no evidence of progress. Only where every test is self-written (then each
    compiled attempt left one entry in ``test_failures``); ``None`` otherwise."""
    if not set_apart or not set(state.written_tests).issuperset(state.tests):
        return None
    compiled = [e for e in state.evaluations if e.get("compiled")]
    if len(compiled) != len(state.test_failures):
        return None
    for record, failed in zip(compiled, state.test_failures, strict=True):
        if set(failed) <= set_apart and len(failed) < len(state.tests):
            return int(record["trial"])
    return None


def make_unit_test_evaluator() -> Node:
    """The evaluator node: success when every internal test that counts passes (under
    every ``CodeContext.internal_tests`` but ``"all"``, self-written tests that every attempt
    failed do not count). An attempt is never a success on empty evidence: when doubt leaves
    no counted test (or none of them passed), it is not, and under ``select_answer="best"``
    the earlier attempt stands. The score is the share of all internal tests passed,
    comparable across trials. Without internal tests it can only check that the code
    compiles and never reports success: when tests were asked for (every ``retry`` but
    ``one_attempt``) and none came, a compiling attempt is the thread's last. It calls no
    model."""

    def unit_test_evaluator(
        state: CodeState, runtime: Runtime[CodeContext]
    ) -> Steps[Evaluation | dict[str, Any]]:
        ctx = get_context(runtime, CodeContext)
        if state.answer is None:
            reason = state.stop_reason or render("programming/no_code_block")
            feedback = template("programming/feedback_no_implementation").format(reason=reason)
            return _update(state, _Verdict(0.0, False, feedback))
        result = yield from block(run_suite, state, ctx, state.answer)
        return _update(state, _judged(state, ctx, result))

    return Node(unit_test_evaluator, role="evaluator", family=lesson_family)


def _update(state: CodeState, verdict: _Verdict) -> Evaluation:
    """The verdict as the loop's :class:`~reflexion.nodes.evaluator.Evaluation`: the record's
    own keys as its evidence, the failed tests as its writes."""
    writes: dict[str, Any] = {"test_failures": verdict.failures}
    return Evaluation(
        verdict.score, verdict.success, verdict.feedback, _evidence(state, verdict), writes
    )


def _limits(state: CodeState, ctx: CodeContext) -> Limits:
    """The sandbox's limits for the attempt's tests."""
    return Limits(
        test_timeout_s=ctx.test_timeout,
        suite_timeout_s=ctx.test_timeout * (len(state.tests) + 2) + 30,
    )


def run_suite(state: CodeState, ctx: CodeContext, answer: str) -> SuiteResult:
    """The attempt run on the internal tests in the sandbox."""
    problem = problem_of(state)
    program = assemble(problem, answer)
    tests = list(state.tests)
    return run_tests(program, tests, problem.language, _limits(state, ctx), problem.entry_point)


@dataclass
class _Verdict:
    """What the evaluator found of one attempt, before it becomes the trial's record."""

    score: float
    success: bool
    feedback: str
    """The feedback's text: the tests rendered from ``outcomes``, then the ``notes``."""
    compiled: bool | None = None
    outcomes: list[OutcomeRecord] | None = None
    """Each internal test's outcome, where the attempt compiled and tests ran."""
    notes: list[str] = field(default_factory=list)
    failures: list[list[str]] = field(default_factory=list)
    """The self-written tests a compiled attempt failed (one entry, or none)."""
    evidence: dict[str, int] = field(default_factory=dict)
    """``tests_passed`` and ``tests_counted`` (and ``ties``) where tests decided."""
    last: bool = False
    """The thread stops here: tests were asked for, none came, and the attempt compiles."""


def _judged(state: CodeState, ctx: CodeContext, result: SuiteResult) -> _Verdict:
    """The verdict on the attempt's results on the internal tests."""
    problem = problem_of(state)
    tests = list(state.tests)
    if not tests:
        return _without_tests(result, ctx)
    compiled = result.compile_error is None
    failed = {o.test for o in result.outcomes if not o.passed}
    written = set(state.written_tests)
    failed_written = [t for t in tests if t in written and t in failed]
    doubted = doubted_tests(state, failed_written, ctx)
    passed = sum(o.passed for o in result.outcomes) if compiled else 0
    counted = [t for t in tests if t not in doubted]
    held = sum(t not in failed for t in counted) if compiled else 0
    # An attempt is a success on evidence only: every counted test passed, and at least one
    # did (doubt can leave nothing to fail, which proves nothing).
    success = compiled and not (failed - doubted) and held > 0
    outcomes = outcome_records(result, doubted)
    notes = []
    if compiled and not counted:
        notes.append(render("programming/feedback_all_doubted", no_evidence=NO_EVIDENCE))
    evidence = {"tests_passed": held, "tests_counted": len(counted)}
    tie = earlier_equal(state, doubted) if success else None
    if tie is not None:
        evidence["ties"] = tie
        notes.append(render("programming/feedback_tie", trial=str(tie)))
    if compiled:
        tested = render_outcomes(outcomes, problem.language)
        feedback = "\n\n".join([tested, *notes])
    else:
        assert result.compile_error is not None
        feedback = f"{NOT_COMPILED}\n{result.compile_error.strip()}"
    return _Verdict(
        score=passed / len(tests),
        success=success,
        feedback=feedback,
        compiled=compiled,
        outcomes=outcomes if compiled else None,
        notes=notes,
        failures=[failed_written] if compiled else [],
        evidence=evidence,
    )


def _without_tests(result: SuiteResult, ctx: CodeContext) -> _Verdict:
    """No internal tests: the attempt can only compile, and is never a success."""
    status = (
        f"{NOT_COMPILED}\n{result.compile_error.strip()}"
        if result.compile_error is not None
        else render("programming/feedback_compiles")
    )
    compiled = result.compile_error is None
    return _Verdict(
        0.0,
        False,
        render("programming/feedback_no_tests", no_tests=NO_TESTS, status=status),
        compiled=compiled,
        # Tests were asked for and none came: a compiling attempt leaves nothing to learn
        # from, so the thread stops.
        last=compiled and ctx.retry != "one_attempt",
    )


def _evidence(state: CodeState, verdict: _Verdict) -> dict[str, Any]:
    """The trial record's own keys (after the five every record has): what the verdict rests
    on where there is something."""
    record: dict[str, Any] = {}
    if verdict.compiled is not None:
        record["compiled"] = verdict.compiled
    for key in ("tests_passed", "tests_counted", "ties"):
        if key in verdict.evidence:
            record[key] = verdict.evidence[key]
    if verdict.outcomes is not None:
        record["outcomes"] = verdict.outcomes
    if verdict.notes:
        record["notes"] = verdict.notes
    if state.compiler_fix:
        record["compiler_fix"] = True
    if verdict.last:
        record["last"] = True
    return record
