"""Programming nodes (the paper's §4.3): a test writer, a code actor, a unit-test evaluator and
the prompt of the code reflector.

* ``test_writer`` runs once per problem: the evaluator model writes unit tests for the
  signature and documentation; only statements that parse (Python ``ast``) or compile against
  the signature (Rust) are kept, deduplicated, and at most ``Context.max_tests`` are sampled.
* ``code_actor`` writes a complete implementation; from the second trial on it sees its previous
  implementation, the internal test results and (strategy ``reflexion``) the last Ω reflections.
* ``unit_test_evaluator`` runs the internal tests in the sandbox and reports, in the paper's
  format, which passed and, for each failure, the actual value or the error.

The benchmark's hidden tests are not part of the graph state: nothing here can show them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.lessons import Family, programming_family, recall_update
from reflexion.core.state import CodeState, TrialRecord, Witness
from reflexion.nodes.common import actor_llm, named_seed, resolve_model
from reflexion.nodes.memory import with_lessons
from reflexion.programming.agreement import (
    Fingerprint,
    Verdict,
    disagreement,
    fingerprint,
    majority,
    verdict,
)
from reflexion.programming.examples import example_tests
from reflexion.programming.probes import mutated_probes
from reflexion.programming.problems import (
    LANGUAGE_NAMES,
    CodeProblem,
    assemble,
    candidate_tests,
    extract_code,
    language_of,
    rust_preamble,
    sample_tests,
    stub,
)
from reflexion.programming.sandbox import (
    Limits,
    SuiteResult,
    check_rust_tests,
    fix_rust,
    run_python_tests,
    run_rust_tests,
)
from reflexion.prompts import few_shot, render

FENCES = {"py": "python", "rs": "rust"}
TEST_FORMS = {
    "py": "assert add(2, 3) == 5",
    "rs": "assert_eq!(add(2, 3), 5);",
}

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


def _fenced(code: str, language: str) -> str:
    return f"```{FENCES[language]}\n{code.strip()}\n```"


def _names(language: str) -> dict[str, str]:
    return {"language": LANGUAGE_NAMES[language], "fence": FENCES[language]}


# ---- test writer ------------------------------------------------------------------------------


def test_messages(
    problem: CodeProblem, count: int, system_prompt: str = "code_tests_system"
) -> list[BaseMessage]:
    """The test writer's prompt (``system_prompt``: ``code_probes_system`` asks for inputs the
    documentation's examples do not use, the probes of ``Context.cross_check``)."""
    names = _names(problem.language)
    system = render(system_prompt, count=str(count), form=TEST_FORMS[problem.language], **names)
    user = render("code_tests_task", prompt=problem.prompt.strip(), **names)
    return [SystemMessage(system), HumanMessage(user)]


def _call_of(test: str) -> str:
    """The call a test checks: the left-hand side of ``assert f(x) == y`` or the first
    argument of ``assert_eq!(f(x), y)``, without spaces; the whole test otherwise."""
    body = re.sub(r"^\s*assert(?:_eq!\s*\()?\s*", "", test)
    depth = 0
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and (body.startswith("==", i) or ch == ","):
            return re.sub(r"\s+", "", body[:i])
    return re.sub(r"\s+", "", test)


def trusted_tests(problem: CodeProblem, ctx: Context) -> list[str]:
    """The prompt's own examples as tests (``ctx.example_tests``), at most ``ctx.max_tests``;
    Rust ones only when they compile against the signature."""
    examples = example_tests(problem) if ctx.example_tests else []
    return _compiling(examples, problem, ctx)[: ctx.max_tests]


def _compiling(tests: list[str], problem: CodeProblem, ctx: Context) -> list[str]:
    """The tests, less Rust ones that do not compile against the signature."""
    if problem.language != "rs" or not tests:
        return tests
    limits = Limits(test_timeout_s=ctx.test_timeout)
    valid = set(check_rust_tests(stub(problem), tests, limits, entry_point=problem.entry_point))
    return [t for t in tests if t in valid]


def valid_tests(
    reply: str,
    problem: CodeProblem,
    ctx: Context,
    trusted: list[str] | None = None,
    room: int | None = None,
) -> list[str]:
    """The model's tests in a reply that parse (Python) or compile against the signature
    (Rust), deduplicated, less any that checks the same call as a trusted test (it repeats or
    contradicts the documentation); at most ``room``, sampled reproducibly (by default what
    fills ``ctx.max_tests`` after ``trusted``, itself by default the prompt's examples)."""
    trusted = trusted_tests(problem, ctx) if trusted is None else trusted
    calls = {_call_of(t) for t in trusted}
    written = [t for t in candidate_tests(reply, problem) if _call_of(t) not in calls]
    written = _compiling(written, problem, ctx)
    room = max(ctx.max_tests - len(trusted), 0) if room is None else room
    return sample_tests(written, room, seed=problem.task_id)


def make_test_writer(
    model: BaseChatModel | None = None,
) -> Callable[[CodeState, Runtime[Context]], dict[str, Any]]:
    """The test-writer node; ``model`` overrides ``Context.evaluator_model`` (the tests are the
    evaluator's instrument). Tests given in the input are kept as they are. Under
    ``Context.test_trust="anchored"`` a problem whose prompt gives examples gets those only:
    the model writes no tests that could outvote them. ``Context.cross_check`` then needs
    probes: in Python the examples with their inputs varied (no model call), else tests the
    model writes, which only compare implementations."""

    def test_writer(state: CodeState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = get_context(runtime)
        problem = problem_of(state)
        if state.tests or not ctx.generate_tests:
            return {}
        trusted = trusted_tests(problem, ctx)
        anchored = bool(trusted) and ctx.test_trust == "anchored"
        if anchored and not ctx.cross_check:
            return {"tests": trusted}
        if anchored and problem.language == "py":
            probes = mutated_probes(trusted, problem.entry_point, ctx.max_tests, problem.task_id)
            if probes:
                return {"tests": trusted, "probe_tests": probes}
        llm = resolve_model(model, ctx.evaluator_model, ctx, temperature=0.0, role="evaluator")
        count = ctx.max_tests + 2
        system = "code_probes_system" if anchored else "code_tests_system"
        reply = llm.invoke(test_messages(problem, count, system), stop=["\n```\n", "\n\n\n"])
        if anchored:
            probes = valid_tests(reply.text, problem, ctx, trusted, room=ctx.max_tests)
            return {"tests": trusted, "probe_tests": probes}
        written = valid_tests(reply.text, problem, ctx, trusted)
        return {"tests": [*trusted, *written], "written_tests": written}

    return test_writer


# ---- actor ------------------------------------------------------------------------------------


def did_compile(record: Mapping[str, Any]) -> bool:
    """Whether a trial's answer compiled: its ``compiled`` flag, or for a record written
    before the flag existed (a thread forked from an older run), what its feedback says."""
    flag = record.get("compiled")
    return flag if flag is not None else NOT_COMPILED not in record["feedback"]


def retries_fresh(state: CodeState, ctx: Context) -> bool:
    """Whether the next attempt is a fresh sample rather than a repair of the last one:
    ``Context.code_retry`` says which, and under ``auto`` code that did not compile is
    repaired (the compiler's errors point into it) and code that failed tests is not. A
    ``resample`` retry is fresh too, from the first trial's prompt alone."""
    if state.trial == 0 or not state.evaluations:
        return False
    if ctx.code_retry == "auto":
        return did_compile(state.evaluations[-1])
    return ctx.code_retry in ("fresh", "resample")


def compiler_fixed(
    state: CodeState, problem: CodeProblem, ctx: Context, tried: set[str]
) -> str | None:
    """Rust under ``Context.compiler_fixes``: the last attempt with the fixes ``rustc``
    suggests applied, when it did not compile, was the model's own (not already a fix), and
    the fixes make it compile into code whose key is not in ``tried``; else ``None``."""
    if not (ctx.compiler_fixes and problem.language == "rs" and state.evaluations):
        return None
    last = state.evaluations[-1]
    code = last["answer"]
    if not code or did_compile(last) or last.get("compiler_fix"):
        return None
    fixed = fix_rust(code, preamble=rust_preamble(problem.prompt, code))
    return fixed if fixed is not None and code_key(fixed, "rs") not in tried else None


def code_messages(state: CodeState, ctx: Context) -> list[BaseMessage]:
    """The actor prompt: instructions and the problem (a prefix that stays the same across
    trials), then, after a failed trial, the previous implementation as the assistant's turn
    and the test results, the reflections (strategy ``reflexion``) and the request to fix it;
    for a fresh retry (:func:`retries_fresh`) the test results and reflections follow the
    problem in the same turn, without the previous implementation. Under
    ``Context.code_retry="resample"`` every trial's prompt is the first trial's: the retry
    learns nothing from the failure, it is only another sample."""
    problem = problem_of(state)
    names = _names(problem.language)
    task = render("code_task", prompt=problem.prompt.strip(), **names)
    messages: list[BaseMessage] = [
        with_lessons(render("code_system", **names), state),
        HumanMessage(task),
    ]
    if state.trial == 0 or not state.evaluations or ctx.code_retry == "resample":
        return messages
    reflection_block = ""
    if ctx.uses_reflections and ctx.memory_size > 0 and state.reflections:
        window = state.reflections[-ctx.memory_size :]
        reflection_block = "\nYour reflection on it:\n" + "\n".join(f"- {r}" for r in window) + "\n"
    fresh = retries_fresh(state, ctx)
    retry = render(
        "code_fresh" if fresh else "code_retry",
        feedback=state.evaluations[-1]["feedback"],
        reflection_block=reflection_block,
        entry_point=problem.entry_point,
        **names,
    )
    if fresh:
        return [messages[0], HumanMessage(f"{task}\n\n{retry}")]
    previous = (
        _fenced(state.answer, problem.language)
        if state.answer
        else "\n".join(state.trajectory) or "(no reply)"
    )
    return [*messages, AIMessage(previous), HumanMessage(retry)]


def code_key(code: str, language: str) -> str:
    """What makes two implementations the same attempt: the Python syntax tree when the code
    parses (comments, blank lines and formatting aside), else the code without whitespace."""
    if language == "py":
        try:
            return ast.dump(ast.parse(code))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            pass
    return re.sub(r"\s+", "", code)


def make_code_actor(
    model: BaseChatModel | None = None, *, family: Family = programming_family
) -> Callable[[CodeState, Runtime[Context]], dict[str, Any]]:
    """The code actor node; ``model`` overrides ``Context.actor_model``; ``family`` is the task
    family whose lessons it recalls on the first trial (``Context.lessons``). A retry whose code
    repeats an earlier attempt is sampled again (``Context.resample_repeats``); a fresh retry
    (``Context.code_retry``) is sampled at ``RESAMPLE_TEMPERATURE`` from the start. After Rust
    code that did not compile, the retry is first the compiler's own fix, when it has one
    (:func:`compiler_fixed`), with no model call."""

    def code_actor(state: CodeState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = get_context(runtime)
        problem = problem_of(state)
        recalled = recall_update(state, state.task, runtime, family)
        if recalled:
            state = replace(state, **recalled)
        tried = {code_key(e["answer"], problem.language) for e in state.evaluations if e["answer"]}
        fixed = compiler_fixed(state, problem, ctx, tried)
        if fixed is not None:
            return {
                "trial": state.trial + 1,
                "trajectory": [fixed],
                "answer": fixed,
                "stop_reason": None,
                "compiler_fix": True,
            }
        fresh = retries_fresh(state, ctx)
        llm = actor_llm(model, ctx, hot=fresh)
        messages = code_messages(state, ctx)
        draws = 0

        def draw(chat: BaseChatModel) -> BaseMessage:
            """One reply, seeded by what it draws on a retry (``Context.code_seeds``)."""
            nonlocal draws
            draws += 1
            named = state.trial > 0 and ctx.code_seeds == "retry"
            seed = named_seed(chat, problem.task_id, state.trial + 1, draws) if named else {}
            # No grammar: llama.cpp's grammar sampling halves the token rate on this
            # vocabulary; the parser copes with whatever format comes back.
            return chat.invoke(messages, stop=STOPS[problem.language], **seed)

        reply = draw(llm)
        parsed = extract_code(reply.text, problem)
        first = reply, parsed
        hot = llm if fresh else None  # built only if a redraw runs
        for _ in range(ctx.resample_repeats if tried else 0):
            if parsed.code is not None and code_key(parsed.code, problem.language) not in tried:
                break
            if hot is None:
                hot = actor_llm(model, ctx, hot=True)
            reply = draw(hot)
            parsed = extract_code(reply.text, problem)
        if parsed.code is None:  # no resample gave code: keep the first reply
            reply, parsed = first
        return {
            **recalled,
            "trial": state.trial + 1,
            "trajectory": [parsed.code if parsed.code is not None else reply.text.strip()[:2000]],
            "answer": parsed.code,
            "stop_reason": parsed.error,
            "compiler_fix": False,
        }

    return code_actor


# ---- evaluator --------------------------------------------------------------------------------


def run_tests(
    program: str, tests: list[str], language: str, limits: Limits, entry_point: str
) -> SuiteResult:
    """Run internal tests against a program in the sandbox."""
    if language == "rs":
        return run_rust_tests(program, tests, limits, entry_point=entry_point)
    return run_python_tests(program, tests, limits)


def format_feedback(
    result: SuiteResult,
    language: str,
    doubted: frozenset[str] = frozenset(),
    unbacked: frozenset[str] = frozenset(),
) -> str:
    """Test results in the paper's format: the passed tests, then each failed test with the
    actual value or the error as a comment; ``doubted`` tests (failed by every attempt) and
    ``unbacked`` ones (independent implementations side with the attempt) are listed apart,
    as tests that may themselves be wrong."""
    if result.compile_error is not None:
        return f"{NOT_COMPILED}\n{result.compile_error.strip()}"
    comment = "#" if language == "py" else "//"
    passed = [o.test for o in result.outcomes if o.passed]
    failed = [
        f"{o.test} {comment} {o.detail}"
        for o in result.outcomes
        if not o.passed and o.test not in doubted | unbacked
    ]
    text = (
        "Tests passed:\n"
        + ("\n".join(passed) if passed else "(none)")
        + "\n\nTests failed:\n"
        + ("\n".join(failed) if failed else "(none)")
    )
    if doubted:
        text += (
            "\n\nTests every attempt failed (self-written, possibly wrong; not counted):\n"
            + "\n".join(t for t in (o.test for o in result.outcomes) if t in doubted)
        )
    unbacked_only = [o for o in result.outcomes if o.test in unbacked - doubted]
    if unbacked_only:
        text += (
            "\n\nTests other implementations fail the same way (self-written, possibly "
            "wrong; not counted):\n"
            + "\n".join(f"{o.test} {comment} {o.detail}" for o in unbacked_only)
        )
    return text


def doubted_tests(state: CodeState, failed_written: list[str], ctx: Context) -> frozenset[str]:
    """Self-written tests this attempt failed that every earlier attempt with code failed too
    (agreement across attempts: the test, not the code, is the likelier culprit); none on the
    first attempt or under ``Context.test_trust="all"``."""
    if ctx.test_trust != "anchored" or not state.test_failures:
        return frozenset()
    common = set(failed_written)
    for earlier in state.test_failures:
        common &= set(earlier)
    return frozenset(common)


def _counted(result: SuiteResult, tests: list[str]) -> SuiteResult:
    """The part of ``result`` that concerns ``tests`` (the probe tests left out)."""
    kept = set(tests)
    return replace(result, outcomes=tuple(o for o in result.outcomes if o.test in kept))


def _draw_witness(
    state: CodeState,
    ctx: Context,
    problem: CodeProblem,
    limits: Limits,
    model: BaseChatModel | None,
    number: int,
) -> Witness:
    """Witness ``number``: an independent implementation from the first trial's prompt at the
    redraw temperature (its seed named by the problem and ``number``), run on the trusted and
    probe tests."""
    llm = actor_llm(model, ctx, hot=True)
    messages = code_messages(replace(state, trial=0, evaluations=[]), ctx)
    seed = named_seed(llm, problem.task_id, "witness", number)
    parsed = extract_code(llm.invoke(messages, stop=STOPS[problem.language], **seed).text, problem)
    if parsed.code is None:
        return {"code": None, "fingerprint": None}
    program = assemble(problem, parsed.code)
    tests = [*state.tests, *state.probe_tests]
    result = run_tests(program, tests, problem.language, limits, problem.entry_point)
    print_ = fingerprint(result, state.probe_tests)
    if print_ is None or not _counted(result, list(state.tests)).passed:
        return {"code": parsed.code, "fingerprint": None}
    return {"code": parsed.code, "fingerprint": list(print_)}


def cross_check(
    state: CodeState,
    ctx: Context,
    mine: Fingerprint,
    limits: Limits,
    model: BaseChatModel | None = None,
) -> tuple[Verdict, list[Witness], str]:
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
        drawn.append(_draw_witness(state, ctx, problem, limits, model, number))
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
    ctx: Context,
    problem: CodeProblem,
    limits: Limits,
    model: BaseChatModel | None,
    number: int,
) -> Witness:
    """Voter ``number``: an independent implementation from the first trial's prompt at the
    redraw temperature (seeded by the problem and ``number``), with its outcome on each
    internal test (``"pass"`` or the failure's detail); no fingerprint when it has no code or
    does not compile (it then votes on nothing)."""
    llm = actor_llm(model, ctx, hot=True)
    messages = code_messages(replace(state, trial=0, evaluations=[]), ctx)
    seed = named_seed(llm, problem.task_id, "voter", number)
    parsed = extract_code(llm.invoke(messages, stop=STOPS[problem.language], **seed).text, problem)
    if parsed.code is None:
        return {"code": None, "fingerprint": None}
    program = assemble(problem, parsed.code)
    result = run_tests(program, state.tests, problem.language, limits, problem.entry_point)
    outcomes = fingerprint(result, state.tests)
    return {"code": parsed.code, "fingerprint": None if outcomes is None else list(outcomes)}


def unbacked_tests(
    state: CodeState,
    ctx: Context,
    result: SuiteResult,
    failed_written: list[str],
    limits: Limits,
    model: BaseChatModel | None = None,
) -> tuple[frozenset[str], list[Witness]]:
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
    drawn = [
        _draw_voter(state, ctx, problem, limits, model, number)
        for number in range(len(state.witnesses), ctx.cross_check)
    ]
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


def make_unit_test_evaluator(
    model: BaseChatModel | None = None,
) -> Callable[[CodeState, Runtime[Context]], dict[str, Any]]:
    """The evaluator node: success when every internal test that counts passes (under
    ``Context.test_trust="anchored"``, self-written tests that every attempt failed do not
    count) and, with ``Context.cross_check``, independent implementations do not outvote the
    attempt on the probe tests (``model`` overrides ``Context.actor_model`` for drawing them).
    An attempt is never a success on empty evidence: when doubt leaves no counted test (or
    none of them passed), it is not, and under ``select_answer="best"`` the earlier attempt
    stands. The score is the share of all internal tests passed, comparable across trials.
    Without internal tests it can only check that the code compiles and never reports success:
    when tests were asked for (``generate_tests``) and none came, a compiling attempt is the
    thread's last; in the paper's "no test generation" ablation every trial runs."""

    def unit_test_evaluator(state: CodeState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = get_context(runtime)
        problem = problem_of(state)
        tests = list(state.tests)
        limits = Limits(
            test_timeout_s=ctx.test_timeout,
            suite_timeout_s=ctx.test_timeout * (len(tests) + len(state.probe_tests) + 2) + 30,
        )
        failures: list[list[str]] = []
        evidence: dict[str, int] = {}
        drawn: list[Witness] = []
        last = False
        compiled: bool | None = None
        if state.answer is None:
            score, success = 0.0, False
            feedback = f"No implementation: {state.stop_reason or 'no code block was found'}"
        else:
            program = assemble(problem, state.answer)
            checked = [*tests, *state.probe_tests]
            full = run_tests(program, checked, problem.language, limits, problem.entry_point)
            result = _counted(full, tests)
            compiled = result.compile_error is None
            if tests:
                failed = {o.test for o in result.outcomes if not o.passed}
                written = set(state.written_tests)
                failed_written = [t for t in tests if t in written and t in failed]
                failures = [failed_written] if compiled else []
                doubted = doubted_tests(state, failed_written, ctx)
                unbacked: frozenset[str] = frozenset()
                if compiled:
                    unbacked, drawn = unbacked_tests(
                        state, ctx, result, failed_written, limits, model
                    )
                passed = sum(o.passed for o in result.outcomes) if compiled else 0
                score = passed / len(tests)
                counted = [t for t in tests if t not in doubted | unbacked]
                held = sum(t not in failed for t in counted) if compiled else 0
                # An attempt is a success on evidence only: every counted test passed, and at
                # least one did (doubt can leave nothing to fail, which proves nothing).
                success = compiled and not (failed - doubted - unbacked) and held > 0
                feedback = format_feedback(result, problem.language, doubted, unbacked)
                if compiled and not counted:
                    feedback += f"\n\n{NO_EVIDENCE}: every test is doubted, so no success."
                evidence = {"tests_passed": held, "tests_counted": len(counted)}
                mine = fingerprint(full, state.probe_tests)
                if success and mine is not None and state.trial < ctx.max_trials:
                    found, drawn, told = cross_check(state, ctx, mine, limits, model)
                    if found == "outvoted":
                        success = False
                        feedback += "\n\n" + told
            else:
                score, success = 0.0, False
                status = (
                    f"{NOT_COMPILED}\n{result.compile_error.strip()}"
                    if result.compile_error is not None
                    else "The implementation compiles."
                )
                feedback = f"{NO_TESTS} (there are no internal tests). {status}"
                # Tests were asked for and none came: a compiling attempt leaves nothing to
                # learn from, so the thread stops (in the no-tests ablation it goes on).
                last = result.compile_error is None and ctx.generate_tests
        record = TrialRecord(
            trial=state.trial,
            answer=state.answer,
            score=score,
            success=success,
            feedback=feedback,
        )
        if compiled is not None:
            record["compiled"] = compiled
        if evidence:
            record["tests_passed"] = evidence["tests_passed"]
            record["tests_counted"] = evidence["tests_counted"]
        if state.compiler_fix:
            record["compiler_fix"] = True
        if last:
            record["last"] = True
        update: dict[str, Any] = {
            "evaluations": [record],
            "solved": success,
            "test_failures": failures,
        }
        if drawn:
            update["witnesses"] = drawn
        return update

    return unit_test_evaluator


# ---- reflector prompt -------------------------------------------------------------------------


def code_reflection_messages(state: CodeState, ctx: Context | None = None) -> list[BaseMessage]:
    """The code reflector prompt: instructions, two worked examples as turns, then the problem,
    the failed implementation and its test results (no option of ``ctx`` changes it)."""
    problem = problem_of(state)
    names = _names(problem.language)
    messages: list[BaseMessage] = [SystemMessage(render("code_reflect_system", **names))]
    for example in few_shot("code_reflect_examples"):
        attempt, _, lesson = example.partition("\nReflection:")
        messages += [HumanMessage(attempt.strip()), AIMessage("Reflection: " + lesson.strip())]
    feedback = state.evaluations[-1]["feedback"] if state.evaluations else "The tests failed."
    implementation = state.answer if state.answer else "(no implementation was produced)"
    user = render(
        "code_reflect_task",
        prompt=problem.prompt.strip(),
        implementation=implementation.strip(),
        feedback=feedback,
        **names,
    )
    return [*messages, HumanMessage(user)]
