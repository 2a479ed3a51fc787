"""The unit-test evaluator: runs the internal tests in the sandbox and records each test's
outcome, with the feedback rendered from them in the paper's format (which passed and, for
each failure, the actual value or the error).

Beyond the paper, it weighs its own evidence: self-written tests every attempt failed are
doubted, and an attempt is never a success when no counted test passed.
"""

from __future__ import annotations

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
from reflexion.nodes.programming.feedback import render_outcomes
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import assemble
from reflexion.programming.sandbox import Limits, OutcomeRecord, SuiteResult
from reflexion.programming.state import CodeState, graph_family
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

    def unit_test_evaluator(state: CodeState, runtime: Runtime[CodeContext]) -> Steps[Evaluation]:
        ctx = get_context(runtime, CodeContext)
        if state.answer is None:
            reason = state.stop_reason or render("programming/no_code_block")
            feedback = template("programming/feedback_no_implementation").format(reason=reason)
            return Evaluation(0.0, False, feedback, _fixed(state, {}), {"test_failures": []})
        result = yield from block(run_suite, state, ctx, state.answer)
        if not state.tests:
            return _without_tests(state, ctx, result)
        return _judged(state, ctx, result)

    return Node(unit_test_evaluator, role="evaluator", family=graph_family)


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


def _judged(state: CodeState, ctx: CodeContext, result: SuiteResult) -> Evaluation:
    """The verdict on the attempt's results on the internal tests: the record's own keys as
    its evidence (``compiled``, ``tests_passed``, ``tests_counted``, ``ties``, ``outcomes``,
    ``notes``, ``compiler_fix``), the self-written tests a compiled attempt failed as its
    writes."""
    tests = list(state.tests)
    compiled = result.compile_error is None
    failed = {o["test"] for o in result.outcomes if not o["passed"]}
    written = set(state.written_tests)
    failed_written = [t for t in tests if t in written and t in failed]
    doubted = doubted_tests(state, failed_written, ctx)
    passed = sum(o["passed"] for o in result.outcomes) if compiled else 0
    counted = [t for t in tests if t not in doubted]
    held = sum(t not in failed for t in counted) if compiled else 0
    # An attempt is a success on evidence only: every counted test passed, and at least one
    # did (doubt can leave nothing to fail, which proves nothing).
    success = compiled and not (failed - doubted) and held > 0
    notes = []
    if compiled and not counted:
        notes.append(render("programming/feedback_all_doubted", no_evidence=NO_EVIDENCE))
    evidence: dict[str, Any] = {
        "compiled": compiled,
        "tests_passed": held,
        "tests_counted": len(counted),
    }
    tie = earlier_equal(state, doubted) if success else None
    if tie is not None:
        evidence["ties"] = tie
        notes.append(render("programming/feedback_tie", trial=str(tie)))
    if compiled:
        outcomes = [_weighed(o, doubted) for o in result.outcomes]
        feedback = render_outcomes(outcomes, problem_of(state).language, notes)
        evidence["outcomes"] = outcomes
    else:
        assert result.compile_error is not None
        feedback = f"{NOT_COMPILED}\n{result.compile_error.strip()}"
    if notes:
        evidence["notes"] = notes
    writes = {"test_failures": [failed_written] if compiled else []}
    return Evaluation(passed / len(tests), success, feedback, _fixed(state, evidence), writes)


def _weighed(outcome: OutcomeRecord, doubted: frozenset[str]) -> OutcomeRecord:
    """The sandbox's outcome as the verdict weighed it: ``doubted`` where the test is."""
    if outcome["test"] not in doubted:
        return outcome
    return OutcomeRecord(
        test=outcome["test"], passed=outcome["passed"], detail=outcome["detail"], standing="doubted"
    )


def _without_tests(state: CodeState, ctx: CodeContext, result: SuiteResult) -> Evaluation:
    """No internal tests: the attempt can only compile, and is never a success. Tests were
    asked for and none came: a compiling attempt leaves nothing to learn from, so the thread
    stops (``last``)."""
    compiled = result.compile_error is None
    status = (
        render("programming/feedback_compiles")
        if result.compile_error is None
        else f"{NOT_COMPILED}\n{result.compile_error.strip()}"
    )
    feedback = render("programming/feedback_no_tests", no_tests=NO_TESTS, status=status)
    evidence = _fixed(state, {"compiled": compiled})
    if compiled and ctx.retry != "one_attempt":
        evidence["last"] = True
    return Evaluation(0.0, False, feedback, evidence, {"test_failures": []})


def _fixed(state: CodeState, evidence: dict[str, Any]) -> dict[str, Any]:
    """``evidence`` with ``compiler_fix`` set where the answer was the compiler's fix."""
    if state.compiler_fix:
        evidence["compiler_fix"] = True
    return evidence
