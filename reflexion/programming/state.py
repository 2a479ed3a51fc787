"""The programming graph's state: the Reflexion state plus the problem, its internal tests and
each trial's per-test evidence."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, NotRequired

from pydantic import Field

from reflexion.core.state import InputState, OutputState, State, TrialRecord
from reflexion.programming.sandbox.results import OutcomeRecord


class CodeTrialRecord(TrialRecord):
    """The unit-test evaluator's verdict on one trial: the generic record plus the evidence.

    Which tests a retry is not shown (``CodeContext.internal_tests``) is no part of
    the record: it is decided where the feedback is read, by the reader's own context, so
    that a thread forked from another run's first trial hides what its own settings say.
    """

    compiled: NotRequired[bool]
    """Whether the answer compiled (absent when there was no answer to build)."""
    compiler_fix: NotRequired[bool]
    """Set when the answer was the previous one with the compiler's suggested fixes applied
    (``CodeContext.compiler_fixes``), not a model's sample."""
    tests_passed: NotRequired[int]
    """How many of the internal tests that count the answer passed."""
    tests_counted: NotRequired[int]
    """How many internal tests counted for this answer (not doubted)."""
    outcomes: NotRequired[list[OutcomeRecord]]
    """Each internal test's outcome, in the tests' order (absent when nothing ran)."""
    notes: NotRequired[list[str]]
    """What the feedback says after the tests (no counted evidence, a tie with an earlier
    trial), one paragraph each."""


@dataclass(kw_only=True)
class CodeInputState(InputState):
    """What a caller provides to start a programming thread: ``task`` is the function's
    signature and documentation (the benchmark prompt)."""

    task: Annotated[
        str,
        Field(
            description="The function to write: its signature and docstring, as in "
            'HumanEval. Example: def add(a: int, b: int) -> int:\n    """Return a + b.\n'
            '    >>> add(2, 3)\n    5\n    """',
            examples=[
                'def add(a: int, b: int) -> int:\n    """Return a + b.\n    >>> add(2, 3)'
                '\n    5\n    """\n'
            ],
        ),
    ] = ""
    """The function's signature and documentation (the benchmark prompt)."""
    language: Annotated[
        str,
        Field(description="py (Python) or rs (Rust). Example: py", examples=["py"]),
    ] = "py"
    """``py`` (Python) or ``rs`` (Rust)."""
    entry_point: Annotated[
        str,
        Field(description="The name of the function to write. Example: add", examples=["add"]),
    ] = ""
    """Name of the function to implement."""
    tests: Annotated[
        list[str],
        Field(
            description="Unit tests, one statement each, used as given; leave empty and the "
            "model writes its own from the docstring. Example: assert add(2, 3) == 5",
            examples=[["assert add(2, 3) == 5"]],
        ),
    ] = field(default_factory=list)
    """Internal unit tests (one statement each). Leave empty to have the model write them;
    tests given here are used as they are."""


@dataclass(kw_only=True)
class CodeState(State, CodeInputState):
    """The state of a programming thread: the Reflexion state plus the problem and its
    internal tests. ``answer`` holds the latest implementation (the chosen one once the thread
    ends, see ``Context.select_answer``)."""

    written_tests: list[str] = field(default_factory=list)
    """The internal tests the model wrote (a subset of ``tests``); the others, the prompt's
    examples and tests given in the input, are trusted."""
    test_failures: Annotated[list[list[str]], operator.add] = field(default_factory=list)
    """Per finished trial, the self-written tests it failed: a test every attempt has failed
    is doubted under every ``CodeContext.internal_tests`` but ``"all"``."""
    # The family's record extends the generic one; lists are invariant, hence the ignore.
    evaluations: Annotated[list[CodeTrialRecord], operator.add] = field(  # type: ignore[assignment]
        default_factory=list
    )
    """One record per finished trial, in order, with its per-test evidence."""
    compiler_fix: bool = False
    """Whether ``answer`` is the previous attempt with the compiler's suggested fixes applied
    (``CodeContext.compiler_fixes``) rather than the model's sample."""


def graph_family(state: object) -> str:
    """The task family a programming thread's model calls are labelled with
    (:mod:`reflexion.core.tracing`): ``programming-py`` or ``programming-rs``, by the state's
    language."""
    return f"programming-{getattr(state, 'language', 'py') or 'py'}"


@dataclass(kw_only=True)
class CodeOutputState(OutputState):
    """What a finished programming run returns."""

    tests: list[str] = field(default_factory=list)
    """The internal unit tests the implementation was checked against."""
    evaluations: list[CodeTrialRecord] = field(default_factory=list)  # type: ignore[assignment]
    """The per-trial verdicts, with each test's outcome."""
