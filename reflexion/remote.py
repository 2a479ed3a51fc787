"""Running a benchmark on a LangGraph server (``reflexion bench … --server URL``).

Each task becomes a run on a server thread, submitted through ``langgraph-sdk``; the server's
own queue spreads the runs over its workers (``langgraph dev --n-jobs-per-worker N`` on one
machine, a deployed server with Postgres past one machine). The results file, the resume rules
and the return value are those of :func:`reflexion.bench.run_benchmark`:

* every task is a server thread whose id is a UUID derived from the task's thread id
  (:func:`server_thread_id`), so a rerun finds it again;
* ``trial`` and ``reflection`` lines are written the moment the run streams the evaluator's or
  the reflector's update (``stream_mode="updates"``);
* a task's ``final`` line is built from the thread's final state; ``finalize`` (e.g. the
  programming benchmark's hidden tests) runs here, on that state, not on the server;
* a failed run is an ``error`` line with the server's error and message, and the benchmark
  goes on; an error that is ours to report (:class:`~reflexion.errors.ReflexionError`, e.g. a
  model string the server cannot load) stops it, as a local run does;
* on a rerun a task with a ``final`` line is skipped; a thread that is still running is waited
  for; an unfinished thread (interrupted, failed, cut off) is resumed with input ``None``; a
  finished thread without a ``final`` line gets it from its state without running again.

Accounting differs from a local run, because the server does not hand over LangChain
callbacks: tokens and calls come from the model messages the run streams (``messages-tuple``
mode, subgraphs included), counted once per message for the top-level node that made it, and a
node's ``wall_s`` is the time between its task's start and result events as they arrive here.
Missing: ``model_s`` (always 0) and the calls that failed or were retried inside a node, which
stream no message.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Config, StreamMode

from reflexion.bench import BenchTask, Emit, Sink, read_results, recursion_limit
from reflexion.context import Context
from reflexion.errors import ReflexionError
from reflexion.usage import OTHER, Usage, merge, node_of, recorded_usage

GRAPH_IDS = {
    "cot-gt": "reflexion_qa",
    "cot": "reflexion_qa_cot",
    "react": "reflexion_react",
    "programming": "reflexion_programming",
    "alfworld": "reflexion_alfworld",
}
"""The graph (``langgraph.json``) that serves each agent of the CLI."""

STREAM_MODES: tuple[StreamMode, ...] = ("updates", "messages-tuple", "tasks")
"""Updates give the trial and reflection lines; messages the tokens; tasks the node times."""

_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/reflexion-langgraph/threads")


def server_thread_id(thread_id: str) -> str:
    """The server's id for one of our threads: the server wants UUIDs, so a UUID5 of ours."""
    return str(uuid.uuid5(_NAMESPACE, thread_id))


class RemoteRunError(Exception):
    """A run that ended with an error on the server: its error class name and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def _reflexion_error_names() -> set[str]:
    names: set[str] = set()
    todo: list[type[BaseException]] = [ReflexionError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


class RunEvents:
    """Turns the parts a run streams into our events (``trial``, ``reflection``), each with
    the usage of what ran since the previous event, as :func:`reflexion.bench.stream_thread`
    reports them for a local run."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._usage: Usage = {}
        self._tasks: dict[str, tuple[str, float]] = {}
        self._messages: dict[str, str] = {}
        self.started: float | None = None
        """When the first node started (a run waiting in the server's queue is not timed)."""
        self.error: RemoteRunError | None = None

    def _counters(self, node: str) -> dict[str, Any]:
        return self._usage.setdefault(
            node,
            {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "wall_s": 0.0, "model_s": 0.0},
        )

    def take(self) -> Usage:
        """The usage counted since the previous take."""
        usage, self._usage = self._usage, {}
        return merge(usage)

    def feed(self, event: str, data: Any) -> list[tuple[str, dict[str, Any]]]:
        """One streamed part (``event`` as the server names it, ``mode|namespace`` for a
        subgraph's); returns the events it completes, with their usage."""
        mode, _, namespace = event.partition("|")
        if mode == "messages":
            self._message(data)
        elif mode == "tasks" and not namespace:
            self._task(data)
        elif mode == "updates" and not namespace and isinstance(data, dict):
            return self._update(data)
        elif mode == "error":
            data = data if isinstance(data, dict) else {"message": str(data)}
            self.error = RemoteRunError(
                str(data.get("error") or "Error"), str(data.get("message") or "")
            )
        return []

    def _message(self, data: Any) -> None:
        if not (isinstance(data, Sequence) and len(data) == 2 and isinstance(data[0], dict)):
            return
        message, metadata = data[0], data[1] if isinstance(data[1], Mapping) else {}
        if message.get("type") not in ("ai", "AIMessageChunk"):
            return
        key = str(message.get("id") or id(message))
        node = self._messages.get(key)
        if node is None:
            node = node_of(metadata) if metadata else OTHER
            self._messages[key] = node
            self._counters(node)["calls"] += 1
        elif message.get("type") == "ai":
            return  # the whole message after its chunks: already counted
        usage = message.get("usage_metadata") or {}
        counters = self._counters(node)
        counters["prompt_tokens"] += int(usage.get("input_tokens") or 0)
        counters["completion_tokens"] += int(usage.get("output_tokens") or 0)

    def _task(self, data: Any) -> None:
        if not isinstance(data, dict) or "id" not in data:
            return
        now = self._clock()
        if self.started is None:
            self.started = now
        task_id, name = str(data["id"]), str(data.get("name") or OTHER)
        if "input" in data:
            self._tasks[task_id] = (name, now)
        else:
            self._finish(lambda tid, _: tid == task_id, now)

    def _finish(self, which: Callable[[str, str], bool], now: float) -> None:
        """Close the open tasks ``which(task id, node)`` selects: their node's wall time."""
        for task_id, (name, began) in list(self._tasks.items()):
            if which(task_id, name):
                del self._tasks[task_id]
                self._counters(name)["wall_s"] += now - began

    def _update(self, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        # A node's update streams before its task's result: its time ends here, so that it
        # counts for the line this update writes.
        self._finish(lambda _, node: node in data, self._clock())
        out: list[tuple[str, dict[str, Any]]] = []
        for node, values in data.items():
            if not isinstance(values, dict):
                continue
            if node == "evaluator" and values.get("evaluations"):
                out.append(("trial", dict(values["evaluations"][-1])))
            elif node == "reflector" and values.get("reflections"):
                out.append(("reflection", {"text": values["reflections"][-1]}))
        return [(event, {**payload, "usage": self.take()}) for event, payload in out]


def final_row(
    task: BenchTask,
    values: Mapping[str, Any],
    *,
    wall_s: float,
    usage: Usage,
    resumed: bool,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """A task's ``final`` line from its thread's final state, as a local run writes it."""
    return {
        "type": "final",
        "thread_id": task.thread_id,
        **task.meta,
        "answer": values.get("answer"),
        "solved": bool(values.get("solved")),
        "trials": values.get("trial", 0),
        "evaluations": values.get("evaluations", []),
        "reflections": values.get("reflections", []),
        "wall_s": wall_s,
        "usage": usage,
        "resumed": resumed,
        "settings": settings,
    }


def error_text(exc: BaseException) -> str:
    """The one-line reason of an ``error`` line."""
    text = str(exc) if isinstance(exc, RemoteRunError) else f"{type(exc).__name__}: {exc}"
    return (text.splitlines() or [type(exc).__name__])[0][:500]


async def check_server(client: LangGraphClient, url: str, graph_id: str) -> None:
    """Fail with one line when the server cannot be reached or does not serve ``graph_id``."""
    try:
        try:
            if await client.assistants.search(graph_id=graph_id, limit=1):
                return
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:  # 404: no such graph
                raise
        every = await client.assistants.search(limit=100)
    except httpx.HTTPStatusError as exc:
        raise ReflexionError(
            f"the LangGraph server at {url} answered {exc.response.status_code} to an assistants "
            "search: is it a LangGraph server? check --server"
        ) from None
    except httpx.HTTPError as exc:
        raise ReflexionError(
            f"cannot reach the LangGraph server at {url}: {type(exc).__name__}: {exc}; "
            "start one with `langgraph dev` or check --server"
        ) from None
    served = sorted({str(a["graph_id"]) for a in every})
    raise ReflexionError(
        f"the LangGraph server at {url} does not serve the graph {graph_id} (it serves: "
        f"{', '.join(served) or 'none'}): start it from this project's langgraph.json"
    )


def run_benchmark_remote(
    url: str,
    graph_id: str,
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
    """Run every task not already in ``done`` on the LangGraph server at ``url``, at most
    ``concurrency`` runs submitted at once; return (finals in task order, errors), like
    :func:`reflexion.bench.run_benchmark`."""
    return asyncio.run(
        _run_all(
            url,
            graph_id,
            tasks,
            ctx,
            sink,
            settings=settings,
            concurrency=concurrency,
            done=dict(done or {}),
            emit=emit,
            metadata=dict(metadata or {}),
            finalize=finalize,
        )
    )


async def _run_all(
    url: str,
    graph_id: str,
    tasks: list[BenchTask],
    ctx: Context,
    sink: Sink,
    *,
    settings: dict[str, Any],
    concurrency: int,
    done: dict[str, dict[str, Any]],
    emit: Emit | None,
    metadata: dict[str, Any],
    finalize: Callable[[BenchTask, dict[str, Any]], dict[str, Any]] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    results: dict[str, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    earlier = recorded_usage(read_results(sink.path)) if sink.path is not None else {}
    fatal = _reflexion_error_names()
    context = asdict(ctx)
    config: Config = {"recursion_limit": recursion_limit(ctx)}

    def report(event: str, task: BenchTask, payload: dict[str, Any]) -> None:
        if emit is not None:
            emit(event, task, payload)

    for task in tasks:
        if task.thread_id in done:
            report("skipped", task, done[task.thread_id])
    pending = [t for t in tasks if t.thread_id not in done]
    if not pending:
        return [done[t.thread_id] for t in tasks], errors

    async with get_client(url=url, api_key=None) as client:
        await check_server(client, url, graph_id)
        slots = asyncio.Semaphore(concurrency)

        async def stream(task: BenchTask, thread_id: str, task_input: Any) -> tuple[float, Usage]:
            """One run of the thread, its events written as they arrive; its wall time and
            usage."""
            events = RunEvents()
            used: list[Usage] = []
            parts = client.runs.stream(
                thread_id,
                graph_id,
                input=task_input,
                context=context,
                config=config,
                metadata=metadata,
                stream_mode=STREAM_MODES,
                stream_subgraphs=True,
                on_disconnect="cancel",
            )
            async for part in parts:
                for event, payload in events.feed(part.event, part.data):
                    used.append(payload["usage"])
                    sink.write({"type": event, "thread_id": task.thread_id, **payload})
                    report(event, task, payload)
            if events.error is not None:
                if events.error.kind in fatal:
                    raise ReflexionError(str(events.error).split(": ", 1)[-1])
                raise events.error
            # What ran after the last event (e.g. a reflector that wrote nothing) counts too.
            used.append(events.take())
            began = events.started if events.started is not None else time.perf_counter()
            return time.perf_counter() - began, merge(*used)

        async def one(task: BenchTask) -> dict[str, Any]:
            thread_id = server_thread_id(task.thread_id)
            thread = await client.threads.create(
                thread_id=thread_id,
                if_exists="do_nothing",
                graph_id=graph_id,
                metadata={
                    **metadata,
                    "reflexion_thread_id": task.thread_id,
                    "task_id": task.meta.get("task_id"),
                },
            )
            if thread["status"] == "busy":  # a run of an earlier client is still going
                for run in await client.runs.list(thread_id, limit=100):
                    if run["status"] in ("pending", "running"):
                        await client.runs.join(thread_id, run["run_id"])
            state = await client.threads.get_state(thread_id)
            resumed = bool(state["values"])
            wall, usage = 0.0, Usage()
            if not resumed or state["next"]:
                wall, usage = await stream(task, thread_id, None if resumed else task.input)
                state = await client.threads.get_state(thread_id)
                if state["next"]:
                    raise RuntimeError(
                        f"the run stopped before the end of the thread (next: "
                        f"{', '.join(state['next'])}); rerun to resume it"
                    )
            values = dict(state["values"]) if isinstance(state["values"], dict) else {}
            final = final_row(
                task,
                values,
                wall_s=round(wall, 2),
                usage=merge(earlier.get(task.thread_id) if resumed else None, usage),
                resumed=resumed,
                settings=settings,
            )
            if finalize is not None:
                final.update(await asyncio.to_thread(finalize, task, values))
            sink.write(final)
            report("final", task, final)
            return final

        def failed(task: BenchTask, exc: BaseException) -> None:
            row = {
                "type": "error",
                "thread_id": task.thread_id,
                **task.meta,
                "error": error_text(exc),
            }
            sink.write(row)
            errors.append(row)
            report("error", task, row)

        async def guarded(task: BenchTask) -> None:
            async with slots:
                try:
                    results[task.thread_id] = await one(task)
                except ReflexionError:
                    raise
                except Exception as exc:
                    failed(task, exc)

        try:
            async with asyncio.TaskGroup() as group:
                for task in pending:
                    group.create_task(guarded(task))
        except* ReflexionError as group_error:
            raise group_error.exceptions[0] from None
    finals = [done.get(t.thread_id) or results.get(t.thread_id) for t in tasks]
    return [f for f in finals if f is not None], errors
