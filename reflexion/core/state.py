"""Graph state of the Reflexion loop: what callers send, what the loop keeps, what it returns.

One *trial* is one attempt by the actor. The *trajectory* is the short-term memory of the
current trial only (the actor resets it); the *reflections* window is the long-term memory,
holding at most Ω lessons (``Context.memory_size``); ``evaluations`` keeps one record per trial
so a learning curve can be drawn from the state alone.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

from reflexion.core.budget import Spent, StopReason, add_spent


class TrialRecord(TypedDict):
    """The evaluator's verdict on one trial. A family's evaluator may add keys of its own
    (programming's :class:`~reflexion.programming.state.CodeTrialRecord`)."""

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
    ties: NotRequired[int]
    """An earlier trial whose answer the evidence cannot tell from this one (in programming:
    it passes every test that counts here too): under ``select_answer="best"`` the earlier
    one stands."""
    last: NotRequired[bool]
    """Set when another trial could learn nothing more (e.g. no tests to run): the thread
    stops after this trial, solved or not."""


@dataclass(kw_only=True)
class TrialInput:
    """What an actor subgraph (ReAct, ALFWorld) reads from the Reflexion state at the start of
    a trial: the task, the trial number, the last trajectory, the reflections and the earlier
    trials' verdicts."""

    task: str = ""
    trial: int = 0
    previous_trajectory: list[str] = field(default_factory=list)
    reflections: list[str] = field(default_factory=list)
    evaluations: list[TrialRecord] = field(default_factory=list)


@dataclass(kw_only=True)
class InputState:
    """What a caller provides to start a thread. Each field's ``description`` (with an example)
    is what LangGraph Studio shows beside its box."""

    task: Annotated[
        str,
        Field(
            description="The question or instruction to attempt. Example: Which river flows "
            "through Prague? (The ReAct graph searches, by default, an offline corpus built from "
            "the bundled HotPotQA sample: ask it one of the sample's questions, such as: The "
            'creator of "Wallace and Gromit" also created what animation comedy that matched '
            "animated zoo animals with a soundtrack of people talking about their homes?)",
            examples=["Which river flows through Prague?"],
        ),
    ] = ""
    """The question or instruction given to the actor."""
    passages: Annotated[
        str,
        Field(
            description="Text the actor may read to answer, such as the paragraphs that hold "
            "the answer; may be empty. Example: Prague, the capital of the Czech Republic, lies "
            "on the Vltava.",
            examples=["Prague, the capital of the Czech Republic, lies on the Vltava."],
        ),
    ] = ""
    """Supporting text shown to the actor (e.g. HotPotQA's gold paragraphs); may be empty."""
    reference: Annotated[
        str | None,
        Field(
            description="The right answer, if you know it: exact match checks an attempt "
            "against it, and no prompt shows it. Left empty, the generic graph asks the LLM "
            "judge (a model that says whether the answer is right). Example: Vltava",
            examples=["Vltava"],
        ),
    ] = None
    """The gold answer, used by the exact-match evaluator and never shown to the actor or
    reflector. ``None`` when the evaluator needs none (an LLM judge)."""
    task_id: Annotated[
        str | None,
        Field(
            description="A name for the task in results and logs (optional). Example: task-1",
            examples=["task-1"],
        ),
    ] = None
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
    spent: Annotated[Spent, add_spent] = field(default_factory=lambda: Spent())
    """What the thread's nodes have spent so far: tokens, model calls, cost, running time
    (:mod:`reflexion.core.budget`); each node adds its own."""
    stopped: StopReason | None = None
    """Why the thread ended (:data:`~reflexion.core.budget.StopReason`); ``None`` until it
    has."""


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
    stopped: StopReason | None = None
    """Why the thread ended: ``solved``, ``nothing_to_learn``, ``max_trials``,
    ``token_budget``, ``cost_budget``, ``time_budget`` or ``plateau``
    (:data:`~reflexion.core.budget.StopReason`)."""
    spent: Spent = field(default_factory=lambda: Spent())
    """What the thread spent: ``prompt_tokens``, ``completion_tokens``, ``calls``, ``cost``
    (US dollars) and ``seconds`` (its nodes' running time)."""
