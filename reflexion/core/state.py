"""Graph state of the Reflexion loop: what callers send, what the loop keeps, what it returns.

One *trial* is one attempt by the actor. The *trajectory* is the short-term memory of the
current trial only (the actor resets it); the *reflections* window is the long-term memory,
holding at most Ω lessons (``Context.memory_size``); ``evaluations`` keeps one record per trial
so a learning curve can be drawn from the state alone.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict


class TrialRecord(TypedDict):
    """The evaluator's verdict on one trial."""

    trial: int
    """1-based trial number."""
    answer: str | None
    """The answer the actor gave, or ``None`` when it gave none it could parse."""
    score: float
    """Score in [0, 1]."""
    success: bool
    """Whether the trial solved the task (what stops the loop)."""
    feedback: str
    """The evaluator's feedback text (never the reference answer)."""
    compiled: NotRequired[bool]
    """Programming: whether the answer compiled (absent when there was no answer to build)."""
    compiler_fix: NotRequired[bool]
    """Programming: set when the answer was the previous one with the compiler's suggested
    fixes applied (``Context.compiler_fixes``), not a model's sample."""
    tests_passed: NotRequired[int]
    """Programming: how many of the internal tests that count (not doubted) the answer passed."""
    tests_counted: NotRequired[int]
    """Programming: how many internal tests counted for this answer (all but the doubted)."""
    ties: NotRequired[int]
    """Programming: an earlier trial whose attempt passes every test that counts for this one
    too (a test both failed was set apart): under ``select_answer="best"`` the earlier one
    stands."""
    last: NotRequired[bool]
    """Set when another trial could learn nothing more (e.g. no tests to run): the thread
    stops after this trial, solved or not."""


FailureClass = Literal["hallucination", "inefficient_planning", "step_limit", "other"]
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    "hallucination",
    "inefficient_planning",
    "step_limit",
    "other",
)


class Episode(TypedDict):
    """What one finished trial did in the environment (for scoring and Figure 3b; never
    shown to the agent, the evaluator or the reflector)."""

    trial: int
    won: bool
    """The engine's own verdict."""
    turns: int
    commands: int
    stop_reason: str | None
    failure: FailureClass | None
    """Why a trial that was not won failed; ``None`` when it was won."""


class Witness(TypedDict):
    """An implementation drawn independently to cross-check attempts (``Context.cross_check``)."""

    code: str | None
    """Its code, or ``None`` when the reply held none."""
    fingerprint: list[str] | None
    """Its outcome on each probe test (``"pass"`` or the failure's detail), or ``None`` when
    it failed the trusted tests (then it speaks for no behaviour)."""


@dataclass(kw_only=True)
class TrialInput:
    """What an actor subgraph (ReAct, ALFWorld) reads from the Reflexion state at the start of
    a trial: the task, the trial number, the last trajectory, the reflections and lessons,
    and the earlier trials' verdicts."""

    task: str = ""
    trial: int = 0
    previous_trajectory: list[str] = field(default_factory=list)
    reflections: list[str] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)
    evaluations: list[TrialRecord] = field(default_factory=list)


@dataclass(kw_only=True)
class InputState:
    """What a caller provides to start a thread."""

    task: str = ""
    """The question or instruction given to the actor."""
    context: str = ""
    """Supporting text shown to the actor (e.g. HotPotQA's gold paragraphs); may be empty."""
    reference: str | None = None
    """The gold answer, used by the exact-match evaluator and never shown to the actor or
    reflector. ``None`` when the evaluator needs none (an LLM judge)."""
    task_id: str | None = None
    """An identifier for the task (e.g. the dataset id), for results and logs."""


@dataclass(kw_only=True)
class State(InputState):
    """The full state of a Reflexion thread."""

    trial: int = 0
    """Number of the current trial (0 before the first)."""
    trajectory: list[str] = field(default_factory=list)
    """Lines of the current trial (thoughts, actions, observations); reset every trial."""
    previous_trajectory: list[str] = field(default_factory=list)
    """The last failed trial's trajectory, kept only for the ``last_attempt`` strategies."""
    reflections: list[str] = field(default_factory=list)
    """The window of the last Ω self-reflections, oldest first."""
    lessons: list[str] = field(default_factory=list)
    """Lessons recalled from other threads' reflections on the first trial
    (``Context.lessons``); shown to the actor in every trial, apart from the Ω window."""
    pending_review: str | None = None
    """The new reflection waiting for a person's review (``Context.review_reflections``);
    ``None`` when nothing waits."""
    evaluations: Annotated[list[TrialRecord], operator.add] = field(default_factory=list)
    """One record per finished trial, in order."""
    answer: str | None = None
    """The answer of the latest trial."""
    stop_reason: str | None = None
    """Why the latest trial ended without an answer (unparseable reply, step limit, context
    budget); ``None`` when it gave one."""
    solved: bool = False
    """Whether the latest trial succeeded."""


@dataclass(kw_only=True)
class OutputState:
    """What a finished run returns to callers."""

    answer: str | None = None
    """The final answer."""
    solved: bool = False
    """Whether the final trial succeeded."""
    trial: int = 0
    """How many trials ran."""
    evaluations: list[TrialRecord] = field(default_factory=list)
    """The per-trial evaluation history (the learning curve)."""
    reflections: list[str] = field(default_factory=list)
    """The reflections window at the end."""


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
    is doubted under ``Context.test_trust="anchored"``."""
    probe_tests: list[str] = field(default_factory=list)
    """Tests only for comparing implementations (``Context.cross_check``; in Python the
    examples with their inputs varied, else written by the model): they never decide a trial,
    only whether two implementations behave alike."""
    witnesses: Annotated[list[Witness], operator.add] = field(default_factory=list)
    """The implementations drawn so far to cross-check attempts, in order."""
    compiler_fix: bool = False
    """Whether ``answer`` is the previous attempt with the compiler's suggested fixes applied
    (``Context.compiler_fixes``) rather than the model's sample."""


@dataclass(kw_only=True)
class CodeOutputState(OutputState):
    """What a finished programming run returns."""

    tests: list[str] = field(default_factory=list)
    """The internal unit tests the implementation was checked against."""


@dataclass(kw_only=True)
class HouseholdInputState:
    """What a caller provides to start an ALFWorld thread (the state's ``task`` is filled in
    from the game's initial observation: the room and the goal)."""

    game: str = ""
    """The game: a name from the game set (``Context.games``, by default the bundled
    ``valid_unseen`` games), a unique part of one, or a path to a ``game.tw-pddl`` file."""
    task_id: str | None = None
    """An identifier for results and logs (e.g. the game name)."""


@dataclass(kw_only=True)
class HouseholdState(State, HouseholdInputState):
    """The state of an ALFWorld thread: the Reflexion state plus the game and what each
    trial did in the environment. The environment itself lives outside the state."""

    kind: str = ""
    """The task type (put, clean, heat, cool, examine, puttwo); picks the few-shot examples."""
    commands: list[str] = field(default_factory=list)
    """The environment commands of the current trial, in order (replayed on resume)."""
    episodes: Annotated[list[Episode], operator.add] = field(default_factory=list)
    """One record per finished trial: won (the engine's verdict, for scoring only), turns,
    commands, stop reason and failure class. Never shown to the agent or the evaluator."""


@dataclass(kw_only=True)
class HouseholdOutputState(OutputState):
    """What a finished ALFWorld run returns."""

    game: str = ""
    episodes: list[Episode] = field(default_factory=list)
