"""Commands on one thread at a time: ``run`` (answer a question, or resume a thread), ``show``
and ``history`` (inspect one), and ``models`` (the embedded presets)."""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Annotated, Any

import typer
from langgraph.types import Command
from rich.markup import escape

from reflexion.core.context import DEFAULT_MODEL, Context, context_from
from reflexion.core.errors import ProviderError, ReflexionError, first_line
from reflexion.core.presets import PRESET_NAMES, preset_values
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.driver import Graph, snapshot, stream_thread
from reflexion.harness.bench.reports import table
from reflexion.harness.checkpoints import thread_history, unfinished
from reflexion.harness.cli.common import (
    compile_agent,
    console,
    print_trial,
    qa_context,
    require_db,
    resolve_models,
    where,
)
from reflexion.harness.cli.options import (
    DEFAULT_DB,
    DEFAULTS,
    QA_DEFAULTS,
    QUESTION_AGENTS,
    REACT_DEFAULTS,
    AgentRetryOpt,
    AgentTrialsOpt,
    BaseUrlOpt,
    C,
    CorpusOpt,
    DbOpt,
    EvaluatorOpt,
    MemoryOpt,
    ModelOpt,
    PresetOpt,
    RepeatGuardOpt,
    SeedsOpt,
    StepsOpt,
    StrategyOpt,
    TempOpt,
    ThreadOpt,
    WikiOpt,
    choice,
    given,
    informed_retry,
    preset_options,
    set_fields,
    with_preset,
)
from reflexion.harness.persistence import open_checkpointer
from reflexion.models.providers import PRESETS, Preset
from reflexion.models.retries import describe_fault
from reflexion.models.transport import current_transport, set_transport, transport_of
from reflexion.qa.context import QAContext, ReActContext


def provider_failure(exc: BaseException) -> str | None:
    """Why a model call failed, when the provider is the cause: a :class:`ProviderError` (a
    transient fault that outlived the retries) or an HTTP error answer that is not retried
    (``400 Bad Request: …``, ``401 Unauthorized: …``); ``None`` for any other exception."""
    if isinstance(exc, ProviderError):
        return str(exc)
    if isinstance(getattr(exc, "status_code", None), int):
        return f"{describe_fault(exc)}: {first_line(exc)}"
    return None


def print_event(label: str) -> Any:
    def on_event(event: str, payload: dict[str, Any]) -> None:
        if event == "trial":
            print_trial(payload, label)
        elif event == "reflection":
            console.print(f"{label}  [cyan]reflection:[/] {escape(payload['text'])}")

    return on_event


def _agent_of(snapshot: Any) -> str:
    """The agent a thread was started with (recorded in its checkpoint metadata)."""
    agent = (snapshot.metadata or {}).get("agent")
    if agent in AGENTS:
        return str(agent)
    return "cot-gt" if snapshot.values.get("passages") else "cot"


def run(
    cli: typer.Context,
    question: Annotated[
        str | None, typer.Argument(help="The question (omit to resume --thread-id).")
    ] = None,
    passages: Annotated[
        str,
        typer.Option(
            "--passages", help="Supporting text for the actor (the cot-gt agent reads it)."
        ),
    ] = "",
    reference: Annotated[
        str | None, typer.Option("--reference", help="Gold answer, for the exact_match evaluator.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="cot-gt (uses --passages) | cot | react (searches Wikipedia). "
            "Default: cot-gt with --passages, else cot.",
        ),
    ] = None,
    model: ModelOpt = DEFAULT_MODEL,
    trials: AgentTrialsOpt = None,
    memory: MemoryOpt = DEFAULTS.memory_size,
    strategy: StrategyOpt = DEFAULTS.strategy,
    evaluator: EvaluatorOpt = DEFAULTS.evaluator,
    temperature: TempOpt = DEFAULTS.temperature,
    base_url: BaseUrlOpt = None,
    wiki: WikiOpt = REACT_DEFAULTS.wiki,
    corpus: CorpusOpt = None,
    max_steps: StepsOpt = REACT_DEFAULTS.max_steps,
    thread_id: ThreadOpt = None,
    db: DbOpt = DEFAULT_DB,
    retry: AgentRetryOpt = None,
    repeat_guard: RepeatGuardOpt = QA_DEFAULTS.repeat_guard,
    seeds: SeedsOpt = QA_DEFAULTS.seeds,
    preset: PresetOpt = "default",
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
        agent = choice(agent, QUESTION_AGENTS, "--agent")
    retry_option: dict[str, Any] = {"retry": retry, "repeat_guard": repeat_guard}
    preset_left = preset_options(cli, retry_option, preset)  # --retry, --repeat-guard given win
    if retry_option["retry"] is not None:
        informed_retry(retry_option["retry"])
    if question is not None and evaluator == "exact_match" and reference is None:
        raise ReflexionError(
            "the exact_match evaluator needs --reference ANSWER; or pass --evaluator llm"
        )

    def context_of(agent: str) -> QAContext | ReActContext:
        """This call's options as ``agent``'s context (on a resume, the thread's agent; there
        --memory is checked against the thread's own trials, and a clash is refused)."""
        served = REACT_DEFAULTS if agent == "react" else QA_DEFAULTS  # the agent's graph's
        ctx = qa_context(
            agent,
            model,
            served.max_trials if trials is None else trials,
            memory,
            strategy,
            evaluator,
            temperature,
            base_url,
            wiki=wiki,
            corpus=corpus,
            max_steps=max_steps,
            memory_given=given(cli, "memory") and question is not None,
        )
        return set_fields(
            with_preset(ctx, preset_left),
            review_reflections=review,
            retry=retry_option["retry"] or ctx.retry,
            repeat_guard=retry_option["repeat_guard"],
            seeds=seeds,
        )

    found = None
    with open_checkpointer(db) as saver:
        if question is None:
            if thread_id is None:
                raise ReflexionError(
                    "give a question, or --thread-id to resume or inspect a thread"
                )
            found = snapshot(compile_agent(saver, "cot"), thread_id)
            if found is None:
                raise ReflexionError(
                    f"thread '{thread_id}' is not in {where(db)}: "
                    "check the id, or give a question to start it"
                )
            if agent is not None and agent != _agent_of(found):
                raise ReflexionError(
                    f"thread '{thread_id}' was started with --agent {_agent_of(found)}: "
                    "resume it without --agent, or start a new thread"
                )
            agent = _agent_of(found)
            if not AGENTS[agent].answers_questions:
                raise ReflexionError(
                    f"thread '{thread_id}' is a {agent} thread: `reflexion run` resumes "
                    f"question-answering threads; rerun its `reflexion bench {agent}` "
                    f"command to resume it, or `reflexion history {thread_id}` to list it"
                )
            ctx = context_of(agent)
            if unfinished(found) is not None:  # a finished thread is shown whatever is asked
                ctx = _started_settings(cli, found, thread_id, ctx)
            task_input = None
        else:
            agent = agent or ("cot-gt" if passages else "cot")
            ctx = context_of(agent)
            thread_id = thread_id or f"run-{int(time.time() * 1000):x}"
            if snapshot(compile_agent(saver, agent), thread_id) is not None:
                raise ReflexionError(
                    f"thread '{thread_id}' already exists in {where(db)}: omit the question to "
                    "resume it, or choose a new --thread-id"
                )
            task_input = {"task": question, "passages": passages, "reference": reference}
        graph = compile_agent(saver, agent)
        if task_input is None and unfinished(found) is None:
            _show_state(graph, thread_id)
            return
        resolve_models(ctx)
        verb = "resuming thread" if task_input is None else "thread"
        console.print(f"{verb} [bold]{escape(thread_id)}[/] ({agent})")
        # checkpoint metadata keeps only plain values: the settings go as JSON text
        recorded = {**asdict(ctx), "base_url": transport_of(ctx).base_url}
        metadata = {"agent": agent, "settings": json.dumps(recorded)}
        _run_to_end(graph, thread_id, task_input, ctx, metadata)


RUN_OPTIONS = {
    "model": "actor_model",
    "trials": "max_trials",
    "memory": "memory_size",
    "strategy": "strategy",
    "evaluator": "evaluator",
    "temperature": "temperature",
    "wiki": "wiki",
    "corpus": "corpus",
    "max_steps": "max_steps",
    "retry": "retry",
    "repeat_guard": "repeat_guard",
    "seeds": "seeds",
}
"""The options of ``run`` that set what a thread computes, and the context field each sets."""


def _field(ctx: Context, name: str) -> Any:
    """A context's field; None where its graph's context has no such field."""
    return getattr(ctx, name, None)


def _started_settings(cli: typer.Context, found: Any, thread_id: str, ctx: C) -> C:
    """The settings a resumed thread started with (recorded in its checkpoint metadata), with this
    call's ``--base-url`` and ``--review``; an option given now that would change them is an
    error (``ctx`` holds every option as given). A thread recorded without them (started by an
    older version) runs with ``ctx``; one started with the removed lesson store is refused."""
    text = (found.metadata or {}).get("settings")
    try:
        recorded = json.loads(text) if isinstance(text, str) else None
    except ValueError:  # not written by us: run as asked
        recorded = None
    if not isinstance(recorded, dict):
        return ctx
    recorded_url = recorded.pop("base_url", None)  # the transport's, not a context field
    lessons = recorded.pop("lessons", None)  # the removed lesson store's: off, it did nothing
    if isinstance(lessons, dict) and lessons.get("enabled"):
        raise ReflexionError(
            f"thread '{thread_id}' was started with --lessons, which was removed (commit "
            "cde2057 still has it): resume it there, or start a new thread"
        )
    with warnings.catch_warnings():  # a thread of the last release recorded the old names
        warnings.simplefilter("ignore", DeprecationWarning)
        started = context_from(recorded, type(ctx))
    clashes = [
        "--" + option.replace("_", "-")
        for option, name in RUN_OPTIONS.items()
        if given(cli, option) and _field(ctx, name) != _field(started, name)
    ]
    preset_fields = {n for name in PRESET_NAMES for n in preset_values(name, type(ctx))}
    if given(cli, "preset") and any(_field(ctx, n) != _field(started, n) for n in preset_fields):
        clashes.append("--preset")
    if clashes:
        raise ReflexionError(
            f"thread '{thread_id}' was started with another {', '.join(clashes)}: a thread "
            "keeps the settings it started with, so resume it without them, or start a new "
            "thread"
        )
    if not given(cli, "base_url") and recorded_url:
        set_transport(replace(current_transport(), base_url=recorded_url))
    return replace(started, review_reflections=ctx.review_reflections)


def _run_to_end(
    graph: Graph,
    thread_id: str,
    task_input: dict[str, Any] | None,
    ctx: Context,
    metadata: dict[str, Any],
) -> None:
    """Stream a thread until it ends, asking about each reflection when review is on. A
    provider's failure stops it with the reason and the command that resumes it (every step
    before it is saved)."""
    steps: Any = task_input
    try:
        state = stream_thread(graph, thread_id, steps, ctx, print_event(""), metadata=metadata)
        while state["interrupts"]:  # a reflection waits for review
            steps = Command(resume=_ask_review(state["interrupts"][0]["value"], thread_id))
            state = stream_thread(graph, thread_id, steps, ctx, print_event(""), metadata=metadata)
    except Exception as exc:
        reason = provider_failure(exc)
        if reason is None:
            raise
        raise ReflexionError(
            f"thread '{thread_id}' stopped: {reason}; fix the cause, then resume it with "
            f"reflexion run --thread-id {thread_id} (and the same --db)"
        ) from exc
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
        print_trial(record)
    for text in values.get("reflections", []):
        console.print(f"  [cyan]reflection:[/] {escape(text)}")
    console.print(
        f"final answer: {escape(repr(values.get('answer')))}; solved={values.get('solved')}"
    )


def show(
    thread_id: Annotated[str, typer.Argument(help="The thread to inspect.")],
    db: DbOpt = DEFAULT_DB,
) -> None:
    """Print a thread's trials, reflections and final answer."""
    require_db(db)
    with open_checkpointer(db) as saver:
        graph = compile_agent(saver, "cot")
        if snapshot(graph, thread_id) is None:
            raise ReflexionError(f"thread '{thread_id}' is not in {where(db)}: check the id")
        _show_state(graph, thread_id)


def history(
    thread_id: Annotated[str, typer.Argument(help="The thread whose trials to list.")],
    db: DbOpt = DEFAULT_DB,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per trial instead of text.")
    ] = False,
) -> None:
    """List every trial of a thread from its checkpoints (any agent): trial number, answer,
    verdict, feedback, the reflection written after it, and the checkpoint id and time."""
    require_db(db)
    with open_checkpointer(db) as saver:
        found = snapshot(compile_agent(saver, "cot"), thread_id)
        if found is None:
            raise ReflexionError(f"thread '{thread_id}' is not in {where(db)}: check the id")
        agent = _agent_of(found)
        graph = compile_agent(saver, agent)
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


def installed_presets() -> Iterator[tuple[Preset, bool]]:
    """Every preset with whether its weight packages are installed."""
    for preset in PRESETS.values():
        ok = True
        for dist, _ in preset.parts:
            try:
                md.distribution(dist)
            except md.PackageNotFoundError:
                ok = False
                break
        yield preset, ok


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
