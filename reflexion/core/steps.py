"""One body of node code, two ways to run it: a node's calls out (a model, the sandbox or
anything else that blocks) are *steps* its code yields, and a sync or an async driver
performs them.

A node's core is a generator: ``reply = yield from ask(llm, messages, stop=STOP)`` where a plain
function would write ``reply = llm.invoke(messages, stop=STOP)``. :class:`Node` wraps such a core as
a LangGraph node with both paths: ``graph.invoke`` drives it with the blocking calls (the same
calls, in the same order, as a plain function), ``graph.ainvoke`` awaits each one (``ainvoke``;
``asyncio.to_thread`` for the sandbox and other blocking code), so a LangGraph server's event loop
is not held by a thread per run. An exception raised by a step is thrown back into the core at its
``yield``. Each model call carries the run name, tags and metadata of :mod:`reflexion.core.tracing`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.config import get_config, get_store, get_stream_writer
from langgraph.runtime import get_runtime

from reflexion.core.tracing import Labels, labelled, traced_config

T = TypeVar("T")


class Step:
    """One call out of a node: :meth:`run` blocks, :meth:`arun` awaits."""

    def run(self) -> Any:
        raise NotImplementedError

    async def arun(self) -> Any:
        raise NotImplementedError


Steps = Generator[Step, Any, T]
"""A node core (or a helper of one): yields steps, receives their results, returns ``T``."""


@dataclass(frozen=True)
class Ask(Step):
    """A model (or any Runnable: a structured-output model, ``prompt | model``) invoked on
    ``value``, with the call's tracing config (:func:`~reflexion.core.tracing.traced_config`)."""

    model: Runnable[Any, Any]
    value: Any
    kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Any:
        return self.model.invoke(self.value, traced_config(), **self.kwargs)

    async def arun(self) -> Any:
        return await self.model.ainvoke(self.value, traced_config(), **self.kwargs)


@dataclass(frozen=True)
class Block(Step):
    """Blocking code (the sandbox, a game engine, a Wikipedia lookup): called as it is, or in
    a worker thread by the async driver."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Any:
        return self.fn(*self.args, **self.kwargs)

    async def arun(self) -> Any:
        return await asyncio.to_thread(self.fn, *self.args, **self.kwargs)


def ask(model: Runnable[Any, Any], value: Any, **kwargs: Any) -> Steps[Any]:
    """``model.invoke(value, **kwargs)`` (or ``ainvoke``), as a step."""
    return (yield Ask(model, value, kwargs))


def block(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Steps[T]:
    """``fn(*args, **kwargs)``, in a worker thread on the async path, as a step."""
    result: T = yield Block(fn, args, kwargs)
    return result


def drive(steps: Steps[T]) -> T:
    """Run a core to its end with blocking calls. A core left at a ``yield`` (a step raised
    what is no ``Exception``: the run was cancelled or interrupted) is closed here, so that
    its ``finally`` blocks run in the node's own context."""
    try:
        step = next(steps)
        while True:
            try:
                result = step.run()
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        steps.close()


async def adrive(steps: Steps[T]) -> T:
    """Run a core to its end, awaiting each call (a core left at a ``yield`` closed, as
    :func:`drive` does)."""
    try:
        step = next(steps)
        while True:
            try:
                result = await step.arun()
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        steps.close()


_INJECTED: dict[str, Callable[[], Any]] = {
    "runtime": get_runtime,
    "config": get_config,
    "store": get_store,
    "writer": get_stream_writer,
}
"""What LangGraph hands a node function by its parameter's name, read from the running
node's config."""


def _injects(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters of ``fn`` that :data:`_INJECTED` fills in when it runs as a node."""
    parameters = inspect.signature(fn).parameters
    return tuple(name for name in _INJECTED if name in parameters)


def _injected(names: tuple[str, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with each of ``names`` it lacks filled in from the running node."""
    return {**{name: _INJECTED[name]() for name in names if name not in kwargs}, **kwargs}


class Node(Runnable[Any, Any]):
    """A LangGraph node with a sync and an async path from one generator ``core`` (taking
    the state and, optionally, ``runtime``, as a node function does). ``role`` (actor,
    evaluator, reflector…) and ``family`` (the graph's task family, or a function of the
    state giving it) label its model calls (:mod:`reflexion.core.tracing`); ``acts``: its
    calls belong to the trial it starts (an actor's), not to the state's last one.

    A Runnable, so that LangGraph runs it as it is on either path (a function handed to
    ``add_node`` would run in a worker thread on the async one); it opens no run of its own
    for a tracer, as a node function does not."""

    def __init__(
        self,
        core: Callable[..., Steps[Any]],
        *,
        role: str,
        family: Any = None,
        acts: bool = False,
        name: str | None = None,
        model: str | None = None,
    ) -> None:
        self.core = core
        self.labels = Labels(role=role, family=family, acts=acts)
        self.name = name or core.__name__
        self.model = model
        self._injects = _injects(core)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The sync path, called as a plain node function is."""
        with labelled(self.labels, args, kwargs):
            return drive(self.core(*args, **kwargs))

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        """The async path, called as a plain async node function is."""
        with labelled(self.labels, args, kwargs):
            return await adrive(self.core(*args, **kwargs))

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self(input, **_injected(self._injects, kwargs))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self.acall(input, **_injected(self._injects, kwargs))


@dataclass(frozen=True)
class Awaited(Step):
    """An async function's call (a user's async evaluator or actor): awaited on the async
    path, run to its end on an event loop of its own on the sync one."""

    call: Callable[[], Any]

    def run(self) -> Any:
        return asyncio.run(self.call())

    async def arun(self) -> Any:
        return await self.call()


class Inline(Runnable[Any, Any]):
    """A node that makes no call out (it only reads the state), run as it is on either
    path: no worker thread for the async one."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self._injects = _injects(fn)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.fn(input, **_injected(self._injects, kwargs))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.invoke(input, config, **kwargs)


def inline(fn: Callable[..., Any]) -> Inline:
    """``fn`` as an :class:`Inline` node."""
    return Inline(fn)


def steps_of(node: Any) -> Callable[..., Steps[Any]]:
    """A node's core: a :class:`Node`'s own, or a plain function's calls as one step each
    (an async function awaited, a sync one run in a worker thread on the async path)."""
    if isinstance(node, Node):
        return node.core
    if inspect.iscoroutinefunction(node):

        def awaited(*args: Any, **kwargs: Any) -> Steps[Any]:
            return (yield Awaited(functools.partial(node, *args, **kwargs)))

        return awaited

    def called(*args: Any, **kwargs: Any) -> Steps[Any]:
        return (yield Block(node, args, kwargs))

    return called
