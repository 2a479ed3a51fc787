"""The programming graph's context (``reflexion_programming``): what its test writer, actor and
evaluator add to :class:`~reflexion.core.context.Context`."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    Guard,
    Retry,
    Seeded,
    Strategy,
    Temperature,
    Tokens,
    Trials,
    Window,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

InternalTests = Literal["examples", "held_out", "all"]

REPAIRING: tuple[Strategy, ...] = ("last_attempt", "last_attempt_and_reflexion")
"""The strategies that carry the last attempt: under them an informed retry repairs it."""


@settings_class
class CodeContext(Seeded):
    """Settings of a programming run (Python or Rust). Under ``retry="one_attempt"`` the
    model writes no tests: one attempt has no retry for them to decide on."""

    PRESETS: ClassVar[Presets] = {
        "paper": {
            "internal_tests": "all",
            "strategy": "last_attempt_and_reflexion",
            "retry": "informed",
            "compiler_fixes": False,
            "repeat_guard": 0,
        }
    }
    """``paper``: the model's own tests, every one of which decides alike (none is doubted or
    held out; the prompt's examples do not become tests); every retry repairs the last attempt
    and reads the reflections (the default's first retry starts fresh, later ones are blind
    redraws); no rustc fixes applied first; repeated code is kept."""

    RENAMED: ClassVar[dict[str, str]] = {
        "repair": "strategy: last_attempt or last_attempt_and_reflexion repairs the last attempt",
        "example_tests": "internal_tests: examples (on) or held_out (off)",
        "test_trust": "internal_tests: held_out is examples, or held_out without example_tests; "
        "all is all",
    }
    """The fields the 2026-12-05 settings replaced, and what to set instead."""

    # The configuration of the HumanEval figures: greedy first attempts, Ω = 1, up to four
    # implementations, room for a whole function.
    max_trials: Trials = redefault("max_trials", 4)
    memory_size: Window = redefault("memory_size", 1)
    temperature: Temperature = redefault("temperature", 0.0)
    max_tokens: Tokens = redefault("max_tokens", 768)
    retry: Retry = redefault("retry", "informed_once")
    repeat_guard: Guard = redefault("repeat_guard", 2)

    max_tests: Annotated[int, Field(ge=1, le=100)] = field(
        default=6,
        metadata={
            "description": "Programming: most self-written unit tests kept per problem (sampled "
            "from the valid ones; the paper keeps at most 6)."
        },
    )
    internal_tests: InternalTests = field(
        default="examples",
        metadata={
            "description": "Programming: which internal tests decide: examples (the prompt's "
            "examples alone where it gives any, else as held_out), held_out (the model's own "
            "tests, every second one unseen by the retries and the reflector) or all (the "
            "model's own, every one shown: the paper). Set held_out to measure the model's own "
            "tests, all to follow the paper."
        },
    )
    compiler_fixes: bool = field(
        default=True,
        metadata={
            "description": "Rust: when an attempt does not compile and rustc suggests fixes, the "
            "next attempt is that code with the fixes applied, with no model call. false = off "
            "(the paper).",
        },
    )
    test_timeout: Annotated[float, Field(gt=0)] = field(
        default=5.0,
        metadata={"description": "Programming: seconds each unit test may run in the sandbox."},
    )

    @property
    def repairs(self) -> bool:
        """Whether an informed retry repairs the last attempt (a strategy that carries it)
        rather than starting over from the task."""
        return self.strategy in REPAIRING

    @property
    def examples_decide(self) -> bool:
        """Whether the prompt's examples become the tests (``internal_tests="examples"``)."""
        return self.internal_tests == "examples"

    @property
    def every_test_decides(self) -> bool:
        """Whether every internal test decides alike and is shown (``internal_tests="all"``,
        the paper's): none is doubted or held out."""
        return self.internal_tests == "all"
