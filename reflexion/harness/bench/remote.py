"""Running a benchmark on a LangGraph server (``reflexion bench … --server URL``).

Each task becomes a run on a server thread, submitted through ``langgraph-sdk``; the server's
own queue spreads the runs over its workers (``langgraph dev --n-jobs-per-worker N`` on one
machine, a deployed server with Postgres past one machine). The results file, the resume rules
and the return value are those of a local run (:func:`reflexion.harness.bench.driver.run_benchmark`,
which runs here when given a :class:`~reflexion.harness.bench.thread_updates.ServerGraph`):

* every task is a server thread whose id is a UUID derived from the task's thread id
  (:func:`server_thread_id`), so a rerun finds it again;
* ``trial`` and ``reflection`` lines are written as soon as the server has saved them: runs go
  with ``durability="sync"`` (a step's checkpoint is saved before the next step starts) and
  stream ``checkpoints`` too; the evaluator's or the reflector's update is held until the
  root graph's next checkpoint event, which the server sends after the save. A line in the
  file is therefore always in the thread's saved state, and a rerun never runs its trial again;
* when the run ends (or a rerun finds the thread), what the thread's saved states hold but the
  file lacks (this client killed after a save, before its line) is written from the server's
  state history, marked ``"recovered": true``
  (:func:`reflexion.harness.bench.thread_updates.unrecorded`);
* a client that dies (SIGKILL, lost connection) takes its runs with it: they are submitted
  with ``on_disconnect="cancel"``, so the server interrupts them at once and keeps their saved
  checkpoints for the rerun;
* a task's ``final`` line is built from the thread's final state; ``finalize`` (e.g. the
  programming benchmark's hidden tests) runs here, on that state, not on the server;
* a failed run is an ``error`` line with the server's error and message, and the benchmark
  goes on; an error that is ours to report (:class:`~reflexion.core.errors.ReflexionError`, e.g. a
  model string the server cannot load) stops it, as a local run does;
* on a rerun a task with a ``final`` line is skipped; a thread that is still running is waited
  for; an unfinished thread (interrupted, failed, cut off, or cancelled between a node's saved
  writes and its step's checkpoint: :func:`reflexion.harness.checkpoints.unfinished`) is
  resumed with input ``None``, from its latest checkpoint's id when a node was cancelled
  halfway through its writes (:func:`reflexion.harness.checkpoints.cut_short`: the step is
  replayed); a finished thread without a ``final`` line gets it from its state without
  running again.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Config, StreamMode, ThreadState

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError, first_line, typed_first_line
from reflexion.harness.bench.ledger import BenchTask, Ledger
from reflexion.harness.bench.thread_updates import (
    Finalize,
    ServerGraph,
    recursion_limit,
    release_held,
    unrecorded,
    update_events,
)
from reflexion.harness.bench.usage import OTHER, UNCOUNTED, Usage, merge, node_of, zero_usage
from reflexion.harness.checkpoints import replay_from, unfinished

STREAM_MODES: tuple[StreamMode, ...] = ("updates", "checkpoints", "messages-tuple", "tasks")
"""Updates give the trial and reflection lines, checkpoints the moment they are saved;
messages the tokens; tasks the node times."""

HISTORY_PAGE = 100
"""Saved states fetched per request when reading a thread's history."""

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
    the usage of what ran since the previous event, as
    :func:`reflexion.harness.bench.driver.stream_thread`
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
        return self._usage.setdefault(node, zero_usage())

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
        if name in UNCOUNTED:  # as the local recorder: a policy node, no usage of its own
            return
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
        return [(event, {**p, "usage": self.take()}) for event, p in update_events(data)]


@dataclass(frozen=True)
class _SavedTask:
    name: str
    result: Any
    error: Any = None


@dataclass(frozen=True)
class _Snapshot:
    """A server's saved state with the attributes of a local ``StateSnapshot`` that
    :func:`reflexion.harness.checkpoints.thread_history` reads."""

    values: Any
    next: tuple[str, ...]
    config: dict[str, Any]
    parent_config: dict[str, Any] | None
    metadata: Any
    tasks: tuple[_SavedTask, ...]
    created_at: str | None


def _snapshot(state: ThreadState) -> _Snapshot:
    def config(checkpoint: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if not checkpoint or not checkpoint.get("checkpoint_id"):
            return None
        return {"configurable": {"checkpoint_id": checkpoint["checkpoint_id"]}}

    return _Snapshot(
        values=state.get("values"),
        next=tuple(state.get("next") or ()),
        config=config(state.get("checkpoint")) or {"configurable": {"checkpoint_id": None}},
        parent_config=config(state.get("parent_checkpoint")),
        metadata=state.get("metadata") or {},
        tasks=tuple(
            _SavedTask(str(t.get("name")), t.get("result"), t.get("error"))
            for t in state.get("tasks") or ()
        ),
        created_at=state.get("created_at"),
    )


class HistoryNeeded(Exception):
    """Raised by a :class:`ServerThread` without its history when it is asked for it."""


class ServerThread:
    """A server thread's saved states, read the way
    :func:`reflexion.harness.bench.thread_updates.unrecorded` reads
    a local graph's checkpoints: ``state`` is its latest (``threads.get_state``), ``history``
    every saved state, newest first (``threads.get_history``), or ``None`` while not fetched
    (asking for it then raises :class:`HistoryNeeded`: most threads miss no line, and the latest
    state alone shows that)."""

    def __init__(self, state: ThreadState, history: list[ThreadState] | None = None) -> None:
        self.state = state
        self.history = history

    def get_state(self, config: Any) -> _Snapshot:
        return _snapshot(self.state)

    def get_state_history(self, config: Any) -> Iterator[_Snapshot]:
        if self.history is None:
            raise HistoryNeeded
        return iter([_snapshot(s) for s in self.history])


async def saved_history(client: LangGraphClient, thread_id: str) -> list[ThreadState]:
    """Every saved state of a server thread's root graph, newest first."""
    states: list[ThreadState] = []
    while True:
        before = states[-1]["checkpoint"] if states else None
        page = await client.threads.get_history(thread_id, limit=HISTORY_PAGE, before=before)
        states.extend(page)
        if len(page) < HISTORY_PAGE:
            return states


async def missing_lines(
    client: LangGraphClient,
    thread_id: str,
    state: ThreadState,
    recorded: tuple[set[int], set[int]] | None,
) -> list[tuple[str, dict[str, Any]]]:
    """The trial and reflection lines the server thread (``state``: its latest saved state)
    holds but ``recorded`` (the trial numbers with a line, see
    :func:`reflexion.harness.bench.ledger.recorded_lines`) lacks, in order, marked ``recovered``."""
    try:
        return list(unrecorded(ServerThread(state), thread_id, recorded))
    except HistoryNeeded:
        history = await saved_history(client, thread_id)
        return list(unrecorded(ServerThread(state, history), thread_id, recorded))


def error_text(exc: BaseException) -> str:
    """The one-line reason of an ``error`` line."""
    text = first_line(exc) if isinstance(exc, RemoteRunError) else typed_first_line(exc)
    return text[:500]


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


def run_on_server(
    server: ServerGraph,
    ledger: Ledger,
    ctx: Context,
    concurrency: int,
    metadata: dict[str, Any],
    finalize: Finalize | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`reflexion.harness.bench.driver.run_benchmark` on a LangGraph server: every pending
    task
    of ``ledger`` a run there, at most ``concurrency`` submitted at once."""
    pending = ledger.pending()
    if not pending:
        return ledger.finals()
    runs = _ServerRun(server, ledger, ctx, metadata, finalize)
    return asyncio.run(runs.run_all(pending, concurrency))


class _ServerRun:
    """One benchmark's tasks as runs on one server graph, each line written to ``ledger`` once
    the server has saved the state that holds it."""

    def __init__(
        self,
        server: ServerGraph,
        ledger: Ledger,
        ctx: Context,
        metadata: dict[str, Any],
        finalize: Finalize | None,
    ) -> None:
        self.url, self.graph_id = server.url, server.graph_id
        self.ledger = ledger
        self.context = asdict(ctx)
        self.config: Config = {"recursion_limit": recursion_limit(ctx)}
        self.metadata = metadata
        self.finalize = finalize
        self.fatal = _reflexion_error_names()
        self.client: LangGraphClient | None = None

    @property
    def _client(self) -> LangGraphClient:
        assert self.client is not None, "run_all opens the client"
        return self.client

    async def run_all(
        self, pending: list[BenchTask], concurrency: int
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The ``pending`` tasks, at most ``concurrency`` at once; a :class:`ReflexionError` (a
        fault of the setup, not of one task) stops them all, any other error is the task's."""
        async with get_client(url=self.url, api_key=None) as client:
            self.client = client
            await check_server(client, self.url, self.graph_id)
            slots = asyncio.Semaphore(concurrency)

            async def guarded(task: BenchTask) -> None:
                async with slots:
                    try:
                        await self.one(task)
                    except ReflexionError:
                        raise
                    except Exception as exc:
                        self.ledger.failed(task, error_text(exc))

            try:
                async with asyncio.TaskGroup() as group:
                    for task in pending:
                        group.create_task(guarded(task))
            except* ReflexionError as group_error:
                raise group_error.exceptions[0] from None
        return self.ledger.finals()

    async def catch_up(
        self,
        task: BenchTask,
        thread_id: str,
        state: ThreadState,
        held: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        """Write the lines the thread's saved states hold and the file lacks; one this client
        still holds (its checkpoint event did not arrive) keeps its usage."""
        for event, payload in await missing_lines(
            self._client, thread_id, state, self.ledger.recorded.get(task.thread_id)
        ):
            key = "trial" if event == "trial" else "text"
            mine = next((p for e, p in held if e == event and p.get(key) == payload[key]), None)
            if mine is not None:
                payload = {**mine, "trial": payload["trial"]}
            self.ledger.line(task, event, payload)

    async def stream(
        self, task: BenchTask, thread_id: str, task_input: Any, checkpoint_id: str | None
    ) -> tuple[float, Usage, list[tuple[str, dict[str, Any]]], RunEvents]:
        """One run of the thread (from ``checkpoint_id``: a step cut short replayed), each
        line written once the server has saved it; its wall time, usage, the lines still held
        at its end, and its events."""
        events = RunEvents()
        used: list[Usage] = []
        held: list[tuple[str, dict[str, Any]]] = []
        parts = self._client.runs.stream(
            thread_id,
            self.graph_id,
            input=task_input,
            checkpoint_id=checkpoint_id,
            context=self.context,
            config=self.config,
            metadata=self.metadata,
            stream_mode=STREAM_MODES,
            stream_subgraphs=True,
            on_disconnect="cancel",
            durability="sync",
        )
        async for part in parts:
            if part.event == "checkpoints":  # the root graph's (a subgraph's: "…|ns")
                # Sent after the save (durability="sync"): what is held is saved.
                saved = part.data.get("values") if isinstance(part.data, dict) else None
                release_held(held, saved, lambda e, p: self.ledger.line(task, e, p))
                continue
            for event, payload in events.feed(part.event, part.data):
                used.append(payload["usage"])
                held.append((event, payload))
        # What ran after the last event (e.g. a reflector that wrote nothing) counts too.
        used.append(events.take())
        began = events.started if events.started is not None else time.perf_counter()
        return time.perf_counter() - began, merge(*used), held, events

    async def one(self, task: BenchTask) -> dict[str, Any]:
        """One task: its thread created (or found), resumed or run, and its final line."""
        client = self._client
        thread_id = server_thread_id(task.thread_id)
        thread = await client.threads.create(
            thread_id=thread_id,
            if_exists="do_nothing",
            graph_id=self.graph_id,
            metadata={
                **self.metadata,
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
        if resumed:
            await self.catch_up(task, thread_id, state)
        wall, usage = 0.0, Usage()
        # A run cancelled after a node's writes were saved but before its step's checkpoint
        # shows no next node, yet has not ended: unfinished() sees it; one cancelled in the
        # middle of a node's writes is replayed from its checkpoint.
        latest = _snapshot(state)
        if not resumed or unfinished(latest) is not None:
            wall, usage, held, events = await self.stream(
                task,
                thread_id,
                None if resumed else task.input,
                replay_from(latest) if resumed else None,
            )
            state = await client.threads.get_state(thread_id)
            await self.catch_up(task, thread_id, state, held)
            if events.error is not None:
                if events.error.kind in self.fatal:
                    raise ReflexionError(str(events.error).split(": ", 1)[-1])
                raise events.error
            if (why := unfinished(_snapshot(state))) is not None:
                raise RuntimeError(
                    f"the run stopped before the end of the thread (interrupted {why}); "
                    "rerun to resume it"
                )
        values = dict(state["values"]) if isinstance(state["values"], dict) else {}
        extra = None
        if self.finalize is not None:
            extra = await asyncio.to_thread(self.finalize, task, values)
        return self.ledger.final(
            task,
            values,
            wall_s=round(wall, 2),
            usage=usage,
            resumed=resumed,
            counted=resumed,
            extra=extra,
        )
