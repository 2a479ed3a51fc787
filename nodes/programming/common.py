"""What the programming nodes share: the problem a state describes, the code fences and the
reply stops, the feedback's fixed wording, and running internal tests in the sandbox.

The benchmark's hidden tests are not part of the graph state: nothing here can show them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reflexion.core.errors import ReflexionError
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

FENCES = {"py": "python", "rs": "rust"}
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


def fenced(code: str, language: str) -> str:
    return f"```{FENCES[language]}\n{code.strip()}\n```"


def prompt_names(language: str) -> dict[str, str]:
    return {"language": LANGUAGE_NAMES[language], "fence": FENCES[language]}


def did_compile(record: Mapping[str, Any]) -> bool:
    """Whether a trial's answer compiled: its ``compiled`` flag; a trial with no answer to
    build has none and counts as compiled (no compiler error points into anything)."""
    return bool(record.get("compiled", True))


def run_tests(
    program: str, tests: list[str], language: str, limits: Limits, entry_point: str
) -> SuiteResult:
    """Run internal tests against a program in the sandbox."""
    if language == "rs":
        return run_rust_tests(program, tests, limits, entry_point=entry_point)
    return run_python_tests(program, tests, limits)
