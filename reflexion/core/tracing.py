"""What each model call tells a tracer (LangSmith, OpenTelemetry, any LangChain callback
handler): its run name is the node's role, and its tags and metadata say which graph, role,
trial, task and strategy it served.

- ``reflexion_graph``: the graph's task family (``qa``, ``react``, ``programming-py``,
  ``alfworld-clean``, or the family your own graph was built with);
- ``reflexion_role``: ``actor``, ``evaluator``, ``reflector``, ``test_writer`` (also the
  run's name);
- ``reflexion_trial``: the trial the call belongs to (1 for the first attempt; 0 before it);
- ``reflexion_task_id``: the task's id (``state.task_id``), or None;
- ``reflexion_strategy``: ``Context.strategy``.

The tags are ``reflexion``, ``role:<role>``, ``graph:<family>``, ``trial:<n>`` and
``strategy:<strategy>``. LangGraph's own metadata (``langgraph_node``, ``thread_id``…) is
kept: the labels are added to the node's config, per call, so a model passed in by a user
gets them as the built-in ones do, and ``with_structured_output`` or ``bind`` keep working.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from reflexion.core.context import get_context

Family = str | Callable[[Any], str]
"""A graph's task family as its model calls name it (``reflexion_graph``): a name, or a
function of the state that gives it (per language, per ALFWorld task kind)."""


@dataclass(frozen=True)
class Labels:
    """A node's part of the labels: its role, its graph's family (a string or a function of
    the state), and whether its calls belong to the trial it starts."""

    role: str
    family: Family | None = None
    acts: bool = False


_CURRENT: ContextVar[RunnableConfig | None] = ContextVar("reflexion_trace", default=None)


def trace_config(labels: Labels, state: Any, runtime: Any) -> RunnableConfig:
    """The run name, tags and metadata of a model call made by the node ``labels`` on
    ``state`` under ``runtime``."""
    family = labels.family(state) if callable(labels.family) else labels.family
    trial = int(getattr(state, "trial", 0) or 0) + (1 if labels.acts else 0)
    strategy = _strategy(getattr(runtime, "context", None))
    metadata = {
        "reflexion_graph": family,
        "reflexion_role": labels.role,
        "reflexion_trial": trial,
        "reflexion_task_id": getattr(state, "task_id", None),
        "reflexion_strategy": strategy,
    }
    tags = ["reflexion", f"role:{labels.role}", f"trial:{trial}", f"strategy:{strategy}"]
    if family:
        tags.insert(2, f"graph:{family}")
    return RunnableConfig(run_name=labels.role, tags=tags, metadata=metadata)


def _strategy(ctx: Any) -> Any:
    """The strategy a run's context names (a mapping's key, an object's field), or the
    default's when there is no context."""
    if ctx is None:
        return get_context(None).strategy
    if isinstance(ctx, dict):
        return ctx.get("strategy") or get_context(None).strategy
    return getattr(ctx, "strategy", None)


@contextmanager
def labelled(labels: Labels, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
    """Within: model calls carry the labels of a node called with ``args`` and ``kwargs``
    (the state first, ``runtime`` as LangGraph passes it)."""
    state = args[0] if args else kwargs.get("state")
    runtime = kwargs.get("runtime", args[1] if len(args) > 1 else None)
    token = _CURRENT.set(trace_config(labels, state, runtime))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def traced_config() -> RunnableConfig | None:
    """The config a model call passes (None outside a labelled node: then it inherits the
    caller's config alone)."""
    current = _CURRENT.get()
    if current is None:
        return None
    return RunnableConfig(
        run_name=current.get("run_name", ""),
        tags=list(current.get("tags", [])),
        metadata=dict(current.get("metadata", {})),
    )
