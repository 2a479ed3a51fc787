"""The Reflexion loop: the one module that owns the trial.

    START -> actor -> evaluator --(success, trial limit, budget)--> select_answer -> END
                        |
                        +--(failure)--> reflector --------------------> actor (next trial)
                                            |                             ^
                                            +--(review on)--> review -----+

A task family plugs in three node functions (see ``nodes``): an *actor* that returns its
attempt (``answer``, ``trajectory`` and the family's own fields), an *evaluator* that returns
an :class:`~reflexion.nodes.evaluator.Evaluation`, and a *reflector* that returns a lesson,
or none. Everything else about a trial is done here, around those nodes, once for every
family:

- before the actor (:func:`trial_actor`): the empty-task check and the ``trial_started``
  event; after it, the trial counter (``trial``). An actor that is a subgraph of its own
  (ReAct's, ALFWorld's) cannot be wrapped without its drawing and checkpoints changing: its
  first node, ``begin``, is made here instead (:func:`trial_start`, handed to the module that
  builds the subgraph), the same bookkeeping around the family's check and fresh trial;
- after the evaluator (:func:`trial_evaluator`): the trial record built from the
  ``Evaluation`` and the ``attempt_scored`` event;
- one wrapper around every node but ``retry`` and ``select_answer`` (:func:`loop_node`): the
  labels of its model calls and the metering of what it spent (an actor subgraph:
  :func:`~reflexion.core.budget.metered`);
- the stop rule every router asks (:func:`~reflexion.core.budget.stop_reason`) and the answer
  choice (:func:`select_answer`, ``Context.select_answer``): the last trial's answer (the
  paper) or the best one by the evaluator's evidence; a node, so the drawing shows it. It also
  writes why the thread ended (``stopped``).

A family whose retries are not always "reflect, then act" says how with a :class:`Retry`: a
failed trial then goes to the ``retry`` step, whose edges go to the reflector, or straight to
the next attempt when no retry would read a reflection; and the next attempt may first be a
family node's (the programming graph's compiler fixes, added by its graph module with
:func:`after_repair`), which goes back to the evaluator when it made one and on to the actor
when not. ``retry`` itself does nothing: it is where the choice is drawn, and where a paired
benchmark's shared first trial stops, so that each fork chooses under its own context. A
family adds its nodes before the first trial (the test writer) in its own graph module:
:func:`loop_graph` starts the graph, :func:`add_loop` adds the loop to it.

:func:`build_reflexion_graph` wires the state and the runtime context and returns the
uncompiled builder, so callers choose the checkpointer (none for a LangGraph server, SQLite for
the CLI, in-memory in tests). ``review`` (``Context.review_reflections``) pauses
the thread with a LangGraph interrupt so a person can keep, edit or drop the new reflection; by
default the reflector goes straight on to the actor. A run can also stop *before* the
reflector with LangGraph's own ``interrupt_before=["reflector"]`` and go on with ``None`` as
the input.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, get_type_hints

from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from reflexion.core.budget import BUDGET_STOPS, StopReason, metered, metered_steps, stop_reason
from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.progress import emit
from reflexion.core.selection import chosen_index, succeeded
from reflexion.core.state import InputState, OutputState, State, TrialRecord
from reflexion.core.steps import Node, Steps, ask, inline, steps_of
from reflexion.core.tracing import Family
from reflexion.nodes.common import Check, Fresh
from reflexion.nodes.evaluator import Evaluation
from reflexion.nodes.reflector import make_review


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
    repair: str | None = None
    """The name of a family node that may make the next attempt itself, with no model call
    (the family's graph module adds it, with :func:`after_repair`'s edges)."""
    repairs: Callable[[Any, Any], bool] = lambda state, ctx: False
    """``repairs(state, ctx)``: whether the repair node is tried before the actor."""


def _routes(
    retry: Retry | None, schema: type[Context]
) -> dict[str, tuple[Callable[..., str], list[str]]]:
    """Each router of the loop, by the node it follows, with the nodes it may choose (the path
    map the drawing shows: a ``Literal`` could not name a family's repair node). Without a
    :class:`Retry` a failed trial goes straight to the reflector; with one, to the ``retry``
    step first. The routers and hooks get the run's context as ``schema``, the graph's context
    class (its defaults where a caller passes no context)."""
    stepped = retry is not None
    hooks = retry or Retry()
    repair = hooks.repair
    onward = ["actor", *([repair] if repair else [])]
    failed: Literal["retry", "reflector"] = "retry" if stepped else "reflector"

    def attempt(state: Any, ctx: Any) -> str:
        return repair if repair and hooks.repairs(state, ctx) else "actor"

    def after_evaluation(
        state: Any, runtime: Runtime[Any]
    ) -> Literal["select_answer", "retry", "reflector"]:
        return "select_answer" if _ends_thread(state, get_context(runtime, schema)) else failed

    def after_retry(state: Any, runtime: Runtime[Any]) -> str:
        ctx = get_context(runtime, schema)
        if hooks.reflects is None or hooks.reflects(state, ctx):
            return "reflector"
        return attempt(state, ctx)

    def after_reflection(state: Any, runtime: Runtime[Any]) -> str:
        ctx = get_context(runtime, schema)
        return "review" if ctx.review_reflections and state.pending_review else attempt(state, ctx)

    def after_review(state: Any, runtime: Runtime[Any]) -> str:
        return attempt(state, get_context(runtime, schema))

    evaluated = ["select_answer", "retry"] if stepped else ["reflector", "select_answer"]
    retried = {"retry": (after_retry, ["reflector", *(onward if hooks.reflects else [])])}
    return {
        "evaluator": (after_evaluation, evaluated),
        **(retried if stepped else {}),
        "reflector": (after_reflection, ["review", *onward]),
        "review": (after_review, onward),
    }


def after_repair(
    repaired: Callable[[Any], bool],
) -> tuple[Callable[..., str], list[str]]:
    """The router after a family's repair node (:attr:`Retry.repair`), with its path map:
    to the evaluator when ``repaired(state)`` says it made the attempt, else to the actor."""

    def route(state: Any) -> str:
        return "evaluator" if repaired(state) else "actor"

    return route, ["evaluator", "actor"]


def _skip(state: Any) -> dict[str, Any]:
    """The ``retry`` step: no update (its edges choose the way to the next attempt)."""
    return {}


def _scored(update: Any) -> None:
    """Report the evaluator's new record on the custom stream (``attempt_scored``)."""
    scored = update.get("evaluations") if isinstance(update, dict) else None
    if scored:
        emit("attempt_scored", trial=scored[-1].get("trial"), record=dict(scored[-1]))


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


def _steps_and_schema(
    node: Any,
) -> tuple[Callable[[Any, Runtime[Any]], Steps[Any]], type[Any] | None]:
    """A family's node as steps taking ``(state, runtime)``, and the input schema LangGraph
    would read from its first parameter. ``node`` is a node function taking ``(state,
    runtime)`` or ``(state)``, sync or async, a generator of steps, a
    :class:`~reflexion.core.steps.Node`, or a Runnable (called with the state)."""
    if isinstance(node, Runnable) and not isinstance(node, Node):
        runnable = node
        return (lambda state, runtime: ask(runnable, state)), None
    fn = node.core if isinstance(node, Node) else node
    steps = fn if isinstance(node, Node) or inspect.isgeneratorfunction(fn) else steps_of(fn)
    takes_runtime = "runtime" in inspect.signature(fn).parameters
    schema: type[Any] | None = None
    try:
        first = next(iter(inspect.signature(fn).parameters))
        hint = get_type_hints(fn).get(first)
    except (StopIteration, TypeError, ValueError, NameError):
        hint = None
    if isinstance(hint, type) and get_type_hints(hint):
        schema = hint

    def call(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
        return steps(state, runtime) if takes_runtime else steps(state)

    return call, schema


def loop_node(core: Callable[[Any, Runtime[Any]], Steps[Any]], **labels: Any) -> Node:
    """The one wrapper of a node in a loop graph: ``core`` (steps taking ``(state, runtime)``)
    as a :class:`~reflexion.core.steps.Node` with both paths and the ``labels`` of its model
    calls (role, family, name, model, acts), whose update also carries what it spent
    (:func:`~reflexion.core.budget.metered_steps`)."""

    def node(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
        return (yield from metered_steps(core(state, runtime)))

    labels.setdefault("name", core.__name__)
    return Node(node, **labels)


def family_node(node: Any, role: str, family: Family) -> tuple[Node, type[Any] | None]:
    """A family's own node (the reflector, the test writer…) wrapped once by the loop
    (:func:`loop_node`), with its input schema for ``add_node``."""
    call, schema = _steps_and_schema(node)
    return loop_node(call, **_labels(node, role, family)), schema


def _labels(node: Any, role: str, family: Family) -> dict[str, Any]:
    """The labels a family's node brings to the loop's wrapper (its name and model)."""
    if isinstance(node, Node):
        return {"role": node.labels.role, "family": family, "name": node.name, "model": node.model}
    return {"role": role, "family": family}


def _trial(
    state: Any,
    runtime: Runtime[Any],
    *,
    empty_task: str | None,
    check: Check | None = None,
    fresh: Fresh | None = None,
    attempt: Callable[[Any, Runtime[Any]], Steps[dict[str, Any]]] | None = None,
) -> Steps[dict[str, Any]]:
    """One trial's bookkeeping, for the actor node and a subgraph actor's first node alike, in
    this order: the empty-task check (``empty_task`` says what to give; ``None``: the family
    checks its own input), the family's ``check``, the ``trial_started`` event, the fresh
    trial's fields (``fresh``, handed what ``check`` returned), the ``attempt`` made from the
    state with those fields, and the trial counter. Returns the update: counter, fields, then
    the attempt's own."""
    if empty_task is not None and not state.task.strip():
        raise ReflexionError(f"the task is empty: {empty_task}")
    checked = (yield from check(state, runtime)) if check is not None else None
    emit("trial_started", trial=state.trial + 1)
    fields = (yield from fresh(state, runtime, checked)) if fresh is not None else {}
    fresh_state = replace(state, **fields) if fields else state
    update = (yield from attempt(fresh_state, runtime)) if attempt is not None else {}
    return {"trial": state.trial + 1, **fields, **update}


def trial_actor(actor: Any, family: Family, empty_task: str | None) -> tuple[Any, type[Any] | None]:
    """The actor node: the family's ``actor`` (a node that returns only its attempt) inside the
    trial's bookkeeping (:func:`_trial`): before it, the empty-task check and the
    ``trial_started`` event; after it, the trial counter.
    An actor subgraph (a Runnable) runs as it is: its first node is :func:`trial_start`'s.
    Returns the node and its input schema."""
    if isinstance(actor, Runnable) and not isinstance(actor, Node):
        return metered(actor), None
    call, schema = _steps_and_schema(actor)

    def actor_node(state: Any, runtime: Runtime[Any]) -> Steps[dict[str, Any]]:
        return (yield from _trial(state, runtime, empty_task=empty_task, attempt=call))

    return loop_node(actor_node, acts=True, **_labels(actor, "actor", family)), schema


def trial_start(
    fresh: Fresh,
    *,
    family: Family,
    empty_task: str | None,
    check: Check | None = None,
) -> Node:
    """The first node of an actor that is a subgraph of its own (ReAct's and ALFWorld's
    ``begin``; see :class:`~reflexion.nodes.common.TrialStart`): the trial's bookkeeping
    (:func:`_trial`) around the family's fresh trial. ``check(state, runtime)``, when given,
    checks the family's own input before the trial is announced (ALFWorld: the game);
    ``fresh(state, runtime, checked)``, given what it returned (or ``None``), gives the fields
    the trial starts from; the node returns them with the trial counter. ``family`` labels the
    node."""

    def begin(state: Any, runtime: Runtime[Any]) -> Steps[dict[str, Any]]:
        return (yield from _trial(state, runtime, empty_task=empty_task, check=check, fresh=fresh))

    return Node(begin, role="actor", family=family, acts=True)


def trial_repair(repair: Any, family: Family, source: str) -> tuple[Any, type[Any] | None]:
    """A family node that may make the next attempt itself (:attr:`Retry.repair`), inside the
    same bookkeeping as the actor's: when its update carries an attempt (an ``answer``), the
    ``trial_started`` event (``source`` says who made it) and the trial counter."""
    call, schema = _steps_and_schema(repair)

    def repair_node(state: Any, runtime: Runtime[Any]) -> Steps[dict[str, Any]]:
        update: dict[str, Any] = yield from call(state, runtime)
        if "answer" not in update:
            return update
        emit("trial_started", trial=state.trial + 1, source=source)
        return {"trial": state.trial + 1, **update}

    return loop_node(repair_node, acts=True, **_labels(repair, "repair", family)), schema


def trial_record(state: Any, result: object) -> dict[str, Any]:
    """The evaluator's update: its :class:`~reflexion.nodes.evaluator.Evaluation` as the
    trial's record (``evaluations``, its evidence after the five keys every record has), the
    thread's ``solved`` and the evaluation's other writes. Anything else is a one-line error:
    every evaluator returns an ``Evaluation``."""
    if not isinstance(result, Evaluation):
        raise ReflexionError(
            f"the evaluator returned a {type(result).__name__}: return an Evaluation "
            "(reflexion.Evaluation: score, success, feedback)"
        )
    record = TrialRecord(
        trial=state.trial,
        answer=state.answer,
        score=float(result.score),
        success=bool(result.success),
        feedback=result.feedback,
    )
    record.update(result.evidence)  # type: ignore[typeddict-item]
    return {"evaluations": [record], "solved": record["success"], **result.writes}


def trial_evaluator(evaluator: Any, family: Family) -> tuple[Node, type[Any] | None]:
    """The evaluator node: the family's ``evaluator`` (returning an ``Evaluation``), then the
    trial record (:func:`trial_record`) and the ``attempt_scored`` event. The node has
    both paths (a sync function runs in a worker thread on the async one). Returns the node
    and the evaluator's own input schema."""
    call, schema = _steps_and_schema(evaluator)

    def evaluator_node(state: Any, runtime: Runtime[Any]) -> Steps[Any]:
        update = trial_record(state, (yield from call(state, runtime)))
        _scored(update)
        return update

    labels = _labels(evaluator, "evaluator", family)
    labels.pop("model", None)
    return loop_node(evaluator_node, **{**labels, "name": "evaluator_node"}), schema


def loop_graph(
    *,
    state_schema: type[Any] = State,
    input_schema: type[Any] = InputState,
    output_schema: type[Any] = OutputState,
    context_schema: type[Context] = Context,
) -> StateGraph[Any, Any, Any, Any]:
    """An empty graph of the loop's state and context, for a family that adds nodes of its
    own before the loop (:func:`add_loop`)."""
    return StateGraph(
        state_schema,
        context_schema=context_schema,
        input_schema=input_schema,
        output_schema=output_schema,
    )


def add_loop(
    builder: StateGraph[Any, Any, Any, Any],
    actor: Any,
    evaluator: Any,
    reflector: Any,
    *,
    family: Family,
    empty_task: str | None = "give the task to attempt",
    retry: Retry | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """Add the loop to ``builder``: :func:`add_loop_nodes`, then :func:`add_loop_routes`."""
    add_loop_nodes(builder, actor, evaluator, reflector, family=family, empty_task=empty_task)
    return add_loop_routes(builder, retry=retry)


def add_loop_nodes(
    builder: StateGraph[Any, Any, Any, Any],
    actor: Any,
    evaluator: Any,
    reflector: Any,
    *,
    family: Family,
    empty_task: str | None = "give the task to attempt",
) -> StateGraph[Any, Any, Any, Any]:
    """Add the loop's nodes to ``builder``, each once wrapped in the trial's bookkeeping
    (:func:`trial_actor`, :func:`trial_evaluator`) and metered, with the edges that always
    hold; all but the edge into ``actor``: the caller's, from ``START`` or from its own first
    node (see :func:`build_reflexion_graph`)."""
    actor_node, actor_input = trial_actor(actor, family, empty_task)
    builder.add_node("actor", actor_node, input_schema=actor_input)
    evaluator_node, evaluator_input = trial_evaluator(evaluator, family)
    builder.add_node("evaluator", evaluator_node, input_schema=evaluator_input)
    reflector_node, reflector_input = family_node(reflector, "reflector", family)
    builder.add_node("reflector", reflector_node, input_schema=reflector_input)
    # the review serves every graph's state class, like the reflector
    review, _ = family_node(make_review(family), "review", family)
    builder.add_node("review", review)
    chooser: Any = inline(select_answer)  # reads the evaluations every graph's state has
    builder.add_node("select_answer", chooser, input_schema=builder.state_schema)
    builder.add_edge("actor", "evaluator")
    builder.add_edge("select_answer", END)
    return builder


def add_loop_routes(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    retry: Retry | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """Add the loop's routers after the evaluator, the reflector and the review (:func:`_routes`;
    the ``retry`` step under a :class:`Retry`); a review with only the actor after it is a
    plain edge."""
    schema: Any = builder.context_schema or Context
    if retry is not None:
        builder.add_node("retry", inline(_skip))
    for source, (router, targets) in _routes(retry, schema).items():
        if targets == ["actor"]:
            builder.add_edge(source, "actor")
        else:
            builder.add_conditional_edges(source, router, targets)
    return builder


def build_reflexion_graph(
    actor: Any,
    evaluator: Any,
    reflector: Any,
    *,
    state_schema: type[Any] = State,
    input_schema: type[Any] = InputState,
    output_schema: type[Any] = OutputState,
    family: Family,
    context_schema: type[Context] = Context,
    empty_task: str | None = "give the task to attempt",
    retry: Retry | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """Wire actor, evaluator and reflector nodes into the Reflexion loop, with the review node
    after the reflector; ``family`` is the task family every node's model calls are labelled
    with (:mod:`reflexion.core.tracing`); ``context_schema`` is the
    graph's context class: :class:`Context`, or a family's, which adds the fields its nodes
    read (what Studio's form and a server's schema then list); ``empty_task``, what the error
    on an empty task asks for; ``retry``, where a failed trial need not be reflected on or the
    next attempt may be a repair (:class:`Retry`)."""
    builder = loop_graph(
        state_schema=state_schema,
        input_schema=input_schema,
        output_schema=output_schema,
        context_schema=context_schema,
    )
    builder.add_edge(START, "actor")
    return add_loop(
        builder, actor, evaluator, reflector, family=family, empty_task=empty_task, retry=retry
    )
