"""What the sandbox takes and returns: its limits and the outcome of a test, a suite or a
program."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from typing_extensions import TypedDict


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    test_timeout_s: float = 5.0
    """Wall-clock seconds one test process (or one program) may run."""
    suite_timeout_s: float = 60.0
    """Wall-clock seconds a whole suite may run; the tests left over fail with "suite timeout"
    (a Rust suite's compilation is not counted, it has ``compile_timeout_s``)."""
    memory_mb: int = 1024
    """Address space of a test process (``RLIMIT_AS``), in MiB."""
    output_bytes: int = 16_000
    """How much of a test's stdout and of its stderr is captured."""
    compile_timeout_s: float = 60.0
    """Wall-clock seconds one ``rustc`` run may take."""


Standing = Literal["counted", "doubted"]
"""How a verdict weighs a test: it ``counted``, or it was ``doubted`` (self-written, and
every attempt failed it). The sandbox leaves every test ``counted``."""


class OutcomeRecord(TypedDict):
    """The result of one unit test, in the one shape it keeps from the sandbox to the trial
    record (a JSON-like dict, so checkpoints and results files hold it as it is)."""

    test: str
    """The test statement as given."""
    passed: bool
    detail: str
    """``""`` when the test passed; otherwise one short line (at most 300 characters): for a
    failed equality assertion the actual value (``output: 5``), otherwise the reason
    (``timed out after 5.0s``, ``MemoryError``, ``RecursionError: ...``, ``exited with code 3
    (sys.exit)``, ``process killed by signal 9 (SIGKILL)``, ``PermissionError: write outside the
    sandbox: /etc/x``, ``reads stdin: EOFError: ...``, ``compile error`` ...)."""
    standing: Standing
    """Whether it counted for the verdict: ``"counted"`` as the sandbox returns it; the
    evaluator marks the tests it doubts."""


def counted(test: str, passed: bool, detail: str) -> OutcomeRecord:
    """One test's outcome as the sandbox returns it (it counts until a verdict doubts it)."""
    return OutcomeRecord(test=test, passed=passed, detail=detail, standing="counted")


@dataclass(frozen=True)
class SuiteResult:
    """The results of running unit tests against one implementation."""

    outcomes: tuple[OutcomeRecord, ...]
    """One outcome per test, in the order given."""
    compile_error: str | None = None
    """The implementation's Python ``SyntaxError`` or ``rustc``'s errors (trimmed to about 1500
    characters); ``None`` when it compiled."""

    @property
    def passed(self) -> bool:
        """Whether the implementation compiled and every test (at least one) passed."""
        return (
            self.compile_error is None
            and bool(self.outcomes)
            and all(o["passed"] for o in self.outcomes)
        )


@dataclass(frozen=True)
class ProgramResult:
    """The result of running a whole program (e.g. a benchmark's hidden test)."""

    passed: bool
    """Whether the program compiled, ran to its end within the timeout and exited with 0."""
    detail: str
    """``""`` when it passed; otherwise a short reason (the exception or panic message line,
    the timeout, the signal ...)."""


DEFAULT_LIMITS = Limits()
"""The limits a run gets when the caller gives none."""
