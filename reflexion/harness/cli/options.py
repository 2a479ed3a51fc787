"""The options the commands share, and the checks of option values that Typer cannot make."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args

import typer

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context, RetrySeeds, Strategy
from reflexion.core.errors import ReflexionError
from reflexion.core.presets import PRESET_NAMES, preset_values
from reflexion.harness.agents import AGENTS
from reflexion.programming.context import REPAIRING, CodeContext
from reflexion.qa.context import QAContext, ReActContext

DEFAULT_DB = str(Path(".reflexion") / "checkpoints.sqlite")
DEFAULTS = Context()
QA_DEFAULTS = QAContext()
REACT_DEFAULTS = ReActContext()
CODE_DEFAULTS = CodeContext()
ALFWORLD_DEFAULTS = AlfworldContext()
C = TypeVar("C", bound=Context)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
QUESTION_AGENTS = tuple(name for name, agent in AGENTS.items() if agent.answers_questions)
"""The agents ``reflexion run`` and ``reflexion bench hotpotqa`` take."""
INFORMED: tuple[str, ...] = ("informed_once", "informed")
"""The ``--retry`` policies of a loop that reflects (:func:`informed_retry`)."""

# ---- shared options ------------------------------------------------------------------------


def count_option(*names: str, help: str, min: int = 1, max: int | None = None) -> Any:
    """A whole-number option shown as ``N`` in the help, at least ``min`` (and at most ``max``):
    for the counts the commands take (trials, Ω, steps, tasks…)."""
    return typer.Option(*names, metavar="N", min=min, max=max, help=help)


def word_option(name: str, metavar: str, help: str) -> Any:
    """An option taking one of a few words, shown as ``metavar`` (``<mode>``) in the help so
    the help reads at 80 columns; the help lists the words."""
    return typer.Option(name, metavar=metavar, help=help)


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        show_default=False,
        help="provider:model for actor, evaluator and reflector (default: the embedded 0.5B "
        "model; `reflexion models` lists the local presets; hosted: e.g. openai:gpt-4o-mini).",
    ),
]
TrialsOpt = Annotated[int, count_option("--trials", "-t", help="Most trials per task.")]
AgentTrialsOpt = Annotated[
    int | None,
    count_option(
        "--trials",
        "-t",
        help="Most trials per task (default: the agent's graph's: CoT 2, ReAct 3).",
    ),
]
MemoryOpt = Annotated[
    int, count_option("--memory", "-k", min=0, help="Ω: reflections kept in memory (0 = none).")
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy", help="none | last_attempt | reflexion | last_attempt_and_reflexion."
    ),
]
EvaluatorOpt = Annotated[str, typer.Option("--evaluator", help="exact_match | llm | agreement.")]
TempOpt = Annotated[
    float,
    typer.Option("--temperature", metavar="T", help="Actor sampling temperature."),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible server for openai:* models (with --server, set "
        "REFLEXION_BASE_URL where the server runs).",
    ),
]
WikiOpt = Annotated[
    str, typer.Option("--wiki", help="react: offline (local corpus) | live (wikipedia.org).")
]
CorpusOpt = Annotated[
    str | None,
    typer.Option(
        "--corpus", help="react with --wiki offline: HotPotQA JSONL whose paragraphs are searched."
    ),
]
StepsOpt = Annotated[
    int, count_option("--max-steps", help="react: most steps per trial (halts after).")
]
DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        show_default=False,
        help="Where threads are kept: a SQLite file (default: checkpoints.sqlite in "
        ".reflexion/), a postgresql:// connection string (postgres extra), or :memory: to "
        "keep them in this process only.",
    ),
]
ThreadOpt = Annotated[
    str | None, typer.Option("--thread-id", help="Thread to start, resume or inspect.")
]
RetryOpt = Annotated[
    str,
    word_option(
        "--retry",
        "<policy>",
        help="The loop's retries: informed_once (the first retry reads the failed trial's "
        "evidence and the reflection, later ones are blind redraws) or informed (every retry "
        "reads them: the paper). One attempt and blind redraws are the simple/none and "
        "resample runs.",
    ),
]
AgentRetryOpt = Annotated[
    str | None,
    word_option(
        "--retry",
        "<policy>",
        help="Retries with memory: informed_once (CoT's default: the one informed retry is "
        "drawn first without the memory, which speaks when that repeats a rejected answer; "
        "later retries are blind redraws) or informed (every retry reads the memory: the "
        "paper, and ReAct's default).",
    ),
]
"""``--retry`` of the question-answering commands: unset, each agent's graph's default."""
RepeatGuardOpt = Annotated[
    int,
    count_option(
        "--repeat-guard",
        min=0,
        max=10,
        help="Redraws (at T = 0.8) of an attempt that repeats one already rejected (an "
        "answer, code, a ReAct search, a command ALFWorld refused); 0 keeps the repeat (the "
        "paper).",
    ),
]
SeedsOpt = Annotated[
    RetrySeeds,
    word_option(
        "--seeds",
        "<seeds>",
        help="retry (each retry's draws seeded by the task, trial and draw; ALFWorld: each "
        "turn: a rerun draws the same) or process (one counter per process).",
    ),
]
RoleModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--role-model",
        metavar="ROLE=M",
        show_default=False,
        help="A role's own provider:model (M) instead of --model: reflector=M or evaluator=M "
        "(the LLM judge, or the programming test writer); repeat for both.",
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="Run every task on this LangGraph server (e.g. http://127.0.0.1:2024 from "
        "`langgraph dev`, or a deployment) through langgraph-sdk; its queue spreads the runs "
        "over its workers and it loads the models itself. The threads live on the server, so "
        "--db is not used.",
    ),
]

PairedOpt = Annotated[
    bool,
    typer.Option(
        "--paired/--unpaired",
        help="paired: each task's first trial runs once and every run that differs only "
        "after it (strategy, Ω, trials, resampling, answer choice) continues from that same "
        "checkpoint, a fork of the thread, so runs differ by what follows trial 1 alone; "
        "unpaired: each run samples its own first trial (needed with --server).",
    ),
]


ConcurrencyOpt = Annotated[int, count_option("--concurrency", "-c", help="Tasks run at once.")]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Results JSONL (appended; enables resume; one strategy only)."
    ),
]
OffsetOpt = Annotated[int, count_option("--offset", min=0, help="Skip this many tasks first.")]
PresetOpt = Annotated[
    str,
    word_option(
        "--preset",
        "<name>",
        help="Settings to start from: default (the paper's loop plus the additions chosen "
        "for small models) or paper (every addition "
        "off: the paper's loop); options given win.",
    ),
]


def _same(value: Any) -> Any:
    return value


def _negated(value: Any) -> bool:
    return not value


def _repairs(strategy: Any) -> bool:
    return strategy in REPAIRING


PRESET_OPTIONS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "retry": ("retry", _same),
    "repeat_guard": ("repeat_guard", _same),
    "repair": ("strategy", _repairs),
    "select": ("select_answer", _same),
    "internal_tests": ("internal_tests", _same),
    "no_compiler_fixes": ("compiler_fixes", _negated),
    "no_explain": ("alfworld_explain", _negated),
    "memory_entry": ("alfworld_memory", _same),
}
"""The command parameters that set a Context field a preset may set: the field, and the
option's value for a value of the field (``--no-compiler-fixes`` is ``compiler_fixes`` False;
``--repair`` is a programming strategy that carries the last attempt)."""

PRESET_SCHEMAS: tuple[type[Context], ...] = (QAContext, ReActContext, CodeContext, AlfworldContext)
"""The contexts of the graphs a command runs, whose presets ``--preset`` applies."""

PresetFields = dict[type[Context], dict[str, Any]]
"""A preset's fields that no option of a command sets, by context class."""


def paired_locally(cli: typer.Context, paired_runs: bool, server: str | None) -> bool:
    """Whether to fork threads: paired runs need the local checkpointer."""
    if server is None or not paired_runs:
        return paired_runs
    if given(cli, "paired_runs"):
        raise ReflexionError("--paired forks threads locally: use --unpaired with --server")
    return False


def preset_options(cli: typer.Context | None, values: dict[str, Any], preset: str) -> PresetFields:
    """``--preset``: each of a command's option ``values`` that sets a field of the preset and
    was not given takes the preset's value (in place, so what the command prints and names
    its runs by says so); returns each context's other preset fields, for
    :func:`with_preset`."""
    name = choice(preset, PRESET_NAMES, "--preset")
    by_schema = {schema: preset_values(name, schema, "--preset") for schema in PRESET_SCHEMAS}
    every = {k: v for own in by_schema.values() for k, v in own.items()}
    set_by_options: set[str] = set()
    for option, (field_name, as_option) in PRESET_OPTIONS.items():
        if option not in values or field_name not in every:
            continue
        set_by_options.add(field_name)
        if not given(cli, option):
            values[option] = as_option(every[field_name])
    return {
        schema: {k: v for k, v in own.items() if k not in set_by_options}
        for schema, own in by_schema.items()
    }


def with_preset(ctx: C, preset: PresetFields) -> C:
    """``ctx`` with its own class's ``preset`` fields (those no option of the command sets)
    where it holds the default: a value the command chose on purpose (``resample``'s retry)
    is kept, and a field another family's preset sets (programming's strategy) is not."""
    own = next((preset[k] for k in type(ctx).__mro__ if k in preset), {})
    defaults = type(ctx)()
    chosen = {
        k: v for k, v in own.items() if hasattr(ctx, k) and getattr(ctx, k) == getattr(defaults, k)
    }
    return replace(ctx, **chosen) if chosen else ctx


def set_fields(ctx: C, **values: Any) -> C:
    """``ctx`` with those of ``values`` that are fields of its graph's context: a command's
    option that its chosen agent does not read (ReAct's step redraws for a chain-of-thought
    run) is left out, as the agent would ignore it."""
    names = {f.name for f in dataclass_fields(ctx)}
    return replace(ctx, **{k: v for k, v in values.items() if k in names})


def informed_retry(retry: str) -> str:
    """``--retry``: one of the informed policies (one attempt and blind redraws are runs of
    their own)."""
    return choice(retry, INFORMED, "--retry")


def choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise ReflexionError(f"{option} '{value}' is not one of: {', '.join(allowed)}")
    return value


def check_offset(selected: list[Any], offset: int, unit: str) -> None:
    if not selected:
        raise ReflexionError(
            f"--offset {offset} skips every one of the dataset's {unit}: use a smaller --offset"
        )


def given(cli: typer.Context | None, name: str) -> bool:
    """Whether the user set an option (not left to its default); True without a CLI context."""
    source = cli.get_parameter_source(name) if cli is not None else None
    return source is None or source.name not in ("DEFAULT", "DEFAULT_MAP")


def check_memory(
    memory: int, trials: int, trials_option: str = "--trials", *, given: bool = True
) -> None:
    """An Ω the user set larger than the trials is a mistake (a run writes at most trials - 1
    reflections). A default Ω is left alone: it need not fit a --trials the user lowered."""
    if given and memory > trials:
        raise ReflexionError(
            f"Ω (--memory {memory}) is larger than {trials_option} {trials}: a run of {trials} "
            f"trial(s) writes at most {trials - 1} reflection(s); pass --memory {trials} or "
            f"less, or raise {trials_option}"
        )
