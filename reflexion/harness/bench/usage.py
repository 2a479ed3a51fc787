"""Token, call and time accounting of a graph run, per top-level node.

:class:`UsageRecorder` is a LangChain callback handler given to one thread's run (the
benchmark harness gives one to each thread). Each model call counts for the top-level node it
runs in: LangGraph puts the node path into the callback metadata (``langgraph_checkpoint_ns`` is
``actor:<id>`` for a node of the Reflexion graph and ``actor:<id>|think:<id>`` for a node of a
subgraph it runs), so the ReAct steps and the ALFWorld turns count for ``actor``. Wall time is
the time between the start and the end of each top-level node's run; model time is the time
between the start and the end (or error) of each model call, summed per node, so a node's
``wall_s - model_s`` is what it spent outside model calls (prompt building, parsing, the sandbox,
the game engine, retry backoff).

A usage is ``{node: {"prompt_tokens", "completion_tokens", "calls", "wall_s", "model_s"}}``.
``calls`` counts every request a model received, failed tries and retries included; tokens are
what the models reported (``usage_metadata``, else the provider's ``token_usage``), so a failed
try adds a call but no tokens (and its time to model time).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from reflexion.core.budget import reported_tokens

Usage = dict[str, dict[str, Any]]
"""Counters by node: ``{"actor": {"prompt_tokens": 20, "completion_tokens": 10, …}}``."""

COUNTERS = ("prompt_tokens", "completion_tokens", "calls", "wall_s", "model_s")
TIMES = ("wall_s", "model_s")
"""Counters that are seconds (rounded when merged)."""
OTHER = "other"
"""Where a call made outside any node is counted."""


UNCOUNTED = frozenset({"select_answer"})
"""Nodes left out of the usage: a policy applied to the state when the thread ends (no model
call, microseconds), whose time no trial or reflection line could carry, so that a final
line's usage stays the sum of its thread's lines."""


def zero_usage() -> dict[str, Any]:
    """One node's counters, all zero."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "wall_s": 0.0, "model_s": 0.0}


def merge(*usages: Mapping[str, Mapping[str, Any]] | None) -> Usage:
    """The node-by-node sum of usages (missing counters count as zero)."""
    out: Usage = {}
    for usage in usages:
        for node, counters in (usage or {}).items():
            if not isinstance(counters, Mapping):
                continue
            into = out.setdefault(node, zero_usage())
            for key in COUNTERS:
                value = counters.get(key) or 0
                if isinstance(value, int | float):
                    into[key] += value
    for counters in out.values():
        for key in TIMES:
            counters[key] = round(counters[key], 4)
    return out


def totals(usage: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """All nodes together: ``{"prompt_tokens", "completion_tokens", "calls", "wall_s",
    "model_s"}``."""
    out = zero_usage()
    for counters in merge(usage).values():
        for key in COUNTERS:
            out[key] += counters[key]
    for key in TIMES:
        out[key] = round(out[key], 4)
    return out


def recorded_usage(rows: Iterable[Mapping[str, Any]]) -> dict[str, Usage]:
    """Usage already written to a results file, by thread id: the sum of the ``usage`` of its
    ``trial`` and ``reflection`` lines (each line carries what ran since the thread's previous
    line, so the sum counts every finished node once)."""
    found: dict[str, Usage] = {}
    for row in rows:
        if row.get("type") in ("trial", "reflection") and isinstance(row.get("usage"), dict):
            thread = str(row.get("thread_id"))
            found[thread] = merge(found.get(thread), row["usage"])
    return found


def node_of(metadata: Mapping[str, Any] | None) -> str:
    """The top-level node a run belongs to, from LangGraph's callback metadata."""
    metadata = metadata or {}
    namespace = metadata.get("langgraph_checkpoint_ns")
    if isinstance(namespace, str) and namespace:
        return namespace.split("|", 1)[0].split(":", 1)[0]
    node = metadata.get("langgraph_node")
    return str(node) if node else OTHER


class UsageRecorder(BaseCallbackHandler):
    """Counts tokens, model calls and wall time per top-level node of one graph run.

    :meth:`take` hands over what was counted since the last take (the benchmark takes it when
    a trial or a reflection is written). Safe to call from any thread: nodes of one superstep
    may run in parallel threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roots: set[UUID] = set()
        self._nodes: dict[UUID, tuple[str, float]] = {}
        self._calls: dict[UUID, tuple[str, float]] = {}
        self._pending: Usage = {}

    def _counters(self, node: str) -> dict[str, Any]:
        return self._pending.setdefault(node, zero_usage())

    def take(self) -> Usage:
        """The usage counted since the previous take, and start counting afresh."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return merge(pending)

    # -- node runs (wall time) ---------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            if parent_run_id is None:
                self._roots.add(run_id)  # the graph's own run
            elif parent_run_id in self._roots:
                name = (metadata or {}).get("langgraph_node") or kwargs.get("name") or OTHER
                if name not in UNCOUNTED:
                    self._nodes[run_id] = (str(name), time.perf_counter())

    def _close(self, run_id: UUID) -> None:
        with self._lock:
            opened = self._nodes.pop(run_id, None)
            if opened is not None:
                node, started = opened
                self._counters(node)["wall_s"] += time.perf_counter() - started
            self._roots.discard(run_id)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._close(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._close(run_id)

    # -- model calls (tokens) ----------------------------------------------------------------

    def _call(self, run_id: UUID, metadata: dict[str, Any] | None) -> None:
        node = node_of(metadata)
        with self._lock:
            self._calls[run_id] = (node, time.perf_counter())
            self._counters(node)["calls"] += 1

    def _end_call(self, run_id: UUID) -> dict[str, Any]:
        """Close a model call (the lock held): add its duration as model time, return the
        counters of its node."""
        node, started = self._calls.pop(run_id, (OTHER, None))
        counters = self._counters(node)
        if started is not None:
            counters["model_s"] += time.perf_counter() - started
        return counters

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._call(run_id, metadata)

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._call(run_id, metadata)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt, completion = reported_tokens(response)
        with self._lock:
            counters = self._end_call(run_id)
            counters["prompt_tokens"] += prompt
            counters["completion_tokens"] += completion

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            if run_id in self._calls:
                self._end_call(run_id)
