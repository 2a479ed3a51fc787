"""Evidence from independent implementations (``CodeContext.cross_check``).

Where trusted tests decide, an attempt that passes them is judged by the behaviour of
independently drawn implementations on probe tests (*witnesses*,
:mod:`reflexion.programming.behaviour`). Where only self-written tests decide, independent
implementations vote on each test the attempt failed (*voters*, after CodeT): a test counts
against the attempt only when more of them pass it than fail it as the attempt does.
"""

from __future__ import annotations

from dataclasses import replace

from langchain_core.language_models import BaseChatModel

from reflexion.core.steps import Steps, ask, block
from reflexion.nodes.common import actor_llm, named_seed
from reflexion.nodes.programming.actor import code_messages
from reflexion.nodes.programming.common import STOPS, counted_part, problem_of, run_tests
from reflexion.programming.behaviour import (
    Fingerprint,
    Verdict,
    disagreement,
    fingerprint,
    majority,
    verdict,
)
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem, assemble
from reflexion.programming.replies import extract_code
from reflexion.programming.sandbox import (
    Limits,
    SuiteResult,
)
from reflexion.programming.state import CodeState, Witness


def _independent_code(
    state: CodeState,
    ctx: CodeContext,
    problem: CodeProblem,
    model: BaseChatModel | None,
    kind: str,
    number: int,
) -> Steps[str | None]:
    """An implementation drawn from the first trial's prompt at the redraw temperature, its
    seed named by the problem, ``kind`` (witness or voter) and ``number``; ``None`` when the
    reply holds no code."""
    llm = yield from block(actor_llm, model, ctx, hot=True)
    messages = code_messages(replace(state, trial=0, evaluations=[]), ctx)
    seed = named_seed(llm, problem.task_id, kind, number)
    reply = yield from ask(llm, messages, stop=STOPS[problem.language], **seed)
    return extract_code(reply.text, problem).code


def _draw_witness(
    state: CodeState,
    ctx: CodeContext,
    problem: CodeProblem,
    limits: Limits,
    model: BaseChatModel | None,
    number: int,
) -> Steps[Witness]:
    """Witness ``number``: an independent implementation from the first trial's prompt at the
    redraw temperature (its seed named by the problem and ``number``), run on the trusted and
    probe tests."""
    code = yield from _independent_code(state, ctx, problem, model, "witness", number)
    if code is None:
        return {"code": None, "fingerprint": None}
    program = assemble(problem, code)
    tests = [*state.tests, *state.probe_tests]
    result = yield from block(
        run_tests, program, tests, problem.language, limits, problem.entry_point
    )
    print_ = fingerprint(result, state.probe_tests)
    if print_ is None or not counted_part(result, list(state.tests)).passed:
        return {"code": code, "fingerprint": None}
    return {"code": code, "fingerprint": list(print_)}


def cross_check(
    state: CodeState,
    ctx: CodeContext,
    mine: Fingerprint,
    limits: Limits,
    model: BaseChatModel | None = None,
) -> Steps[tuple[Verdict, list[Witness], str]]:
    """Judge an attempt that passed its trusted tests by the witnesses' behaviour on the probe
    tests, drawing new witnesses while the verdict is open and ``ctx.cross_check`` allows: the
    verdict, the witnesses drawn now, and (outvoted) where the majority behaves otherwise."""
    problem = problem_of(state)
    drawn: list[Witness] = []

    def prints() -> list[Fingerprint]:
        return [
            tuple(w["fingerprint"])
            for w in [*state.witnesses, *drawn]
            if w["fingerprint"] is not None
        ]

    result = verdict(mine, prints())
    while result == "open" and len(state.witnesses) + len(drawn) < ctx.cross_check:
        number = len(state.witnesses) + len(drawn)
        drawn.append((yield from _draw_witness(state, ctx, problem, limits, model, number)))
        result = verdict(mine, prints())
    if result != "outvoted":
        return result, drawn, ""
    theirs = majority(mine, prints())
    assert theirs is not None  # outvoted: some witnesses behave otherwise
    count = prints().count(theirs)
    total = len(state.witnesses) + len(drawn)
    return result, drawn, disagreement(mine, theirs, state.probe_tests, count, total)


def _draw_voter(
    state: CodeState,
    ctx: CodeContext,
    problem: CodeProblem,
    limits: Limits,
    model: BaseChatModel | None,
    number: int,
) -> Steps[Witness]:
    """Voter ``number``: an independent implementation from the first trial's prompt at the
    redraw temperature (seeded by the problem and ``number``), with its outcome on each
    internal test (``"pass"`` or the failure's detail); no fingerprint when it has no code or
    does not compile (it then votes on nothing)."""
    code = yield from _independent_code(state, ctx, problem, model, "voter", number)
    if code is None:
        return {"code": None, "fingerprint": None}
    program = assemble(problem, code)
    result = yield from block(
        run_tests, program, state.tests, problem.language, limits, problem.entry_point
    )
    outcomes = fingerprint(result, state.tests)
    return {"code": code, "fingerprint": None if outcomes is None else list(outcomes)}


def unbacked_tests(
    state: CodeState,
    ctx: CodeContext,
    result: SuiteResult,
    failed_written: list[str],
    limits: Limits,
    model: BaseChatModel | None = None,
) -> Steps[tuple[frozenset[str], list[Witness]]]:
    """Where only self-written tests decide (no trusted test) and ``ctx.cross_check`` allows:
    the failed tests that independent implementations do not back, after CodeT's agreement
    between code and tests. Up to ``ctx.cross_check`` voters are drawn once per problem (the
    first time an attempt fails a test) and reused; a failed test counts against the attempt
    only when more voters pass it than fail it exactly as the attempt does (the same output
    or error). Returns the unbacked tests and the voters drawn now."""
    written = set(state.written_tests)
    if not (ctx.cross_check and failed_written and written.issuperset(state.tests)):
        return frozenset(), []
    problem = problem_of(state)
    drawn = []
    for number in range(len(state.witnesses), ctx.cross_check):
        drawn.append((yield from _draw_voter(state, ctx, problem, limits, model, number)))
    mine = {o.test: o.detail for o in result.outcomes}
    votes = [
        dict(zip(state.tests, w["fingerprint"], strict=False))
        for w in [*state.witnesses, *drawn]
        if w["fingerprint"] is not None
    ]
    unbacked = set()
    for test in failed_written:
        passes = sum(v.get(test) == "pass" for v in votes)
        alike = sum(v.get(test) == mine.get(test) for v in votes)
        if passes <= alike:
            unbacked.add(test)
    return frozenset(unbacked), drawn
