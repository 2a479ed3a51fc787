"""The programming graph's context (``reflexion_programming``): what its test writer, actor and
evaluator add to :class:`~reflexion.core.context.Context`."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    AFTER_FIRST_TRIAL,
    Context,
    RetrySeeds,
    Temperature,
    Tokens,
    Trials,
    Window,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

TestTrust = Literal["all", "held_out"]
CodeRetry = Literal["repair", "fresh", "resample", "fresh_once"]


@settings_class
class CodeContext(Context):
    """Settings of a programming run (Python or Rust)."""

    PRESETS: ClassVar[Presets] = {
        "paper": {
            "example_tests": False,
            "test_trust": "all",
            "resample_repeats": 0,
            "code_retry": "repair",
            "compiler_fixes": False,
        }
    }
    """``paper``: the prompt's examples do not become tests; every test decides alike (none
    is doubted or held out); no redraw of a retry that repeats earlier code; every retry
    repairs the last attempt (the default's first retry starts fresh, later ones are blind
    redraws); no rustc fixes applied first."""

    # The configuration of the HumanEval figures: greedy first attempts, Ω = 1, up to four
    # implementations, room for a whole function.
    max_trials: Trials = redefault("max_trials", 4)
    memory_size: Window = redefault("memory_size", 1)
    temperature: Temperature = redefault("temperature", 0.0)
    max_tokens: Tokens = redefault("max_tokens", 768)

    max_tests: Annotated[int, Field(ge=1, le=100)] = field(
        default=6,
        metadata={
            "description": "Programming: most self-written unit tests kept per problem (sampled "
            "from the valid ones; the paper keeps at most 6)."
        },
    )
    generate_tests: bool = field(
        default=True,
        metadata={
            "description": "Programming: have the model write unit tests. Off (the paper's "
            "ablation), nothing can tell a trial succeeded, so every trial runs."
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
    resample_repeats: Annotated[int, Field(ge=0, le=10)] = field(
        default=2,
        metadata={
            "description": "Programming: when a retry gives back code it already tried (a "
            "small model at temperature 0 often copies its previous attempt), sample again at "
            "temperature 0.8 up to this many times; 0 = keep the repeat (the paper).",
            "role": AFTER_FIRST_TRIAL,
        },
    )
    code_retry: CodeRetry = field(
        default="fresh_once",
        metadata={
            "description": "Programming: what a retry starts from: fresh_once (one retry reads "
            "the failed tests and the reflection, later ones are blind redraws), fresh (every "
            "retry reads them, without the previous code), repair (the previous code and its "
            "feedback: the paper) or resample "
            "(blind redraws: the equal-budget baseline).",
            "role": AFTER_FIRST_TRIAL,
            "first_trial_as": {"fresh_once": "fresh"},
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
    code_seeds: RetrySeeds = field(
        default="retry",
        metadata={
            "description": "Programming actor, on models that take a seed: retry seeds each "
            "retry's draw by the problem, the trial and the draw, so a rerun draws the same; "
            "process uses one counter per process.",
            "role": AFTER_FIRST_TRIAL,
        },
    )
    test_timeout: Annotated[float, Field(gt=0)] = field(
        default=5.0,
        metadata={"description": "Programming: seconds each unit test may run in the sandbox."},
    )

    @property
    def retries_read_feedback(self) -> bool:
        """``resample``'s retries are drawn from the task alone; every other mode's retries
        (``fresh_once``'s first) read the evaluator's feedback."""
        return self.code_retry != "resample"
