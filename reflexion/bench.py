"""Running a benchmark: many tasks, each a checkpointed thread, bounded concurrency, resumable.

A benchmark writes one JSONL results file. Every finished trial is appended as a ``trial``
line and every reflection as a ``reflection`` line the moment the graph produces it; a task's
last line is its ``final`` line (or an ``error`` line when it failed with an exception). A rerun
with the same settings skips tasks that have a ``final`` line and resumes the others from their
checkpoint, so an interrupted run loses at most the step in flight.

Accounting (:mod:`reflexion.usage`): every ``trial`` and ``reflection`` line carries ``usage``,
the prompt and completion tokens, model calls and wall time per node of what ran since the
thread's previous line — a trial line the actor and the evaluator (and a setup node such as
the test writer on the first trial, or a reflector that wrote no reflection), a reflection line
the reflector. The ``final`` line carries the thread's totals per node: the usage of its lines
written by earlier, interrupted runs plus this run's, so a resumed thread counts nothing twice.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from reflexion.context import Context
from reflexion.errors import ReflexionError
from reflexion.usage import Usage, UsageRecorder, merge, recorded_usage

Graph = CompiledStateGraph[Any, Any, Any, Any]
Emit = Callable[[str, "BenchTask", dict[str, Any]], None]
"""Called with (event, task, payload) for ``trial``, ``reflection``, ``final`` and ``error``."""


@dataclass(frozen=True)
class BenchTask:
    """One task of a benchmark: its thread, its graph input and what the results file keeps."""

    thread_id: str
    input: dict[str, Any]
    label: str
    meta: dict[str, Any]
    """Copied into the ``final`` line (task id, question, reference…)."""


def recursion_limit(ctx: Context) -> int:
    """A recursion limit that lets ``max_trials`` trials (and ``max_steps`` ReAct steps, or
    ``alfworld_steps`` ALFWorld turns) run: three supersteps per trial in the loop, two per
    step in the ReAct subgraph, one per turn in the ALFWorld subgraph."""
    return max(25, 3 * ctx.max_trials + 5, 2 * ctx.max_steps + 5, ctx.alfworld_steps + 5)


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
    task_input: dict[str, Any] | None,
    ctx: Context,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    *,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or resume, when ``task_input`` is None) one thread; report each trial and
    reflection as it happens, with the ``usage`` of what ran since the previous report;
    return the final state values plus ``wall_s`` and ``usage`` (this run's, per node)."""
    config = thread_config(thread_id, ctx, metadata)
    recorder = UsageRecorder()
    config["callbacks"] = [recorder]
    spent: Usage = {}
    started = time.perf_counter()
    for update in graph.stream(task_input, config, context=ctx, stream_mode="updates"):
        for node, values in update.items():
            if not isinstance(values, dict):
                continue
            event: tuple[str, dict[str, Any]] | None = None
            if node == "evaluator" and values.get("evaluations"):
                event = ("trial", dict(values["evaluations"][-1]))
            elif node == "reflector" and values.get("reflections"):
                event = ("reflection", {"text": values["reflections"][-1]})
            if event is None:
                continue
            usage = recorder.take()
            spent = merge(spent, usage)
            if on_event is not None:
                on_event(event[0], {**event[1], "usage": usage})
    state = dict(graph.get_state(config).values)
    state["wall_s"] = round(time.perf_counter() - started, 2)
    state["usage"] = merge(spent, recorder.take())
    return state


def finished_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """The ``final`` lines of a results file, by thread id (a line cut by a crash is skipped:
    its thread resumes from the checkpointer)."""
    done: dict[str, dict[str, Any]] = {}
    for row in read_results(path):
        if row.get("type") == "final":
            done[str(row.get("thread_id"))] = row
    return done


def read_results(path: Path) -> Iterator[dict[str, Any]]:
    """Every well-formed line of a results file."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield row


class Sink:
    """Appends JSON lines to the results file from any thread, flushed line by line."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        """The results file, when the handle is an open file (not e.g. a ``StringIO``)."""
        name = getattr(self._handle, "name", None)
        if isinstance(name, str) and Path(name).is_file():
            return Path(name)
        return None

    def write(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()


def run_benchmark(
    graph: Graph,
    tasks: list[BenchTask],
    ctx: Context,
    sink: Sink,
    *,
    settings: dict[str, Any],
    concurrency: int = 1,
    done: dict[str, dict[str, Any]] | None = None,
    emit: Emit | None = None,
    metadata: dict[str, Any] | None = None,
    finalize: Callable[[BenchTask, dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every task not already in ``done``; return (finals in task order, errors).

    ``finalize(task, final_state)`` may add fields to a task's ``final`` line (e.g. the
    programming benchmark's hidden-test scores); it runs in the task's worker.

    At most ``concurrency`` threads run at once (each task is one LangGraph thread; the
    checkpointer and the results file are shared). A task that raises is recorded as an
    ``error`` line and the run goes on; a rerun retries it from its checkpoint.
    """
    done = dict(done or {})
    results: dict[str, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    # What interrupted runs already recorded (read before this run writes anything).
    earlier = recorded_usage(read_results(sink.path)) if sink.path is not None else {}

    def report(event: str, task: BenchTask, payload: dict[str, Any]) -> None:
        if emit is not None:
            emit(event, task, payload)

    def one(task: BenchTask) -> dict[str, Any]:
        def on_event(event: str, payload: dict[str, Any]) -> None:
            sink.write({"type": event, "thread_id": task.thread_id, **payload})
            report(event, task, payload)

        resume = snapshot(graph, task.thread_id) is not None
        state = stream_thread(
            graph,
            task.thread_id,
            None if resume else task.input,
            ctx,
            on_event,
            metadata=metadata,
        )
        final = {
            "type": "final",
            "thread_id": task.thread_id,
            **task.meta,
            "answer": state.get("answer"),
            "solved": bool(state.get("solved")),
            "trials": state.get("trial", 0),
            "evaluations": state.get("evaluations", []),
            "reflections": state.get("reflections", []),
            "wall_s": state["wall_s"],
            "usage": merge(earlier.get(task.thread_id) if resume else None, state["usage"]),
            "resumed": resume,
            "settings": settings,
        }
        if finalize is not None:
            final.update(finalize(task, state))
        sink.write(final)
        report("final", task, final)
        return final

    def failed(task: BenchTask, exc: BaseException) -> None:
        row = {
            "type": "error",
            "thread_id": task.thread_id,
            **task.meta,
            "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
        }
        sink.write(row)
        errors.append(row)
        report("error", task, row)

    pending = [t for t in tasks if t.thread_id not in done]
    for task in tasks:
        if task.thread_id in done:
            report("skipped", task, done[task.thread_id])
    if concurrency <= 1:
        for task in pending:
            try:
                results[task.thread_id] = one(task)
            except (ReflexionError, KeyboardInterrupt):
                raise
            except Exception as exc:
                failed(task, exc)
    else:
        _run_pool(pending, one, failed, results, concurrency)
    finals = [done.get(t.thread_id) or results.get(t.thread_id) for t in tasks]
    return [f for f in finals if f is not None], errors


def _run_pool(
    pending: list[BenchTask],
    one: Callable[[BenchTask], dict[str, Any]],
    failed: Callable[[BenchTask, BaseException], None],
    results: dict[str, dict[str, Any]],
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
                else:
                    results[task.thread_id] = future.result()
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
