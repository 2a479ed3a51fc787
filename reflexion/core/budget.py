"""What a thread has spent, and why it stops: the budgets and the plateau of ``Context``.

Every node of the loop but the ``retry`` step and ``select_answer`` runs inside
:func:`metered`: the tokens each model call in it reports (its ``usage_metadata``, else the
provider's ``token_usage``), its cost and the node's wall time are added to the state's
``spent`` channel with the node's own update. So the spending is in the thread's checkpoints
and a resumed thread goes on counting from what it had spent (a node that did not finish, cut
by a crash, counts nothing). A model call's cost is what its provider reports with the reply
(``response_metadata["cost"]`` or ``token_usage["cost"]``, as OpenRouter's does), else its
tokens at ``Context.budget.prompt_price`` and ``.completion_price`` (US dollars per million
tokens). Time is the nodes' running time summed, from the thread's first trial on: time while
the thread is paused (a review, a kill before the resume) does not count.

:func:`stop_reason` is the loop's one rule for ending a thread after an evaluated trial; the
routers ask it, and ``select_answer`` writes its answer to the state's ``stopped``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tracers.context import register_configure_hook
from langgraph.runtime import get_runtime
from langgraph.types import Command
from typing_extensions import TypedDict

from reflexion.core.context import Context, get_context
from reflexion.core.selection import rank

StopReason = Literal[
    "solved",
    "nothing_to_learn",
    "max_trials",
    "token_budget",
    "cost_budget",
    "time_budget",
    "plateau",
]
"""Why a thread ended (``OutputState.stopped``): ``solved``, the last trial succeeded;
``nothing_to_learn``, the evaluator said another trial could learn nothing (e.g. no tests to
run); ``max_trials``, the trial limit; ``token_budget``, ``cost_budget``, ``time_budget``, what
the thread had spent reached ``Context.budget.tokens``, ``.cost`` or
``.seconds``; ``plateau``, ``Context.budget.plateau_trials`` trials in a row scored no
better than the best before them. When two hold at once, the first in this order is given."""

BUDGET_STOPS: frozenset[str] = frozenset({"token_budget", "cost_budget", "time_budget", "plateau"})
"""The reasons that cut a thread short of its trial limit: its answer is then its best attempt
so far, whatever ``Context.select_answer`` says."""


class Spent(TypedDict, total=False):
    """What a thread's nodes have spent (the state's ``spent``; summed node by node)."""

    prompt_tokens: int
    completion_tokens: int
    calls: int
    """Model calls that ended with a reply."""
    cost: float
    """US dollars: the providers' reported costs, else the tokens at the context's prices."""
    seconds: float
    """The nodes' running time."""


def add_spent(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> Spent:
    """The reducer of the ``spent`` channel: the key-by-key sum."""
    out: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, int | float):
            out[key] = out.get(key, 0) + value
    return out  # type: ignore[return-value]


def spent_tokens(spent: Mapping[str, Any] | None) -> int:
    """Prompt and completion tokens together."""
    spent = spent or {}
    return int(spent.get("prompt_tokens", 0)) + int(spent.get("completion_tokens", 0))


# -- the meter -------------------------------------------------------------------------------


def reported_tokens(response: LLMResult) -> tuple[int, int]:
    """The prompt and completion tokens a reply reports (``usage_metadata``, else the
    provider's ``token_usage``)."""
    prompt = completion = 0
    reported = False
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                reported = True
                prompt += int(usage.get("input_tokens") or 0)
                completion += int(usage.get("output_tokens") or 0)
    if not reported:
        token_usage = (response.llm_output or {}).get("token_usage") or {}
        prompt = int(token_usage.get("prompt_tokens") or 0)
        completion = int(token_usage.get("completion_tokens") or 0)
    return prompt, completion


def _reported_cost(response: LLMResult) -> float | None:
    """The cost a provider reported with a reply, if it did."""
    places: list[Any] = [response.llm_output or {}]
    for generations in response.generations:
        for generation in generations:
            places.append(getattr(getattr(generation, "message", None), "response_metadata", {}))
    for meta in places:
        if not isinstance(meta, Mapping):
            continue
        usage = meta.get("token_usage")
        for cost in (meta.get("cost"), usage.get("cost") if isinstance(usage, Mapping) else None):
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                return float(cost)
    return None


class _Meter(BaseCallbackHandler):
    """Counts the model calls made while one node runs (thread-safe: a node may make calls
    from several threads)."""

    # only the model calls' ends are read: the other events are not sent to it
    ignore_chain = ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True

    def __init__(self, prices: tuple[float, float]) -> None:
        self._lock = threading.Lock()
        self._prices = prices
        self.spent: Spent = {}

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        prompt, completion = reported_tokens(response)
        cost = _reported_cost(response)
        if cost is None:
            cost = (prompt * self._prices[0] + completion * self._prices[1]) / 1_000_000
        with self._lock:
            self.spent = add_spent(
                self.spent,
                {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "calls": 1,
                    "cost": cost,
                },
            )


_METER: ContextVar[_Meter | None] = ContextVar("reflexion_meter", default=None)
register_configure_hook(_METER, inheritable=True)  # every model call made under it reports


def _prices() -> tuple[float, float]:
    """The run's token prices (zero outside a run, or where the context gives none)."""
    try:
        ctx = get_context(get_runtime())
    except RuntimeError:  # outside a graph run
        return (0.0, 0.0)
    return (ctx.budget.prompt_price or 0.0, ctx.budget.completion_price or 0.0)


def _with_spent(update: Any, meter: _Meter, started: float) -> Any:
    """The node's update with what it spent added (a dict, ``None`` or a ``Command``)."""
    spent = add_spent(meter.spent, {"seconds": time.perf_counter() - started})
    if update is None:
        return {"spent": spent}
    if isinstance(update, dict):
        return {**update, "spent": spent}
    if isinstance(update, Command) and isinstance(update.update, dict | None):
        return Command(
            graph=update.graph,
            update={**(update.update or {}), "spent": spent},
            resume=update.resume,
            goto=update.goto,
        )
    return update  # another form of update: left as it is, uncounted


@contextmanager
def _metering() -> Iterator[tuple[_Meter, float]]:
    """Within: every model call reports to a new meter (the run's prices); yields it with the
    time it started."""
    meter = _Meter(_prices())
    reset = _METER.set(meter)
    try:
        yield meter, time.perf_counter()
    finally:
        _METER.reset(reset)


def metered(node: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """A Runnable node (an actor subgraph) whose update also adds what it spent to
    ``spent``; it stays a subgraph to LangGraph (drawn, checkpointed). The loop's other nodes
    are metered inside their one wrapper (:func:`metered_steps`)."""
    runnable = node

    def call(state: Any, config: RunnableConfig) -> Any:
        with _metering() as (meter, started):
            update = runnable.invoke(state, config)
        return _with_spent(update, meter, started)

    async def acall(state: Any, config: RunnableConfig) -> Any:
        with _metering() as (meter, started):
            update = await runnable.ainvoke(state, config)
        return _with_spent(update, meter, started)

    wrapped = RunnableLambda(call, afunc=acall, name=getattr(node, "name", None))
    wrapped.__wrapped__ = node  # type: ignore[attr-defined]  # what it meters, as wraps says
    return wrapped


def metered_steps(steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """A node core's run (:mod:`reflexion.core.steps`) whose update also adds what it spent
    to ``spent``: the meter is set while the core runs, on either driver's path."""
    with _metering() as (meter, started):
        update = yield from steps
    return _with_spent(update, meter, started)


# -- the stop rule ---------------------------------------------------------------------------


def plateaued(records: Sequence[Mapping[str, Any]], trials: int) -> bool:
    """Whether the last ``trials`` records all scored no better (success, then score) than
    the best record before them."""
    if trials < 1 or len(records) <= trials:
        return False
    best = max(rank(r) for r in records[:-trials])
    return all(rank(r) <= best for r in records[-trials:])


def stop_reason(
    records: Sequence[Mapping[str, Any]],
    trial: int,
    spent: Mapping[str, Any] | None,
    ctx: Context,
) -> StopReason | None:
    """Why the thread ends after its latest evaluated trial, or ``None`` when it goes on."""
    last = records[-1] if records else None
    if last and last.get("success"):
        return "solved"
    if last and last.get("last"):
        return "nothing_to_learn"
    if trial >= ctx.trial_limit:
        return "max_trials"
    spent = spent or {}
    limits = ctx.budget
    if limits.tokens is not None and spent_tokens(spent) >= limits.tokens:
        return "token_budget"
    if limits.cost is not None and float(spent.get("cost", 0.0)) >= limits.cost:
        return "cost_budget"
    if limits.seconds is not None and float(spent.get("seconds", 0.0)) >= limits.seconds:
        return "time_budget"
    if limits.plateau_trials is not None and plateaued(records, limits.plateau_trials):
        return "plateau"
    return None


__all__ = [
    "BUDGET_STOPS",
    "Spent",
    "StopReason",
    "add_spent",
    "metered",
    "plateaued",
    "spent_tokens",
    "stop_reason",
]
