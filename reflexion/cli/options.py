"""The options the commands share, and the checks of option values that Typer cannot make."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from reflexion.core.context import AnswerRetry, Context, RetrySeeds
from reflexion.core.errors import ReflexionError

DEFAULT_DB = str(Path(".reflexion") / "checkpoints.sqlite")
DEFAULTS = Context()
STRATEGIES = ("none", "last_attempt", "reflexion", "last_attempt_and_reflexion")

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
MemoryOpt = Annotated[
    int, count_option("--memory", "-k", min=0, help="Ω: reflections kept in memory (0 = none).")
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy", help="none | last_attempt | reflexion | last_attempt_and_reflexion."
    ),
]
EvaluatorOpt = Annotated[str, typer.Option("--evaluator", help="exact_match | llm.")]
TempOpt = Annotated[
    float,
    typer.Option("--temperature", metavar="T", help="Actor sampling temperature."),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible server for openai:* models."),
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
LessonsOpt = Annotated[
    bool,
    typer.Option(
        "--lessons",
        help="Long-term lessons: recall the most relevant reflections of earlier threads of the "
        "same task family (BM25) and save this run's, in a store on the --db target.",
    ),
]
RecallOpt = Annotated[
    int,
    count_option(
        "--recall-k", min=0, max=50, help="With --lessons: past lessons recalled per task."
    ),
]
AnswerRetryOpt = Annotated[
    AnswerRetry,
    word_option(
        "--answer-retry",
        "<how>",
        help="CoT agents with memory: fresh_first (a retry is first drawn as none draws it; "
        "the memory speaks when that repeats a rejected answer) or memory (every draw with "
        "the memory, the paper).",
    ),
]
QaSeedsOpt = Annotated[
    RetrySeeds,
    word_option(
        "--seeds",
        "<seeds>",
        help="CoT agents: retry (each retry's draws seeded by the question, trial and draw: a "
        "rerun draws the same) or process (one counter per process).",
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
ReflectOpt = Annotated[
    str,
    typer.Option(
        "--reflect",
        metavar="worked|bare",
        help="The reflector's prompt: worked (the paper's worked reflections as turns) or bare "
        "(instructions and the failed trial only: no wording to copy).",
    ),
]
LessonFilterOpt = Annotated[
    str,
    typer.Option(
        "--lesson-filter",
        help="With --lessons: validated (default) recalls only lessons after which their own "
        "thread's next trial succeeded; all recalls every reflection.",
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


def paired_locally(cli: typer.Context, paired_runs: bool, server: str | None) -> bool:
    """Whether to fork threads: paired runs need the local checkpointer."""
    if server is None or not paired_runs:
        return paired_runs
    if given(cli, "paired_runs"):
        raise ReflexionError("--paired forks threads locally: use --unpaired with --server")
    return False


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
