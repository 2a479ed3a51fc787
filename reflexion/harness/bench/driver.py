"""Running a benchmark: many tasks, each a checkpointed thread, bounded concurrency, resumable.

A benchmark writes one JSONL results file. Every finished trial is appended as a ``trial``
line and every reflection as a ``reflection`` line the moment the graph produces it; a task's
last line is its ``final`` line (or an ``error`` line when it failed with an exception). A rerun
with the same settings skips tasks that have a ``final`` line and resumes the others from their
checkpoint, so an interrupted run loses at most the step in flight.

Accounting (:mod:`reflexion.harness.bench.usage`): every ``trial`` and ``reflection`` line
carries ``usage``, the prompt and completion tokens, model calls and wall time per node of what
ran since the thread's previous line — a trial line the actor and the evaluator (and a setup
node such as the test writer on the first trial, or a reflector that wrote no reflection), a
reflection line the reflector. The ``final`` line carries the thread's totals per node: the
usage of its lines written by earlier, interrupted runs plus this run's, so a resumed thread
counts nothing twice.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.ledger import BenchTask, Emit, Ledger, Sink
from reflexion.harness.bench.thread_updates import Finalize as Finalize
from reflexion.harness.bench.thread_updates import ServerGraph as ServerGraph
from reflexion.harness.bench.thread_updates import (
    recursion_limit,
    release_held,
    unrecorded,
    update_events,
)
from reflexion.harness.bench.usage import Usage, UsageRecorder, merge
from reflexion.harness.checkpoints import annotate_head, fork_thread, replay_from

Graph = CompiledStateGraph[Any, Any, Any, Any]


def thread_config(
    thread_id: str, ctx: Context, metadata: dict[str, Any] | None = None
) -> RunnableConfig:
    """Run config of a thread; ``metadata`` is recorded in its checkpoints (e.g. the agent)."""
    config: RunnableConfig = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(ctx),
    }
    if metadata:
        config["metadata"] = metadata
    return config


def snapshot(graph: Graph, thread_id: str) -> Any | None:
    """The thread's latest checkpoint, or ``None`` when the thread does not exist."""
    state = graph.get_state({"configurable": {"thread_id": thread_id}})
    return state if state.values else None


def stream_thread(
    graph: Graph,
    thread_id: str,
    task_input: dict[str, Any] | Command[Any] | None,
    ctx: Context,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    *,
    metadata: dict[str, Any] | None = None,
    interrupt_before: list[str] | None = None,
) -> dict[str, Any]:
    """Run (or resume, when ``task_input`` is None) one thread; report each trial and
    reflection as it happens, with the ``usage`` of what ran since the previous report;
    return the final state values plus ``wall_s`` and ``usage`` (this run's, per node).

    A run that stops at an interrupt (the review node's, or an ``interrupt_before``) returns
    what is pending: ``interrupts`` (``{"id", "value"}`` per interrupt, e.g. the proposed
    reflection) and ``next`` (the nodes that run on resume; empty when the thread is done).
    Resume by calling again with ``Command(resume=...)`` (or ``None``) as ``task_input``."""
    config = thread_config(thread_id, ctx, metadata)
    recorder = UsageRecorder()
    config["callbacks"] = [recorder]
    spent: Usage = {}
    started = time.perf_counter()
    # Crash safety: a trial or reflection is reported only once the checkpoint holding it is
    # saved. With durability="sync" a step's checkpoint is written before the next step
    # starts, and the "checkpoints" stream event comes after that write, so reported lines
    # never get ahead of the checkpointer: a rerun after a kill resumes past every reported
    # trial (none runs twice), and one saved but not yet reported is recovered from the
    # checkpoints (see run_benchmark). Updates stream as soon as a node finishes, before the
    # step is saved, so they are held until then. The lines come from the updates, not from
    # the nodes' progress events (reflexion.core.progress): a resume after a kill applies a
    # finished node's saved writes and streams its update again, but not its custom events,
    # so a line fed by them would be lost (tests/integration/test_postgres.py kills one there).
    held: list[tuple[str, dict[str, Any]]] = []
    report = on_event if on_event is not None else (lambda _event, _payload: None)

    run_config = config
    if task_input is None and (replay := replay_from(graph.get_state(config))) is not None:
        # A step cut short (a cancelled run): replay it from its checkpoint.
        run_config = {**config, "configurable": {**config["configurable"], "checkpoint_id": replay}}
    for mode, chunk in graph.stream(
        task_input,
        run_config,
        context=ctx,
        stream_mode=["updates", "checkpoints"],
        durability="sync",
        interrupt_before=interrupt_before,
    ):
        if mode == "checkpoints":
            release_held(held, chunk.get("values") if isinstance(chunk, dict) else None, report)
            continue
        for event, payload in update_events(chunk):
            usage = recorder.take()
            spent = merge(spent, usage)
            held.append((event, {**payload, "usage": usage}))
    # The stream has ended and every checkpoint of the run is saved.
    current = graph.get_state(config)
    release_held(held, dict(current.values), report)
    state = dict(current.values)
    state["interrupts"] = [{"id": i.id, "value": i.value} for i in current.interrupts]
    state["next"] = list(current.next)
    state["wall_s"] = round(time.perf_counter() - started, 2)
    state["usage"] = merge(spent, recorder.take())
    return state


def run_benchmark(
    graph: Graph | ServerGraph,
    tasks: list[BenchTask],
    ctx: Context,
    sink: Sink,
    *,
    settings: dict[str, Any],
    concurrency: int = 1,
    done: dict[str, dict[str, Any]] | None = None,
    emit: Emit | None = None,
    metadata: dict[str, Any] | None = None,
    finalize: Finalize | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every task not already in ``done``; return (finals in task order, errors).

    ``finalize(task, final_state)`` may add fields to a task's ``final`` line (e.g. the
    programming benchmark's hidden-test scores); it runs in the task's worker.

    At most ``concurrency`` tasks run at once, each one LangGraph thread: here, sharing the
    graph's checkpointer, or on a LangGraph server when ``graph`` is a :class:`ServerGraph`
    (:func:`reflexion.harness.bench.remote.run_on_server`); the results file is shared. A task that
    raises is recorded as an ``error`` line and the run goes on; a rerun retries it from its
    checkpoint.

    A task with ``fork_from`` is half of a paired comparison: its first trial runs once, on
    the thread ``fork_from``, and stops before what follows a failed trial (the ``retry``
    step, where a graph has one, so that each fork chooses its own way; else the reflector),
    or ends, when it succeeded;
    the task's own thread then starts as a fork of that checkpoint (:func:`fork_thread`) and
    goes on under ``ctx``. Tasks that share ``fork_from`` (the same question under other
    strategies, in this run or a later one) branch from the same first attempt, so their
    outcomes differ by what happens after it alone. The shared trial's usage and wall time
    count for every task that forks it (its ``trial`` line is marked ``shared``), so each
    results file totals what its strategy costs on its own, first attempt included; they are
    kept on ``fork_from``'s last checkpoint for forks in later runs.
    """
    ledger = Ledger(tasks, sink, settings, done, emit)
    if isinstance(graph, ServerGraph):
        from reflexion.harness.bench.remote import run_on_server  # langgraph-sdk only when used

        return run_on_server(graph, ledger, ctx, concurrency, metadata or {}, finalize)
    return _run_here(graph, ledger, ctx, concurrency, metadata, finalize)


def _run_here(
    graph: Graph,
    ledger: Ledger,
    ctx: Context,
    concurrency: int,
    metadata: dict[str, Any] | None,
    finalize: Finalize | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`run_benchmark` in this process: a worker thread per task in flight."""
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    def first_trial(
        task: BenchTask, base: str, saver: BaseCheckpointSaver[Any]
    ) -> tuple[Usage, float]:
        """Run the shared first trial on thread ``base`` unless it already ran; its usage and
        wall time, recorded on ``base``'s last checkpoint so that later forks (another
        strategy, a later run) count them too (none for a trial run before they were kept)."""
        with guard:
            lock = locks.setdefault(base, threading.Lock())
        with lock:
            snap = snapshot(graph, base)
            after = ["retry", "reflector"]  # what follows a failed trial: the first the graph has
            stop = [name for name in after if name in graph.nodes][:1]
            if snap is not None and (not snap.next or set(stop) & set(snap.next)):
                kept = snap.metadata or {}
                return dict(kept.get("shared_usage") or {}), float(kept.get("shared_wall_s") or 0)
            state = stream_thread(
                graph,
                base,
                task.input if snap is None else None,
                ctx,
                metadata=metadata,
                interrupt_before=stop,
            )
            usage: Usage = state["usage"]
            wall = float(state["wall_s"])
            annotate_head(saver, base, {"shared_usage": usage, "shared_wall_s": wall})
            return usage, wall

    def one(task: BenchTask) -> dict[str, Any]:
        def on_event(event: str, payload: dict[str, Any]) -> None:
            ledger.line(task, event, payload)

        resume = snapshot(graph, task.thread_id) is not None
        shared: Usage = {}
        shared_s = 0.0
        forked = False
        if not resume and task.fork_from is not None:
            saver = graph.checkpointer
            if not isinstance(saver, BaseCheckpointSaver):
                raise ReflexionError("paired runs need a graph compiled with a checkpointer")
            shared, shared_s = first_trial(task, task.fork_from, saver)
            fork_thread(saver, task.fork_from, task.thread_id)
            resume = forked = True
        if resume:
            recorded = ledger.recorded.get(task.thread_id)
            for event, payload in unrecorded(graph, task.thread_id, recorded):
                if forked and event == "trial":
                    # The shared first trial: this strategy's line carries what it cost.
                    payload = {**payload, "usage": shared, "recovered": False, "shared": True}
                on_event(event, payload)
        state = stream_thread(
            graph,
            task.thread_id,
            None if resume else task.input,
            ctx,
            on_event,
            metadata=metadata,
        )
        return ledger.final(
            task,
            state,
            wall_s=round(state["wall_s"] + shared_s, 2),
            usage=merge(shared, state["usage"]),
            resumed=resume and not forked,
            counted=resume,
            extra=finalize(task, state) if finalize is not None else None,
        )

    def failed(task: BenchTask, exc: BaseException) -> None:
        ledger.failed(task, f"{type(exc).__name__}: {exc}")

    pending = ledger.pending()
    if concurrency <= 1:
        for task in pending:
            try:
                one(task)
            except (ReflexionError, KeyboardInterrupt):
                raise
            except Exception as exc:
                failed(task, exc)
    else:
        _run_pool(pending, one, failed, concurrency)
    return ledger.finals()


def _run_pool(
    pending: list[BenchTask],
    one: Callable[[BenchTask], dict[str, Any]],
    failed: Callable[[BenchTask, BaseException], None],
    concurrency: int,
) -> None:
    """Keep ``concurrency`` tasks in flight; on Ctrl-C stop at once (checkpoints make the
    threads that were running resume cleanly on the next run)."""
    queue = list(reversed(pending))
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench")
    running: dict[Future[dict[str, Any]], BenchTask] = {}
    try:
        while queue or running:
            while queue and len(running) < concurrency:
                task = queue.pop()
                running[executor.submit(one, task)] = task
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                task = running.pop(future)
                exc = future.exception()
                if isinstance(exc, ReflexionError):
                    raise exc
                if exc is not None:
                    failed(task, exc)
    except KeyboardInterrupt:
        executor.shutdown(wait=False, cancel_futures=True)
        # Worker threads cannot be interrupted; leave without waiting for them.
        sys.stderr.write("interrupted: rerun the same command to resume where it stopped\n")
        sys.stderr.flush()
        os._exit(130)
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def solved_by_trial(finals: list[dict[str, Any]], max_trials: int) -> list[float]:
    """Cumulative proportion of tasks solved by trial 1..max_trials (the learning curve)."""
    n = len(finals)
    curve = []
    for t in range(1, max_trials + 1):
        solved = sum(1 for f in finals if f["solved"] and len(f["evaluations"]) <= t)
        curve.append(solved / n if n else 0.0)
    return curve
