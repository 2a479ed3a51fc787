"""Reflexion around your own actor and evaluator: the public API for LangChain users.

:func:`create_reflexion_graph` takes an actor (a chat model plus a prompt, or any Runnable or
callable), an evaluator (a Python function, or an LLM judge) and puts our self-reflector
between them in the Reflexion loop of :func:`graphs.loop.build_reflexion_graph`. The result
is a compiled LangGraph graph: invoke or stream it directly, or add it to your own graph as a
subgraph.

Run settings (trial limit, Ω, strategy, judge mode and threshold, models named by string) come
from the runtime context, as in every graph here: pass ``context=Context(max_trials=5)`` to
``invoke``/``stream``; with no context the :class:`~reflexion.core.context.Context` defaults apply.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from math import isfinite
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer

from reflexion.core.context import Context, get_context, with_fields
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import Awaited, Node, Steps, ask, block, drive, steps_of
from reflexion.core.window import reflection_window
from reflexion.graphs.loop import build_reflexion_graph
from reflexion.lessons import Family
from reflexion.nodes.common import judge_llm, resolve_model
from reflexion.nodes.evaluator import (
    CORRECT,
    INCORRECT,
    JUDGE_VARIABLES,
    EvaluateFn,
    EvaluateSteps,
    Evaluation,
    exact_match_evaluation,
    llm_judge_evaluation,
    make_evaluator,
    no_answer_evaluation,
)
from reflexion.nodes.memory import memory_block, with_lessons
from reflexion.nodes.reflector import REFLECTOR_VARIABLES, make_reflector
from reflexion.nodes.replies import read_answer
from reflexion.prompts import render

__all__ = [
    "ACTOR_VARIABLES",
    "GENERIC_REFLECT_EXAMPLES",
    "JUDGE_VARIABLES",
    "REFLECTOR_VARIABLES",
    "Evaluation",
    "answering_model",
    "create_reflexion_graph",
    "make_actor",
    "make_chat_actor",
    "make_custom_evaluator",
    "read_reply",
    "to_evaluation",
]

ACTOR_VARIABLES = ("task", "passages", "reflections", "lessons", "memory", "trial")
"""What an actor gets each trial: the task, its passages, the reflections (the last Ω lessons of
this thread), the lessons recalled from other threads (``Context.lessons``), ``memory`` (all of
that as prompt text with headings, empty on a first trial without recalled lessons) and the
1-based number of this trial. The reference answer is never among them."""

GENERIC_REFLECT_EXAMPLES = "common/generic_reflect_examples"
"""The prompt file of our reflector's worked examples here and in the generic graph: tasks of
no benchmark (a unit conversion, a word problem, a format instruction missed), each lesson
naming the mistake, its cause and what to do differently."""

STOP = ["\nTask:", "\n---"]
"""Stop sequences of the default actor prompt (a small model may invent a next task)."""

ActorFn = Node
EvaluatorSpec = Literal["llm", "exact_match"] | BaseChatModel | Callable[..., Any]
ActorSpec = BaseChatModel | str | Runnable[Any, Any] | Callable[[dict[str, Any]], Any]


def _kind(value: object) -> str:
    """A value's type name for error messages."""
    return type(value).__name__


def read_reply(text: str) -> tuple[str | None, list[str]]:
    """The answer and trajectory in a free-text reply.

    The answer is the text after the reply's last ``Answer:`` marker, at the start of a line or
    after a space within one (:func:`~reflexion.nodes.replies.read_answer` says which markers
    count), to the end of the reply, so an answer may span lines; the reasoning is the text
    before it, one step per line. Without a marker the whole reply is the answer. The
    trajectory is the reasoning lines followed by ``Answer: <answer>``; ``None`` (no answer)
    for an empty reply.
    """
    answer, before = read_answer(text)
    reasoning = [ln.strip() for ln in before.splitlines() if ln.strip()]
    if answer is None:
        return None, [*reasoning, "Answer: (none)"]
    return answer, [*reasoning, f"Answer: {answer}"]


def _actor_inputs(state: State, runtime: Runtime[Context]) -> tuple[State, dict[str, Any]]:
    """The state the actor reads and its inputs (``reflections`` and ``lessons`` as lists),
    from the state the loop hands it (lessons recalled on the first trial). A blind retry
    (``Context.retry``: every one under ``resample``, those after the first under
    ``informed_once``) gets no reflections and no last attempt: the task alone."""
    ctx = get_context(runtime)
    if state.trial > 0 and not ctx.informs(state.trial):
        state = replace(state, reflections=[], previous_trajectory=[])
    return state, {
        "task": state.task,
        "passages": state.passages,
        "reflections": reflection_window(state.reflections, ctx),
        "lessons": list(state.lessons),
        "memory": memory_block(state, ctx),
        "trial": state.trial + 1,
    }


def _attempt(answer: str | None, trajectory: list[str], reason: str | None) -> dict[str, Any]:
    """An actor's attempt: its answer, its trajectory and why it gave no answer."""
    return {
        "trajectory": trajectory,
        "answer": answer,
        "stop_reason": None if answer is not None else (reason or render("common/no_answer")),
    }


_WHERE = {"task": "the task", "trajectory": "the failed attempt", "answer": "the answer judged"}


def user_template(
    prompt: ChatPromptTemplate | str,
    argument: str = "prompt",
    variables: Sequence[str] = ACTOR_VARIABLES,
    required: Sequence[str] = ("task",),
) -> BasePromptTemplate[Any]:
    """A user's prompt for one role, checked at build time: a template (or a string, made one
    user message) whose variables are among ``variables`` and include every ``required`` one;
    ``argument`` names it in the one-line error."""
    if isinstance(prompt, str):
        try:
            template: BasePromptTemplate[Any] = ChatPromptTemplate.from_messages(
                [("human", prompt)]
            )
        except ValueError as exc:
            raise ReflexionError(
                f"the {argument} is not a template ({' '.join(str(exc).split())}): "
                "name variables as {task}, and write a literal brace as {{ or }}"
            ) from None
    elif isinstance(prompt, BasePromptTemplate):
        template = prompt
    else:
        raise ReflexionError(
            f"{argument} is a {_kind(prompt)}: pass a ChatPromptTemplate or a template string"
        )
    unknown = sorted(set(template.input_variables) - set(variables))
    if unknown:
        raise ReflexionError(
            f"the {argument} uses unknown variable(s) {', '.join(unknown)}: use only "
            + ", ".join("{" + v + "}" for v in variables)
            + " (write a literal brace as {{ or }})"
        )
    for name in required:
        if name not in template.input_variables:
            raise ReflexionError(
                f"the {argument} never uses {{{name}}}: put {{{name}}} where "
                f"{_WHERE.get(name, name)} belongs"
            )
    return template


def default_actor_messages(state: State, ctx: Context) -> list[BaseMessage]:
    """The generic actor prompt (``prompts/common/generic_system.md``, ``generic_task.md``): the
    instructions (with the recalled lessons, as every built-in actor) and the task form a
    stable prefix; the strategy's memory comes last."""
    context_block = f"Context: {state.passages.strip()}" if state.passages.strip() else ""
    user = render("common/generic_task", context_block=context_block, task=state.task.strip())
    memory = memory_block(state, ctx, lessons=False)
    if memory:
        user = f"{user}\n\n{memory}"
    return [with_lessons(render("common/generic_system"), state), HumanMessage(user)]


def make_chat_actor(
    model: BaseChatModel | str | None = None,
    prompt: ChatPromptTemplate | str | None = None,
    *,
    family: Family = "reflexion",
) -> ActorFn:
    """An actor node around a chat model: ``model`` is a chat model, a ``provider:model``
    string, or ``None`` for ``Context.actor_model``. ``prompt`` (a ChatPromptTemplate, or a
    string made one user message, with variables among :data:`ACTOR_VARIABLES`) replaces the
    generic actor prompt. The reply is read by :func:`read_reply`. ``family`` is the task
    family whose lessons it recalls on the first trial (``Context.lessons``)."""
    if model is not None and not isinstance(model, BaseChatModel | str):
        raise ReflexionError(
            f"the actor model is a {_kind(model)}: pass a chat model or a provider:model string"
        )
    template = user_template(prompt) if prompt is not None else None

    def actor(state: State, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime)
        state, inputs = _actor_inputs(state, runtime)
        override = model if isinstance(model, BaseChatModel) else None
        spec = model if isinstance(model, str) else ctx.actor_model
        llm = yield from block(
            resolve_model, override, spec, ctx, temperature=ctx.temperature, role="actor"
        )
        if template is None:
            reply = yield from ask(llm, default_actor_messages(state, ctx), stop=STOP)
        else:
            values = {
                **inputs,
                "reflections": "\n".join(f"- {r}" for r in inputs["reflections"]),
                "lessons": "\n".join(f"- {r}" for r in inputs["lessons"]),
            }
            reply = yield from ask(llm, template.invoke(values))
        answer, trajectory = read_reply(reply.text)
        return _attempt(answer, trajectory, render("common/no_answer_in_reply"))

    named = model if isinstance(model, str) else model_label(model) if model else None
    return Node(actor, role="actor", family=family, acts=True, name="chat_actor", model=named)


def _read_actor_output(out: object) -> tuple[str | None, list[str]]:
    """A Runnable/callable actor's output as (answer, trajectory)."""
    if isinstance(out, str):
        return read_reply(out)
    if isinstance(out, BaseMessage):
        return read_reply(out.text)
    if isinstance(out, Mapping):
        if "answer" not in out:
            keys = ", ".join(sorted(map(str, out))) or "none"
            raise ReflexionError(
                f'the actor returned a dict without "answer" (keys: {keys}): add the answer '
                'under "answer"'
            )
        answer = out["answer"]
        if answer is not None and not isinstance(answer, str):
            raise ReflexionError(
                f'the actor\'s "answer" is a {_kind(answer)}: make it a str (or None)'
            )
        answer = (answer.strip() or None) if answer is not None else None
        steps = out.get("trajectory")
        if steps is None:
            steps = [f"Answer: {answer if answer is not None else '(none)'}"]
        elif isinstance(steps, str):
            steps = [steps]
        elif not (isinstance(steps, Sequence) and all(isinstance(s, str) for s in steps)):
            raise ReflexionError(
                f'the actor\'s "trajectory" is a {_kind(steps)}: make it a list of str'
            )
        return answer, list(steps)
    raise ReflexionError(
        f'the actor returned a {_kind(out)}: return a str, an AIMessage or a dict with "answer"'
    )


def make_actor(
    actor: ActorSpec,
    prompt: ChatPromptTemplate | str | None = None,
    *,
    family: Family = "reflexion",
) -> ActorFn:
    """The actor node for any supported actor (see :func:`create_reflexion_graph`)."""
    if isinstance(actor, BaseChatModel | str):
        return make_chat_actor(actor, prompt, family=family)
    if prompt is not None:
        raise ReflexionError(
            f"prompt is only used with a chat-model actor, and the actor is a {_kind(actor)}: "
            "build the prompt into your Runnable (prompt | model) or drop prompt="
        )
    call: Callable[[dict[str, Any]], Steps[Any]]
    if isinstance(actor, Runnable):
        runnable: Runnable[Any, Any] = actor
        inside = _chat_model_in(actor)
        named = model_label(inside) if inside is not None else actor.get_name()

        def call(inputs: dict[str, Any]) -> Steps[Any]:
            return ask(runnable, inputs)

    elif callable(actor):
        call = steps_of(actor)
        named = getattr(actor, "__qualname__", None) or _kind(actor)
    else:
        raise ReflexionError(
            f"the actor is a {_kind(actor)}: pass a chat model, a Runnable, or a function "
            "taking a dict of task, passages, reflections, lessons, memory and trial"
        )

    def custom_actor(state: State, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        _, inputs = _actor_inputs(state, runtime)
        answer, trajectory = _read_actor_output((yield from call(inputs)))
        return _attempt(answer, trajectory, None)

    return Node(custom_actor, role="actor", family=family, acts=True, model=named)


def model_label(model: BaseChatModel) -> str:
    """A chat model object's name, as a results file or a message shows it: its
    ``model_name`` or ``model`` field (``gpt-4o-mini``), else its class name."""
    for attribute in ("model_name", "model"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return _kind(model)


def _chat_model_in(runnable: Runnable[Any, Any]) -> BaseChatModel | None:
    """The chat model a ``prompt | model | parser`` chain calls (the first), if it has one."""
    steps = getattr(runnable, "steps", None) or [runnable]
    for step in steps:
        bound = getattr(step, "bound", step)  # a model with .bind(...) or .with_config(...)
        if isinstance(bound, BaseChatModel):
            return bound
    return None


def answering_model(graph: Any) -> str | None:
    """The model that answers in ``graph`` (a graph of :func:`create_reflexion_graph`, compiled
    or its builder) where its actor brings its own: a chat model's name, a ``provider:model``
    string as given, a Runnable's chat model or name, a function's name. ``None`` where the
    actor reads ``Context.actor_model`` (the served graphs, an actor given no model)."""
    builder = getattr(graph, "builder", graph)
    spec = getattr(builder, "nodes", {}).get("actor")
    node = getattr(spec, "runnable", None)
    node = getattr(node, "__wrapped__", node)  # metered (reflexion.core.budget)
    model = getattr(node, "model", None) if isinstance(node, Node) else None
    return model if isinstance(model, str) else None


def to_evaluation(result: object, ctx: Context) -> Evaluation:
    """A user evaluator's result as an :class:`Evaluation`: a bool is the verdict; a float
    (or int) is a score in [0, 1] that succeeds at ``ctx.judge_threshold`` or above."""
    if isinstance(result, Evaluation):
        return result
    if isinstance(result, bool):
        return Evaluation(float(result), result, CORRECT if result else INCORRECT)
    if isinstance(result, int | float):
        score = float(result)
        if not (isfinite(score) and 0.0 <= score <= 1.0):
            raise ReflexionError(
                f"the evaluator returned the score {score}: scores must lie in [0, 1]"
            )
        ok = score >= ctx.score_threshold
        label = CORRECT if ok else INCORRECT
        return Evaluation(score, ok, f"{label} (score {score:.2f})")
    raise ReflexionError(
        f"the evaluator returned a {_kind(result)}: return a bool, a float score in [0, 1] or "
        "an Evaluation"
    )


def _arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` requires."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as exc:
        raise ReflexionError(
            f"cannot read the evaluator's signature ({_kind(fn)}): wrap it in a def taking "
            "(state), (task, answer) or (task, answer, reference)"
        ) from exc
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in positional and p.default is p.empty)


def _judge(model: BaseChatModel | None, template: BasePromptTemplate[Any] | None) -> EvaluateSteps:
    def judge(state: State, ctx: Context) -> Steps[Evaluation]:
        judge = yield from block(judge_llm, model, ctx)
        return (yield from llm_judge_evaluation(judge, state, ctx, template))

    return judge


def _driven(evaluate: EvaluateSteps) -> EvaluateFn:
    """An evaluator of node steps run to its end: the plain ``(state, ctx)`` contract."""
    return lambda state, ctx: drive(evaluate(state, ctx))


def _evaluation(
    evaluator: EvaluatorSpec, prompt: ChatPromptTemplate | str | None = None
) -> EvaluateFn | EvaluateSteps:
    """:func:`make_custom_evaluator`, the LLM judge as node steps (its async path awaits
    the model; a function of yours runs in a worker thread there)."""
    template = _judge_template(evaluator, prompt)
    if isinstance(evaluator, BaseChatModel):
        return _judge(evaluator, template)
    if evaluator == "llm":
        return _judge(None, template)
    if inspect.iscoroutinefunction(evaluator):
        return _awaited_evaluator(evaluator)
    return make_custom_evaluator(evaluator)


def _judge_template(
    evaluator: EvaluatorSpec, prompt: ChatPromptTemplate | str | None
) -> BasePromptTemplate[Any] | None:
    """``evaluator_prompt`` as the judge's template (variables among
    :data:`~reflexion.nodes.evaluator.JUDGE_VARIABLES`, ``{task}`` and ``{answer}``
    required); a one-line error when the evaluator is no LLM judge."""
    if prompt is None:
        return None
    judged = isinstance(evaluator, BaseChatModel) or evaluator == "llm"
    if not judged:
        what = repr(evaluator) if isinstance(evaluator, str) else f"a {_kind(evaluator)}"
        raise ReflexionError(
            f"evaluator_prompt is only used by the LLM judge, and the evaluator is {what}: "
            "pass evaluator='llm' or a chat model, or drop evaluator_prompt="
        )
    return user_template(prompt, "evaluator_prompt", JUDGE_VARIABLES, ("task", "answer"))


def _awaited_evaluator(fn: Callable[..., Any]) -> EvaluateSteps:
    """An async function of yours as the evaluator, told apart by its arity as a sync one is
    (:func:`make_custom_evaluator`); ``graph.invoke`` runs it on an event loop of its own."""
    arity = _arity(fn)
    if arity not in (1, 2, 3):
        make_custom_evaluator(fn)  # the same one-line error

    def evaluate(state: State, ctx: Context) -> Steps[Evaluation]:
        if arity > 1 and state.answer is None:
            return no_answer_evaluation(state, default=render("common/no_answer_given"))
        args = (state,) if arity == 1 else (state.task, state.answer, state.reference)[:arity]
        return to_evaluation((yield Awaited(functools.partial(fn, *args))), ctx)

    return evaluate


def make_custom_evaluator(
    evaluator: EvaluatorSpec, prompt: ChatPromptTemplate | str | None = None
) -> Callable[[State, Context], Evaluation]:
    """The evaluator contract (``(state, ctx) -> Evaluation``) for any supported evaluator.

    ``"llm"`` is our LLM judge on ``Context.evaluator_model``, a chat model the judge on that
    model; ``prompt`` (variables among :data:`~reflexion.nodes.evaluator.JUDGE_VARIABLES`,
    ``{task}`` and ``{answer}`` required) replaces the judge's prompt. ``"exact_match"``
    compares with the state's ``reference``. A function is told apart
    by how many positional arguments it requires: one gets the state; two get
    ``(task, answer)``; three ``(task, answer, reference)``. The two- and three-argument forms
    are not called when the actor gave no answer: that trial fails.
    """
    template = _judge_template(evaluator, prompt)
    if isinstance(evaluator, BaseChatModel):
        return _driven(_judge(evaluator, template))
    if isinstance(evaluator, str):
        if evaluator == "llm":
            return _driven(_judge(None, template))
        if evaluator == "exact_match":
            return exact_match_evaluation
        raise ReflexionError(
            f"the evaluator '{evaluator}' is unknown: use 'llm', 'exact_match', a chat model "
            "or a function"
        )
    if isinstance(evaluator, Runnable) or not callable(evaluator):
        raise ReflexionError(
            f"the evaluator is a {_kind(evaluator)}: pass a function taking (state), "
            "(task, answer) or (task, answer, reference), a chat model, or 'llm'"
        )
    fn = evaluator
    arity = _arity(fn)
    if arity == 1:

        def by_state(state: State, ctx: Context) -> Evaluation:
            return to_evaluation(fn(state), ctx)

        return by_state
    if arity in (2, 3):

        def by_answer(state: State, ctx: Context) -> Evaluation:
            if state.answer is None:
                return no_answer_evaluation(state, default=render("common/no_answer_given"))
            args = (state.task, state.answer, state.reference)[:arity]
            return to_evaluation(fn(*args), ctx)

        return by_answer
    raise ReflexionError(
        f"the evaluator requires {arity} positional arguments: give it (state), "
        "(task, answer) or (task, answer, reference)"
    )


def _reflector(
    model: BaseChatModel | str | None,
    family: Family,
    prompt: ChatPromptTemplate | str | None = None,
) -> Node:
    """Our reflector node; a ``provider:model`` string replaces ``Context.reflector_model``;
    ``prompt`` (variables among :data:`~reflexion.nodes.reflector.REFLECTOR_VARIABLES`,
    ``{task}`` and ``{trajectory}`` required) replaces its prompt."""
    if model is not None and not isinstance(model, BaseChatModel | str):
        raise ReflexionError(
            f"reflector_model is a {_kind(model)}: pass a chat model or a provider:model string"
        )
    template = (
        user_template(prompt, "reflector_prompt", REFLECTOR_VARIABLES, ("task", "trajectory"))
        if prompt is not None
        else None
    )
    override = model if isinstance(model, BaseChatModel) else None
    node = make_reflector(
        override, examples=GENERIC_REFLECT_EXAMPLES, family=family, template=template
    )
    if not isinstance(model, str):
        return node
    spec = model

    def reflector(state: Any, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        ctx = with_fields(get_context(runtime), reflector_model=spec)
        result: dict[str, Any] = yield from node.core(state, runtime.override(context=ctx))
        return result

    return Node(reflector, role="reflector", family=family)


def create_reflexion_graph(
    actor: ActorSpec,
    evaluator: EvaluatorSpec,
    *,
    reflector_model: BaseChatModel | str | None = None,
    prompt: ChatPromptTemplate | str | None = None,
    reflector_prompt: ChatPromptTemplate | str | None = None,
    evaluator_prompt: ChatPromptTemplate | str | None = None,
    name: str = "reflexion",
    checkpointer: Checkpointer = None,
    store: BaseStore | None = None,
) -> CompiledStateGraph[Any, Context, Any, Any]:
    """A compiled Reflexion graph around your own actor and evaluator, with our reflector.

    ``actor`` is one of:

    - a chat model (or a ``provider:model`` string): it gets ``prompt`` — a
      ChatPromptTemplate, or a string taken as one user message, using ``{task}`` and any of
      ``{passages}``, ``{reflections}`` (the last Ω lessons, one ``- `` line each),
      ``{lessons}`` (lessons recalled from other threads, likewise), ``{memory}`` (both, and
      the last attempt under the ``last_attempt`` strategies, with headings) and ``{trial}``
      — or, without one, our generic actor prompt. Its reply is read by
      :func:`read_reply` (the text after the last ``Answer:`` marker, else the whole reply);
    - any Runnable (``prompt | model | parser``, an agent) or function: called with a dict of
      ``task``, ``passages``, ``reflections``, ``lessons`` (lists of str), ``memory`` and
      ``trial``; it
      returns a str or an AIMessage (read as above) or a dict with ``answer`` and, optionally,
      ``trajectory`` (a list of str: what the reflector sees of the trial).

    ``evaluator`` is a function — ``(state)``, ``(task, answer)`` or
    ``(task, answer, reference)``, told apart by how many positional arguments it requires —
    returning a bool, a score in [0, 1] (success at ``Context.judge_threshold``, 0.5 by
    default, or above) or an :class:`Evaluation`; or ``"llm"`` (our LLM judge on
    ``Context.evaluator_model``), a chat model (the judge on it), or ``"exact_match"``.

    ``reflector_model`` overrides ``Context.reflector_model``. Our reflector's worked examples
    belong to no benchmark (``prompts/common/generic_reflect_examples.md``). ``reflector_prompt``
    replaces its whole prompt, examples included: a ChatPromptTemplate or a string (one user
    message) using ``{task}``, ``{trajectory}`` (the failed attempt's steps) and any of
    ``{passages}``, ``{answer}``, ``{feedback}`` (the evaluator's) and ``{trial}``; the reply is
    the lesson. ``evaluator_prompt`` replaces the LLM judge's prompt (``"llm"`` or a chat
    model only), using ``{task}``, ``{answer}`` and any of ``{passages}``, ``{trajectory}`` and
    ``{trial}``; the judge still replies with a verdict (structured output where the model has
    it). Either prompt naming another variable, or missing a required one, is a one-line
    error at build time. ``name`` names the compiled
    graph and is the task family of its lessons (``Context.lessons``; ``Context.lessons.family``
    overrides it). The graph's input is ``task``,
    ``passages``, ``reference`` (seen only by evaluators), ``task_id``; its output ``answer``,
    ``solved``, ``trial``, ``evaluations``, ``reflections``, ``stopped`` and ``spent``. Loop
    settings come from the run's context:
    ``graph.invoke(input, config, context=Context(max_trials=5, memory_size=1))``.
    ``checkpointer`` and ``store`` go to ``compile``; leave ``checkpointer`` out for
    a subgraph (it uses its parent's) and for a LangGraph server.
    """
    return build_reflexion_graph(
        make_actor(actor, prompt, family=name),
        make_evaluator(None, _evaluation(evaluator, evaluator_prompt)),
        _reflector(reflector_model, name, reflector_prompt),
        family=name,
    ).compile(checkpointer=checkpointer, store=store, name=name)
