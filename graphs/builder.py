"""The generic Reflexion loop as a LangGraph ``StateGraph``.

    START -> actor -> evaluator --(success, trial limit, budget)--> select_answer -> END
                        |
                        +--(failure)--> reflector --------------------> actor (next trial)
                                            |                             ^
                                            +--(review on)--> review -----+

``select_answer`` is the answer policy (``Context.select_answer``): the last trial's answer
(the paper) or the best one by the evaluator's evidence; a node, so the drawing shows it. It
also writes why the thread ended (``stopped``: :func:`~reflexion.core.budget.stop_reason`,
the one rule every router asks). Every node but ``retry`` and ``select_answer`` is
:func:`~reflexion.core.budget.metered`: its update adds what it spent to ``spent``.

A family whose retries are not always "reflect, then act" says how with a :class:`Retry`: a
failed trial then goes to the ``retry`` step, whose edges go to the reflector, or straight to
the next attempt when no retry would read a reflection; and the next attempt may first be a
``repair`` node's (the programming graph's compiler fixes), which goes back to the evaluator
when it made one and on to the actor when not. ``retry`` itself does nothing: it is where the
choice is drawn, and where a paired benchmark's shared first trial stops, so that each fork
chooses under its own context. A family may also pass a :class:`Verifier`: a node that
finishes the evaluator's verdict when the evaluator leaves it (the programming graph's
cross-check, which draws other implementations with a model), before the same routing.

The three parts are pluggable node functions (see ``nodes``); the builder wires them, the
state and the runtime context together and returns the uncompiled builder, so callers choose
the checkpointer (none for a LangGraph server, SQLite for the CLI, in-memory in tests) and the
store (the long-term lessons of ``Context.lessons``: ``compile(store=...)``, or the server's).
``review`` (``Context.review_reflections``) pauses the thread with a LangGraph interrupt so a
person can keep, edit or drop the new reflection; by default the reflector goes straight on to
the actor. A run can also stop *before* the reflector with LangGraph's own
``interrupt_before=["reflector"]`` and go on with ``None`` as the input.

With ``Context.lessons`` on, the evaluator node also marks the thread's stored lessons that
the actor saw in a successful later trial as validated (:func:`validating_evaluator`), the
evidence ``Context.lessons.filter="validated"`` recalls by.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_type_hints

from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from reflexion.core.budget import BUDGET_STOPS, StopReason, metered, stop_reason
from reflexion.core.context import Context, get_context
from reflexion.core.lessons import (
    Family,
    current_thread_id,
    family_of,
    store_of,
    validate_lessons,
)
from reflexion.core.progress import emit
from reflexion.core.selection import chosen_index, succeeded
from reflexion.core.state import InputState, OutputState, State
from reflexion.core.steps import Node, Steps, ask, inline, steps_of
from reflexion.nodes.reflector import make_review


def route_after_evaluation(
    state: State, runtime: Runtime[Any]
) -> Literal["reflector", "select_answer"]:
    """Stop on success or when the trial limit is reached (the answer is then chosen);
    otherwise reflect and retry."""
    return "select_answer" if _ends_thread(state, get_context(runtime)) else "reflector"


def _ends_thread(state: Any, ctx: Context) -> bool:
    """Whether a thread stops after its latest evaluated trial: on success, when the
    evaluator says another trial could learn nothing, at the trial limit, or on a budget or
    a plateau of the context (:func:`~reflexion.core.budget.stop_reason`)."""
    return _stop_reason(state, ctx) is not None


def _stop_reason(state: Any, ctx: Context) -> StopReason | None:
    records = list(getattr(state, "evaluations", None) or [])
    return stop_reason(records, getattr(state, "trial", 0), getattr(state, "spent", None), ctx)


@dataclass(frozen=True)
class Retry:
    """How a failed trial leads to the next attempt, where that is more than "reflect, then
    act" (see the module's drawing)."""

    reflects: Callable[[Any, Any], bool] | None = None
    """``reflects(state, ctx)``: whether the failed trial is reflected on; when not, the next
    attempt is made without a new reflection (its prompt would read none). ``None``: always."""
    repair: tuple[str, Any] | None = None
    """A node that may make the next attempt itself, with no model call, and its name."""
    repairs: Callable[[Any, Any], bool] = lambda state, ctx: False
    """``repairs(state, ctx)``: whether the repair node is tried before the actor."""
    repaired: Callable[[Any], bool] = lambda state: False
    """``repaired(state)``, after the repair node: whether it made the attempt."""


def _retry_routes(
    retry: Retry, schema: type[Context]
) -> dict[str, tuple[Callable[..., str], list[str]]]:
    """Each router of a :class:`Retry` graph, by the node it follows, with the nodes it may
    choose (the path map the drawing shows: a ``Literal`` could not name the family's repair
    node). The hooks get the run's context as ``schema``, the graph's context class."""
    repair = retry.repair[0] if retry.repair else None
    onward = ["actor", *([repair] if repair else [])]

    def attempt(state: Any, ctx: Any) -> str:
        return repair if repair and retry.repairs(state, ctx) else "actor"

    def after_evaluation(state: Any, runtime: Runtime[Any]) -> str:
        return "select_answer" if _ends_thread(state, get_context(runtime, schema)) else "retry"

    def after_retry(state: Any, runtime: Runtime[Any]) -> str:
        ctx = get_context(runtime, schema)
        if retry.reflects is None or retry.reflects(state, ctx):
            return "reflector"
        return attempt(state, ctx)

    def after_reflection(state: Any, runtime: Runtime[Any]) -> str:
        ctx = get_context(runtime, schema)
        return "review" if ctx.review_reflections and state.pending_review else attempt(state, ctx)

    def after_review(state: Any, runtime: Runtime[Any]) -> str:
        return attempt(state, get_context(runtime, schema))

    def after_repair(state: Any, runtime: Runtime[Any]) -> str:
        return "evaluator" if retry.repaired(state) else "actor"

    routes = {
        "evaluator": (after_evaluation, ["select_answer", "retry"]),
        "retry": (after_retry, ["reflector", *(onward if retry.reflects else [])]),
        "reflector": (after_reflection, ["review", *onward]),
        "review": (after_review, onward),
    }
    if repair:
        routes[repair] = (after_repair, ["evaluator", "actor"])
    return routes


@dataclass(frozen=True)
class Verifier:
    """A node after the evaluator that writes the verdict when the evaluator leaves it."""

    name: str
    node: Any
    awaits: Callable[[Any], bool]
    """``awaits(state)``, after the evaluator: whether the verdict is left to this node."""


def _verified(
    route: Callable[..., str], targets: list[str], verifier: Verifier | None
) -> tuple[Callable[..., str], list[str]]:
    """The evaluator's router, going first to ``verifier`` when the verdict awaits it."""
    if verifier is None:
        return route, targets

    def after_evaluator(state: Any, runtime: Runtime[Any]) -> str:
        return verifier.name if verifier.awaits(state) else route(state, runtime)

    return after_evaluator, [verifier.name, *targets]


def _skip(state: Any) -> dict[str, Any]:
    """The ``retry`` step: no update (its edges choose the way to the next attempt)."""
    return {}


def route_after_reflection(state: State, runtime: Runtime[Any]) -> Literal["review", "actor"]:
    """A new reflection waits for review when the context asks for it; otherwise (and by
    default) the next trial starts at once."""
    if get_context(runtime).review_reflections and state.pending_review:
        return "review"
    return "actor"


def _validate_after(update: Any, state: Any, runtime: Runtime[Any], family: Family) -> Steps[None]:
    """Report the evaluator's new record on the custom stream (``attempt_scored``); with
    lessons on, a successful trial 2 or later validates the thread's lessons shown in its Ω
    window; otherwise the store is not touched."""
    scored = update.get("evaluations") if isinstance(update, dict) else None
    if scored:
        emit("attempt_scored", trial=scored[-1].get("trial"), record=dict(scored[-1]))
    ctx = get_context(runtime)
    if not ctx.lessons or not isinstance(update, dict):
        return
    records = update.get("evaluations") or []
    record = records[-1] if records else None
    if not isinstance(record, dict) or not record.get("success"):
        return
    trial = int(record.get("trial", getattr(state, "trial", 0)))
    window = list(getattr(state, "reflections", None) or [])
    if trial < 2 or not window:
        return
    yield from validate_lessons(
        store_of(runtime),
        family_of(family, state, ctx),
        thread_id=current_thread_id(),
        trial=trial,
        window=window,
        ttl_minutes=ctx.lessons.ttl_minutes,
    )


def select_answer(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
    """The answer the thread returns, once it ends (``Context.select_answer``): ``last``, the
    last trial's, as the evaluator left it (the paper); ``best``, the best trial's by the
    evaluator's evidence (:mod:`reflexion.core.selection`), also whenever a budget or a
    plateau cut the thread short (the best attempt so far). Writes why the thread ended
    (``stopped``). A node of its own so that the graph's drawing shows the policy."""
    records = list(getattr(state, "evaluations", None) or [])
    ctx = get_context(runtime)
    stopped = _stop_reason(state, ctx)
    last = {"answer": getattr(state, "answer", None), "solved": getattr(state, "solved", False)}
    if ctx.select_answer != "best" and stopped not in BUDGET_STOPS:
        emit("answer_chosen", trial=len(records) or None, why="last", stopped=stopped, **last)
        return {"stopped": stopped}
    index = chosen_index(records, "best")
    if index is None or index == len(records) - 1:
        emit("answer_chosen", trial=len(records) or None, why="best", stopped=stopped, **last)
        return {"stopped": stopped}
    chosen = {"answer": records[index]["answer"], "solved": succeeded(records, index)}
    emit("answer_chosen", trial=index + 1, why="best", stopped=stopped, **chosen)
    return {**chosen, "stopped": stopped}


def _input_schema(node: Any) -> type[Any] | None:
    """The input schema LangGraph would read from a node function's first parameter (a
    :class:`~reflexion.core.steps.Node`'s core's: LangGraph reads none from a Runnable)."""
    node = node.core if isinstance(node, Node) else node
    try:
        first = next(iter(inspect.signature(node).parameters))
        hint = get_type_hints(node).get(first)
    except (StopIteration, TypeError, ValueError, NameError):
        return None
    if isinstance(hint, type) and get_type_hints(hint):
        return hint
    return None


def validating_evaluator(evaluator: Any, family: Family) -> Node:
    """The evaluator node followed by lesson validation (see :func:`_validate_after`).
    ``evaluator`` is a node function taking ``(state, runtime)`` or ``(state)``, sync or async,
    a :class:`~reflexion.core.steps.Node`, or a Runnable; the node has both paths (a sync
    function runs in a worker thread on the async one)."""
    call: Callable[[Any, Runtime[Any]], Steps[Any]]
    role = evaluator.labels.role if isinstance(evaluator, Node) else "evaluator"
    if isinstance(evaluator, Node):
        core = evaluator.core
        takes_runtime = "runtime" in inspect.signature(core).parameters

        def call(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
            return core(state, runtime) if takes_runtime else core(state)

    elif isinstance(evaluator, Runnable):
        runnable = evaluator

        def call(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
            return ask(runnable, state)

    else:
        takes_runtime = "runtime" in inspect.signature(evaluator).parameters
        steps = steps_of(evaluator)

        def call(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
            return steps(state, runtime) if takes_runtime else steps(state)

    # ``state`` is untyped: the builder hands the evaluator's own input schema to add_node
    def evaluator_node(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
        update = yield from call(state, runtime)
        yield from _validate_after(update, state, runtime, family)
        return update

    return Node(evaluator_node, role=role, family=family)


def build_reflexion_graph(
    actor: Any,
    evaluator: Any,
    reflector: Any,
    *,
    state_schema: type[Any] = State,
    input_schema: type[Any] = InputState,
    output_schema: type[Any] = OutputState,
    setup: tuple[str, Any] | None = None,
    family: Family,
    context_schema: type[Context] = Context,
    retry: Retry | None = None,
    verifier: Verifier | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """Wire actor, evaluator and reflector nodes into the Reflexion loop, with the review node
    after the reflector; ``setup`` is an optional ``(name, node)`` run once before the first
    trial (e.g. the test writer); ``family`` is the task family of the lessons the review
    node edits and the evaluator validates (the reflector's); ``context_schema`` is the
    graph's context class: :class:`Context`, or a family's, which adds the fields its nodes
    read (what Studio's form and a server's schema then list); ``retry``, where a failed trial
    need not be reflected on or the next attempt may be a repair (:class:`Retry`);
    ``verifier``, a node that may finish the evaluator's verdict (:class:`Verifier`)."""
    builder = StateGraph(
        state_schema,
        context_schema=context_schema,
        input_schema=input_schema,
        output_schema=output_schema,
    )
    builder.add_node("actor", metered(actor), input_schema=_input_schema(actor))
    builder.add_node(
        "evaluator",
        metered(validating_evaluator(evaluator, family)),
        input_schema=_input_schema(evaluator),
    )
    builder.add_node("reflector", metered(reflector), input_schema=_input_schema(reflector))
    review: Any = make_review(family)  # serves every graph's state class, like the reflector
    builder.add_node("review", metered(review))
    chooser: Any = inline(select_answer)  # reads the evaluations every graph's state has
    builder.add_node("select_answer", chooser, input_schema=state_schema)
    if setup is not None:
        name, node = setup
        builder.add_node(name, metered(node), input_schema=_input_schema(node))
        builder.add_edge(START, name)
        builder.add_edge(name, "actor")
    else:
        builder.add_edge(START, "actor")
    builder.add_edge("actor", "evaluator")
    builder.add_edge("select_answer", END)
    if verifier is not None:
        verifying = validating_evaluator(verifier.node, family)
        builder.add_node(
            verifier.name, metered(verifying), input_schema=_input_schema(verifier.node)
        )
    if retry is None:
        ends, targets = _verified(route_after_evaluation, ["reflector", "select_answer"], verifier)
        builder.add_conditional_edges("evaluator", ends, targets)
        if verifier is not None:
            builder.add_conditional_edges(verifier.name, route_after_evaluation)
        builder.add_conditional_edges("reflector", route_after_reflection)
        builder.add_edge("review", "actor")
        return builder
    builder.add_node("retry", inline(_skip))
    if retry.repair is not None:
        repair_name, repair = retry.repair
        builder.add_node(repair_name, metered(repair), input_schema=_input_schema(repair))
    for source, (router, targets) in _retry_routes(retry, context_schema).items():
        if source == "evaluator":
            if verifier is not None:
                builder.add_conditional_edges(verifier.name, router, targets)
            router, targets = _verified(router, targets, verifier)
        builder.add_conditional_edges(source, router, targets)
    return builder
