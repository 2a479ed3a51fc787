"""Runtime context of the Reflexion graphs (``context_schema``): models and loop settings.

Every field has a default, so a graph runs when a caller passes no context; nodes read it with
:func:`get_context`, which also covers ``runtime.context is None``.
"""

from __future__ import annotations

import warnings
from dataclasses import InitVar, dataclass, field, fields
from functools import cache
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from langgraph.runtime import Runtime

from reflexion.core.errors import ReflexionError
from reflexion.core.models import DEFAULT_MODEL
from reflexion.core.presets import PRESET_HELP, Preset, accepting_presets
from reflexion.core.selection import AnswerChoice

Strategy = Literal["none", "last_attempt", "reflexion", "last_attempt_and_reflexion"]
EvaluatorKind = Literal["exact_match", "llm", "heuristic"]
WikiKind = Literal["offline", "live"]
LessonFilter = Literal["validated", "all"]
LESSON_FILTERS: tuple[LessonFilter, ...] = ("validated", "all")
TestTrust = Literal["all", "anchored"]
CodeRetry = Literal["repair", "fresh", "auto", "resample"]
HouseholdMemory = Literal["reflection", "facts", "leads", "sightings"]
MemoryPlace = Literal["task", "system", "think"]
TurnSeeds = Literal["turn", "process"]
RetrySeeds = Literal["retry", "process"]
AnswerRetry = Literal["fresh_first", "memory", "resample"]

_MODEL_HELP = (
    "A provider:model string: local:qwen2.5-coder-0.5b, local:smollm2-135m, "
    "local:qwen2.5-coder-1.5b, local:/path/model.gguf, or e.g. openai:gpt-4o-mini."
)


@accepting_presets  # Context(preset="paper", ...): reflexion.core.presets
@dataclass(kw_only=True)
class Context:
    """Settings of one Reflexion run."""

    actor_model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default=DEFAULT_MODEL,
        metadata={"description": "Model of the actor (M_a). " + _MODEL_HELP},
    )
    evaluator_model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default=DEFAULT_MODEL,
        metadata={"description": "Model of the LLM evaluator (M_e). " + _MODEL_HELP},
    )
    reflector_model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default=DEFAULT_MODEL,
        metadata={"description": "Model of the self-reflector (M_sr). " + _MODEL_HELP},
    )
    base_url: str | None = field(
        default=None,
        metadata={"description": "Base URL of an OpenAI-compatible server for openai:* models."},
    )
    max_trials: int = field(
        default=3,
        metadata={"description": "Most trials per task; the loop also stops on success."},
    )
    memory_size: int = field(
        default=3,
        metadata={
            "description": "Ω: how many of the latest reflections the actor sees (0 = none)."
        },
    )
    strategy: Strategy = field(
        default="reflexion",
        metadata={
            "description": "What carries over between trials: none, last_attempt (previous "
            "trajectory), reflexion (last Ω reflections), or last_attempt_and_reflexion."
        },
    )
    evaluator: EvaluatorKind = field(
        default="exact_match",
        metadata={
            "description": "exact_match (QA; needs the reference answer), llm (a judge model) "
            "or heuristic (ALFWorld: reflect after repeated actions or too many actions). "
            "ALFWorld uses the heuristic unless llm is chosen."
        },
    )
    judge_mode: Literal["binary", "score"] = field(
        default="binary",
        metadata={
            "description": "LLM judge: a yes/no verdict, or a score compared with the threshold."
        },
    )
    judge_threshold: float = field(
        default=0.5,
        metadata={"description": "LLM judge in score mode: success when score >= threshold."},
    )
    temperature: float = field(
        default=0.7,
        metadata={"description": "Sampling temperature of the actor (the paper uses 0.7)."},
    )
    max_tokens: int = field(
        default=384,
        metadata={"description": "Most tokens per model reply."},
    )
    max_steps: int = field(
        default=6,
        metadata={
            "description": "ReAct: most Thought/Action steps per trial; a trial that reaches "
            "it without Finish[answer] fails (halted)."
        },
    )
    context_budget: int = field(
        default=6000,
        metadata={
            "description": "ReAct: most prompt tokens per step; a trial whose prompt grows past "
            "it fails (halted), like the paper's context-window limit."
        },
    )
    wiki: WikiKind = field(
        default="offline",
        metadata={
            "description": "ReAct's Wikipedia: offline (a local corpus, no network) or live "
            "(wikipedia.org through the wikipedia package)."
        },
    )
    corpus: str | None = field(
        default=None,
        metadata={
            "description": "Offline Wikipedia: a HotPotQA-format JSONL file whose context "
            "paragraphs form the corpus (default: the bundled 100-question sample)."
        },
    )

    correct_rejected: bool = field(
        default=True,
        metadata={
            "description": "Chain-of-thought question answering: when a retry's answer is "
            "still one already judged incorrect after the redraws, one more turn tells the "
            "model so and asks for a different answer (under every strategy that keeps "
            "memory). Off: the repeat stands (the paper)."
        },
    )
    answer_retry: AnswerRetry = field(
        default="fresh_first",
        metadata={
            "description": "Chain-of-thought retries under a strategy with memory: "
            "fresh_first: the retry is first drawn from trial 1's prompt, as the none "
            "baseline draws it (the same seed under qa_seeds=retry), and kept unless its "
            "answer was already judged incorrect; only then is it drawn with the memory in "
            "the prompt (with the redraws and the correcting turn). memory: every draw has "
            "the memory in the prompt (the paper). resample (the equal-budget baseline, "
            "under any strategy): every draw is from trial 1's prompt, with no memory; one "
            "whose answer was already judged incorrect is drawn again at temperature 0.8, as "
            "often as a fresh-first retry may draw after its fresh draw (1 + "
            "redraw_rejected, + 1 with correct_rejected)."
        },
    )
    qa_seeds: RetrySeeds = field(
        default="retry",
        metadata={
            "description": "Chain-of-thought actor, on models that take a seed (the embedded "
            "and OpenAI ones; a served model may ignore it): retry: each draw of a retry is "
            "seeded by the question, the trial and the draw, so a rerun draws the same and "
            "strategies that fork the same trial 1 draw alike where their prompts agree; "
            "process: one counter per process (the first trial always draws this way)."
        },
    )
    memory_first: bool = field(
        default=True,
        metadata={
            "description": "Question answering: the memory (last attempt, reflections, "
            "rejected answers) goes before the context and the question, as in the paper's "
            "prompts, so the question is what the model reads last. Off: after the question "
            "(the prompt up to the question then stays the same across trials)."
        },
    )
    reflection_examples: bool = field(
        default=True,
        metadata={
            "description": "The reflector's prompt shows the worked reflections of its prompt "
            "file as turns (the paper). Off: the instructions and the failed trial only, so a "
            "small model has no wording to copy."
        },
    )
    show_rejected: bool = field(
        default=False,
        metadata={
            "description": "Question answering: the memory also lists the answers of earlier "
            "trials that the evaluator judged incorrect, asking for a different one (under "
            "every strategy that keeps memory; none keeps nothing). Off: the paper's memory."
        },
    )
    redraw_rejected: int = field(
        default=2,
        metadata={
            "description": "Question answering (CoT and ReAct): when a retry gives an answer "
            "the evaluator already judged incorrect, sample again at temperature 0.8 up to "
            "this many times (under every strategy that keeps memory; none keeps nothing); "
            "0 = keep the repeat (the paper)."
        },
    )
    redraw_steps: int = field(
        default=2,
        metadata={
            "description": "ReAct: when a step repeats a search this trial already made (a "
            "page already read, or a title already not found), sample the step again at "
            "temperature 0.8 up to this many times (under every strategy); 0 = keep the "
            "repeat (the paper)."
        },
    )
    select_answer: AnswerChoice = field(
        default="best",
        metadata={
            "description": "Which attempt the thread returns: best (a successful trial, else "
            "the highest evaluator score, the earliest among equals: never worse on the "
            "evaluator's evidence than the first attempt) or last (the paper)."
        },
    )

    max_tests: int = field(
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
        default="anchored",
        metadata={
            "description": "Programming: which internal tests decide. anchored: the trusted "
            "tests (the prompt's examples, tests given in the input) decide alone when there "
            "are any, and then no tests are written; otherwise self-written tests decide, "
            "less any that every attempt so far has failed. all: every internal test decides "
            "(the paper)."
        },
    )
    resample_repeats: int = field(
        default=2,
        metadata={
            "description": "Programming: when a retry gives back code it already tried (a "
            "small model at T = 0 often copies its previous attempt), sample again at "
            "temperature 0.8 up to this many times; 0 = keep the repeat (the paper)."
        },
    )
    code_retry: CodeRetry = field(
        default="fresh",
        metadata={
            "description": "Programming: what a retry starts from. fresh: the task, the "
            "failed tests and the reflections, without the previous code, sampled at "
            "temperature 0.8 (a small model otherwise edits its wrong code in place). "
            "repair: the previous implementation, its test results and the reflections "
            "(the paper). auto: repair when the previous implementation did not compile "
            "(the compiler's errors point into that code), fresh otherwise. resample: the "
            "first trial's prompt again, at temperature 0.8, with no feedback and no "
            "reflection (best-of-n by the evaluator: the equal-budget baseline)."
        },
    )
    compiler_fixes: bool = field(
        default=True,
        metadata={
            "description": "Rust: when an attempt does not compile and rustc suggests fixes "
            "for its errors (those it marks machine-applicable or maybe-incorrect: a "
            "conversion, a borrow, a missing mut), the next attempt is that code with the "
            "fixes applied, round after round until it compiles, with no model call; when "
            "they do not make it compile, the retry is the model's as usual. false = off "
            "(the paper)."
        },
    )
    code_seeds: RetrySeeds = field(
        default="retry",
        metadata={
            "description": "Programming actor, on models that take a seed (the embedded and "
            "OpenAI ones; a served model may ignore it): retry: each draw of a retry is seeded "
            "by the problem, the trial and the draw, so a rerun draws the same and variants "
            "that fork the same first attempt draw alike until their prompts differ; "
            "process: one counter per process (the first attempt always draws this way)."
        },
    )
    cross_check: int = field(
        default=0,
        metadata={
            "description": "Programming, where trusted tests decide (test_trust=anchored): "
            "when an attempt passes them, draw up to this many independent implementations "
            "(temperature 0.8, the first trial's prompt) and run every one on probe tests "
            "(Python: the examples with their inputs varied; Rust: written by the model), "
            "comparing behaviour, not the probes' expected values. An attempt that two "
            "or more agreeing implementations outnumber is no success, and its retry is told "
            "where they differ. Where only self-written tests decide (no trusted test): "
            "when an attempt fails some, draw up to this many independent implementations "
            "once per problem and run them on those tests; a failed test then counts only "
            "when more of them pass it than fail it as the attempt does (CodeT's agreement "
            "between code and tests). 0 = off (the paper)."
        },
    )
    test_timeout: float = field(
        default=5.0,
        metadata={"description": "Programming: seconds each unit test may run in the sandbox."},
    )

    games: str | None = field(
        default=None,
        metadata={
            "description": "ALFWorld: a directory of game.tw-pddl files, or a packed game set "
            "(default: the bundled 134 valid_unseen games)."
        },
    )
    alfworld_steps: int = field(
        default=30,
        metadata={
            "description": "ALFWorld: most turns (thoughts and commands) per trial; a trial "
            "that reaches it unsolved fails (the paper's results use 30)."
        },
    )
    heuristic_repeats: int = field(
        default=3,
        metadata={
            "description": "ALFWorld heuristic evaluator: reflect when the same command gives "
            "the same observation more than this many times."
        },
    )
    heuristic_max_actions: int = field(
        default=30,
        metadata={
            "description": "ALFWorld heuristic evaluator: reflect after more than this many "
            "commands in a trial (inefficient planning)."
        },
    )
    alfworld_diagnosis: bool = field(
        default=True,
        metadata={
            "description": "ALFWorld: the reflector's feedback also says, from the trial's own "
            "turns, where the goal's objects were seen (or which receptacles were searched in "
            "vain) and why each refused command ('Nothing happens.') was refused: not at that "
            "receptacle, not holding that object, hands full, closed, not seen there, the "
            "wrong form or tool, no such command. Off: the paper's feedback only."
        },
    )
    alfworld_explain: bool = field(
        default=True,
        metadata={
            "description": "ALFWorld actor: a refused command's 'Nothing happens.' is followed "
            "by the likeliest reason, worked out from the trial's own turns as the diagnosis "
            "does ('Likely because you were already there.'); the game's text is unchanged "
            "when the turns show no reason. Off: the game's reply only (the paper)."
        },
    )
    alfworld_memory: HouseholdMemory = field(
        default="sightings",
        metadata={
            "description": "ALFWorld, strategies with reflections: what a failed trial adds to "
            "the Ω window. sightings (no model call): each of the goal's objects the trial saw, "
            "with the go to that reaches it, and no entry when it saw none, so the next prompt "
            "stays as it was; reflection: the reflector model's reflection (the paper); facts "
            "(no model call): where the goal's objects were seen or searched for in vain, the "
            "refused commands and why; leads (no model call): the sightings, else the places "
            "not looked into, quoting no refused command."
        },
    )
    alfworld_memory_place: MemoryPlace = field(
        default="task",
        metadata={
            "description": "ALFWorld: where the actor reads the memory: after the task, before "
            "the trial's turns (the paper); system: at the end of the system message, away "
            "from the task and the few-shot games it follows; or think: the Ω window as the "
            "trial's first think step, in the actor's own format, the task message as in "
            "trial 1."
        },
    )

    alfworld_seeds: TurnSeeds = field(
        default="turn",
        metadata={
            "description": "ALFWorld actor, on models that take a seed (the embedded and OpenAI "
            "ones; a served model may ignore it): "
            "turn: each turn's sampling seed is named by the game, the trial and the turn, so "
            "a rerun draws the same, and strategies that fork the same trial 1 draw alike "
            "until their prompts differ (a trial whose memory is empty then replays the "
            "baseline's); process: one counter per process, so a run's draws depend on what "
            "ran before it in that process."
        },
    )

    max_retries: int = field(
        default=3,
        metadata={
            "description": "Hosted or served models (not local:): how many times a call that "
            "times out, is rate-limited (429), fails with a server error (5xx) or returns an "
            "empty message is tried again, with exponential backoff; 0 = no retry. When the "
            "tries run out the task is recorded as an error and the benchmark goes on."
        },
    )
    request_timeout: float = field(
        default=120.0,
        metadata={
            "description": "Hosted or served models: seconds one request may take before it "
            "counts as timed out (and is retried)."
        },
    )
    retry_backoff: float = field(
        default=1.0,
        metadata={
            "description": "Hosted or served models: seconds to wait before the first retry; "
            "the wait doubles on each later retry (plus random jitter of up to as much), at "
            "most 30 s."
        },
    )

    review_reflections: bool = field(
        default=False,
        metadata={
            "description": "Human review: pause after each new reflection with a LangGraph "
            "interrupt so a person can read and edit it, then resume with "
            "Command(resume=...): '' or {'action': 'accept'} keeps it, a string or "
            "{'reflection': text} replaces it, {'action': 'drop'} removes it."
        },
    )
    lessons: bool = field(
        default=False,
        metadata={
            "description": "Long-term lessons: recall lessons from other threads' reflections "
            "(of the same task family) on the first trial, and save this thread's reflections "
            "to the store. Needs a store (compile(store=...) or a LangGraph server's)."
        },
    )
    recall_k: int = field(
        default=3,
        metadata={"description": "Lessons: how many past lessons a new thread recalls (BM25)."},
    )
    lesson_filter: LessonFilter = field(
        default="validated",
        metadata={
            "description": "Lessons: which ones are recalled. validated: recall only lessons "
            "after which their own thread's next trial succeeded — evidence they helped; all: "
            "every reflection."
        },
    )
    task_family: str | None = field(
        default=None,
        metadata={
            "description": "Lessons: the namespace lessons are shared in (default: the graph's "
            "own, e.g. qa, react, programming-py, alfworld-heat)."
        },
    )

    preset: InitVar[Preset | None] = field(default=None, metadata={"description": PRESET_HELP})

    @classmethod
    def paper(cls, **overrides: Any) -> Context:
        """The paper's loop: every addition off (the ``paper`` preset), ``overrides`` over it."""
        return cls(preset="paper", **overrides)

    def __post_init__(self, preset: Preset | None) -> None:
        for name, kinds in _scalar_types().items():
            value = getattr(self, name)
            if not _is_kind(value, kinds):
                wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
                raise ReflexionError(f"{name} is {value!r}: give a value of type {wanted}")
        for name, allowed in _choices().items():
            value = getattr(self, name)
            if value not in allowed:
                raise ReflexionError(
                    f"{name} is {value!r}: use one of {', '.join(map(str, allowed))}"
                )
        if self.max_trials < 1:
            raise ReflexionError(f"max_trials is {self.max_trials}: use 1 or more")
        if self.memory_size < 0:
            raise ReflexionError(f"memory_size (Ω) is {self.memory_size}: use 0 or more")
        if not 0.0 <= self.temperature <= 2.0:
            raise ReflexionError(f"temperature is {self.temperature}: use a value in [0, 2]")
        if self.max_steps < 1:
            raise ReflexionError(f"max_steps is {self.max_steps}: use 1 or more")
        if self.context_budget < 256:
            raise ReflexionError(f"context_budget is {self.context_budget} tokens: use 256 or more")
        if self.alfworld_steps < 1:
            raise ReflexionError(f"alfworld_steps is {self.alfworld_steps}: use 1 or more")
        if self.heuristic_repeats < 1 or self.heuristic_max_actions < 1:
            raise ReflexionError(
                "heuristic_repeats and heuristic_max_actions must be 1 or more: got "
                f"{self.heuristic_repeats} and {self.heuristic_max_actions}"
            )
        if self.max_tests < 1:
            raise ReflexionError(f"max_tests is {self.max_tests}: use 1 or more")
        for name in ("resample_repeats", "redraw_rejected", "redraw_steps", "cross_check"):
            if not 0 <= (count := getattr(self, name)) <= 10:
                raise ReflexionError(f"{name} is {count}: use a value in [0, 10]")
        if self.test_timeout <= 0:
            raise ReflexionError(f"test_timeout is {self.test_timeout}: use a positive number")
        if not 0.0 <= self.judge_threshold <= 1.0:
            raise ReflexionError(
                f"judge_threshold is {self.judge_threshold}: use a value in [0, 1]"
            )
        if not 0 <= self.max_retries <= 20:
            raise ReflexionError(f"max_retries is {self.max_retries}: use a value in [0, 20]")
        if self.request_timeout <= 0:
            raise ReflexionError(
                f"request_timeout is {self.request_timeout}: use a positive number of seconds"
            )
        if self.retry_backoff < 0:
            raise ReflexionError(f"retry_backoff is {self.retry_backoff}: use 0 or more seconds")
        if not 0 <= self.recall_k <= 50:
            raise ReflexionError(f"recall_k is {self.recall_k}: use a value in [0, 50]")
        if self.task_family is not None and (
            not self.task_family.strip() or "." in self.task_family
        ):
            raise ReflexionError(
                f"task_family is '{self.task_family}': give a non-empty name without dots, "
                "or leave it unset"
            )

    @property
    def uses_reflections(self) -> bool:
        return self.strategy in ("reflexion", "last_attempt_and_reflexion")

    @property
    def uses_last_attempt(self) -> bool:
        return self.strategy in ("last_attempt", "last_attempt_and_reflexion")


@cache
def _choices() -> dict[str, tuple[object, ...]]:
    """Every ``Context`` field typed as a ``Literal``, with its allowed values: checked once,
    from the type, so a new choice field cannot be left unchecked."""
    hints = get_type_hints(Context)
    return {
        f.name: get_args(hints[f.name])
        for f in fields(Context)
        if get_origin(hints[f.name]) is Literal
    }


@cache
def _scalar_types() -> dict[str, tuple[type, ...]]:
    """Every ``Context`` field typed as plain ``int``, ``float``, ``bool`` or ``str`` (or one of
    them or None), with the types it accepts: a server's JSON context or an embedding app can
    hand over a string where a number belongs, and that should read as a clear error."""
    plain = (int, float, bool, str, type(None))
    found = {}
    for f in fields(Context):
        hint = get_type_hints(Context)[f.name]
        if get_origin(hint) is Annotated:
            hint = get_args(hint)[0]
        kinds = get_args(hint) if get_origin(hint) in (UnionType, Union) else (hint,)
        if all(k in plain for k in kinds):
            found[f.name] = tuple(kinds)
    return found


def _is_kind(value: object, kinds: tuple[type, ...]) -> bool:
    """``isinstance`` as a context field means it: a bool is not a number, an int is a float."""
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return any(isinstance(value, k) for k in kinds if k is not bool)


def context_from(values: dict[str, Any]) -> Context:
    """A context from a plain mapping of its fields (a caller's, an older server's, or one
    recorded with a thread); a key that is not a field is ignored with a warning; ``"preset"``
    starts from that preset (``{"preset": "paper"}``), the other keys over it."""
    names = {f.name for f in fields(Context)} | {"preset"}
    unknown = sorted(str(k) for k in values if k not in names)
    if unknown:
        warnings.warn(
            f"context key(s) {', '.join(unknown)} are not Context fields and are ignored "
            "(check the spelling; the README's configuration table lists the fields)",
            UserWarning,
            stacklevel=3,
        )
    return Context(**{k: v for k, v in values.items() if k in names})


def get_context(runtime: Runtime[Context] | None) -> Context:
    """The run's context, or the defaults when the caller passed none."""
    ctx = runtime.context if runtime is not None else None
    if ctx is None:
        return Context()
    if isinstance(ctx, Context):
        return ctx
    if isinstance(ctx, dict):  # some callers (and older servers) hand over a plain mapping
        return context_from(ctx)
    # A parent graph with a context schema of its own hands its context object down to our
    # graph used as a subgraph: take the fields the two share, defaults for the rest.
    names = {f.name for f in fields(Context)}
    return Context(**{k: getattr(ctx, k) for k in names if hasattr(ctx, k)})
