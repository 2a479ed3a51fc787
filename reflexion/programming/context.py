"""The programming graph's context (``reflexion_programming``): what its test writer, actor and
evaluator add to :class:`~reflexion.core.context.Context`."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    AFTER_FIRST_TRIAL,
    Guarded,
    Retry,
    Seeded,
    Temperature,
    Tokens,
    Trials,
    Window,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

TestTrust = Literal["all", "held_out"]


@settings_class
class CodeContext(Seeded, Guarded):
    """Settings of a programming run (Python or Rust). Under ``retry="one_attempt"`` the
    model writes no tests: one attempt has no retry for them to decide on."""

    PRESETS: ClassVar[Presets] = {
        "paper": {
            "example_tests": False,
            "test_trust": "all",
            "repair": True,
            "retry": "informed",
            "compiler_fixes": False,
        }
    }
    """``paper``: the prompt's examples do not become tests; every test decides alike (none
    is doubted or held out); every retry repairs the last attempt (the default's first retry
    starts fresh, later ones are blind redraws); no rustc fixes applied first. The base
    preset informs every retry and turns the repeat guard off."""

    # The configuration of the HumanEval figures: greedy first attempts, Ω = 1, up to four
    # implementations, room for a whole function.
    max_trials: Trials = redefault("max_trials", 4)
    memory_size: Window = redefault("memory_size", 1)
    temperature: Temperature = redefault("temperature", 0.0)
    max_tokens: Tokens = redefault("max_tokens", 768)
    retry: Retry = redefault("retry", "informed_once")

    max_tests: Annotated[int, Field(ge=1, le=100)] = field(
        default=6,
        metadata={
            "description": "Programming: most self-written unit tests kept per problem (sampled "
            "from the valid ones; the paper keeps at most 6)."
        },
    )
    example_tests: bool = field(
        default=True,
        metadata={
            "description": "Programming: turn the examples in the prompt's documentation "
            "(>>> f(x) / y, f(x) ==> y) into the first internal tests; the model's own tests "
            "fill up to max_tests. Off: the model's tests only, as in the paper."
        },
    )
    test_trust: TestTrust = field(
        default="held_out",
        metadata={
            "description": "Programming: which internal tests decide. held_out: the prompt's "
            "examples alone when there are any, otherwise the self-written tests with every "
            "second one hidden from the retries; all: every test (the paper).",
        },
    )
    repair: bool = field(
        default=False,
        metadata={
            "description": "Programming: an informed retry repairs the previous implementation, "
            "reading it with its test results (the paper), instead of starting over from the "
            "task with the failed tests, which measured better on HumanEval (+7/−0 on the "
            "1.5B model). Set it to follow the paper.",
            "role": AFTER_FIRST_TRIAL,
        },
    )
    compiler_fixes: bool = field(
        default=True,
        metadata={
            "description": "Rust: when an attempt does not compile and rustc suggests fixes, the "
            "next attempt is that code with the fixes applied, with no model call. false = off "
            "(the paper).",
            "role": AFTER_FIRST_TRIAL,
        },
    )
    test_timeout: Annotated[float, Field(gt=0)] = field(
        default=5.0,
        metadata={"description": "Programming: seconds each unit test may run in the sandbox."},
    )
