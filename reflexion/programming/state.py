"""The programming graph's state: the Reflexion state plus the problem, its internal tests and
the implementations drawn to cross-check attempts."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated

from typing_extensions import TypedDict

from reflexion.core.state import InputState, OutputState, State


class Witness(TypedDict):
    """An implementation drawn independently to cross-check attempts
    (``CodeContext.cross_check``)."""

    code: str | None
    """Its code, or ``None`` when the reply held none."""
    fingerprint: list[str] | None
    """Its outcome on each probe test (``"pass"`` or the failure's detail), or ``None`` when
    it failed the trusted tests (then it speaks for no behaviour)."""


@dataclass(kw_only=True)
class CodeInputState(InputState):
    """What a caller provides to start a programming thread: ``task`` is the function's
    signature and documentation (the benchmark prompt)."""

    language: str = "py"
    """``py`` (Python) or ``rs`` (Rust)."""
    entry_point: str = ""
    """Name of the function to implement."""
    tests: list[str] = field(default_factory=list)
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
    is doubted under every ``CodeContext.test_trust`` but ``"all"``."""
    probe_tests: list[str] = field(default_factory=list)
    """Tests only for comparing implementations (``CodeContext.cross_check``; in Python the
    examples with their inputs varied, else written by the model): they never decide a trial,
    only whether two implementations behave alike."""
    witnesses: Annotated[list[Witness], operator.add] = field(default_factory=list)
    """The implementations drawn so far to cross-check attempts, in order."""
    parents: Annotated[list[int], operator.add] = field(default_factory=list)
    """Under ``CodeContext.code_retry="tree"``: the attempt each attempt expanded, in order
    (-1: the task itself)."""
    branch_reflections: Annotated[list[str], operator.add] = field(default_factory=list)
    """Under ``CodeContext.code_retry="tree"``: each failed attempt's reflection, in attempt
    order ("" where none was written), kept whatever Ω."""
    compiler_fix: bool = False
    """Whether ``answer`` is the previous attempt with the compiler's suggested fixes applied
    (``CodeContext.compiler_fixes``) rather than the model's sample."""


@dataclass(kw_only=True)
class CodeOutputState(OutputState):
    """What a finished programming run returns."""

    tests: list[str] = field(default_factory=list)
    """The internal unit tests the implementation was checked against."""
