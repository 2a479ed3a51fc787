"""The generic actor: a chat model with the generic Thought/Answer prompt (the generic graph's,
and :func:`~reflexion.graphs.custom.create_reflexion_graph`'s for a model given no prompt), a
prompt of your own, or any Runnable or function of yours. Each returns only its attempt; the
loop (:mod:`reflexion.graphs.loop`) does the trial's bookkeeping around it. An attempt whose
answer the evaluator already rejected in this thread is drawn again (``Context.repeat_guard``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable
from langgraph.runtime import Runtime

from reflexion.core.answers import normalize_answer
from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import Node, Steps, ask, block, steps_of
from reflexion.core.tracing import Family
from reflexion.core.window import reflection_window
from reflexion.nodes.common import RESAMPLE_TEMPERATURE, resolve_model
from reflexion.nodes.memory import memory_block, rejected_answers
from reflexion.nodes.replies import read_answer
from reflexion.nodes.templates import kind, user_template
from reflexion.prompts import render

ACTOR_VARIABLES = ("task", "passages", "reflections", "memory", "trial")
"""What an actor gets each trial: the task, its passages, the reflections (the last Ω lessons of
this thread), ``memory`` (what the strategy keeps as prompt text with headings, empty on a first
trial) and the 1-based number of this trial. The reference answer is never among them."""

STOP = ["\nTask:", "\n---"]
"""Stop sequences of the default actor prompt (a small model may invent a next task)."""

ActorSpec = BaseChatModel | str | Runnable[Any, Any] | Callable[[dict[str, Any]], Any]


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
    """The state the actor reads and its inputs (``reflections`` as a list), from the state
    the loop hands it. A blind retry
    (``Context.retry``: every one under ``resample``, those after the first under
    ``informed_once``) gets no reflections and no last attempt: the task alone."""
    ctx = get_context(runtime)
    if state.trial > 0 and not ctx.informs(state.trial):
        state = replace(state, reflections=[], previous_trajectory=[])
    return state, {
        "task": state.task,
        "passages": state.passages,
        "reflections": reflection_window(state.reflections, ctx),
        "memory": memory_block(state, ctx),
        "trial": state.trial + 1,
    }


def _rejected(state: State, ctx: Context) -> set[str]:
    """The normalised answers the repeat guard draws again (``Context.repeat_guard``): those of
    the thread's failed trials, or none when the guard is off."""
    if not ctx.repeat_guard:
        return set()
    return {normalize_answer(a) for a in rejected_answers(state.evaluations)}


def _guarded(
    draw: Callable[[bool], Steps[tuple[str | None, list[str]]]], state: State, ctx: Context
) -> Steps[tuple[str | None, list[str]]]:
    """An attempt under the repeat guard: ``draw(False)`` first; while its answer is one the
    evaluator already rejected, ``draw(True)`` (a redraw) up to ``Context.repeat_guard`` times,
    and the first redraw with an answer not rejected stands; when none has one, the first
    attempt does."""
    rejected = _rejected(state, ctx)
    answer, trajectory = yield from draw(False)
    if answer is None or normalize_answer(answer) not in rejected:
        return answer, trajectory
    for _ in range(ctx.repeat_guard):
        again, steps = yield from draw(True)
        if again is not None and normalize_answer(again) not in rejected:
            return again, steps
    return answer, trajectory


def _attempt(answer: str | None, trajectory: list[str], reason: str | None) -> dict[str, Any]:
    """An actor's attempt: its answer, its trajectory and why it gave no answer."""
    return {
        "trajectory": trajectory,
        "answer": answer,
        "stop_reason": None if answer is not None else (reason or render("common/no_answer")),
    }


def default_actor_messages(state: State, ctx: Context) -> list[BaseMessage]:
    """The generic actor prompt (``prompts/common/generic_system.md``, ``generic_task.md``): the
    instructions and the task form a stable prefix; the strategy's memory comes last."""
    context_block = f"Context: {state.passages.strip()}" if state.passages.strip() else ""
    user = render("common/generic_task", context_block=context_block, task=state.task.strip())
    memory = memory_block(state, ctx)
    if memory:
        user = f"{user}\n\n{memory}"
    return [SystemMessage(render("common/generic_system")), HumanMessage(user)]


def make_chat_actor(
    model: BaseChatModel | str | None = None,
    prompt: ChatPromptTemplate | str | None = None,
    *,
    family: Family = "reflexion",
) -> Node:
    """An actor node around a chat model: ``model`` is a chat model, a ``provider:model``
    string, or ``None`` for ``Context.actor_model``. ``prompt`` (a ChatPromptTemplate, or a
    string made one user message, with variables among :data:`ACTOR_VARIABLES`) replaces the
    generic actor prompt. The reply is read by :func:`read_reply`. ``family`` labels its
    model calls."""
    if model is not None and not isinstance(model, BaseChatModel | str):
        raise ReflexionError(
            f"the actor model is a {kind(model)}: pass a chat model or a provider:model string"
        )
    template = (
        user_template(prompt, "prompt", ACTOR_VARIABLES, ("task",)) if prompt is not None else None
    )

    def actor(state: State, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime)
        state, inputs = _actor_inputs(state, runtime)
        override = model if isinstance(model, BaseChatModel) else None
        spec = model if isinstance(model, str) else ctx.actor_model
        if template is None:
            messages: Any = default_actor_messages(state, ctx)
            stop: list[str] | None = STOP
        else:
            values = {
                **inputs,
                "reflections": "\n".join(f"- {r}" for r in inputs["reflections"]),
            }
            messages, stop = template.invoke(values), None

        def draw(again: bool) -> Steps[tuple[str | None, list[str]]]:
            # a redraw is hotter, where the model is named by a string
            heat = max(ctx.temperature, RESAMPLE_TEMPERATURE) if again else ctx.temperature
            llm = yield from block(
                resolve_model, override, spec, ctx, temperature=heat, role="actor"
            )
            options = {"stop": stop} if stop is not None else {}
            return read_reply((yield from ask(llm, messages, **options)).text)

        answer, trajectory = yield from _guarded(draw, state, ctx)
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
                f'the actor\'s "answer" is a {kind(answer)}: make it a str (or None)'
            )
        answer = (answer.strip() or None) if answer is not None else None
        steps = out.get("trajectory")
        if steps is None:
            steps = [f"Answer: {answer if answer is not None else '(none)'}"]
        elif isinstance(steps, str):
            steps = [steps]
        elif not (isinstance(steps, Sequence) and all(isinstance(s, str) for s in steps)):
            raise ReflexionError(
                f'the actor\'s "trajectory" is a {kind(steps)}: make it a list of str'
            )
        return answer, list(steps)
    raise ReflexionError(
        f'the actor returned a {kind(out)}: return a str, an AIMessage or a dict with "answer"'
    )


def make_actor(
    actor: ActorSpec,
    prompt: ChatPromptTemplate | str | None = None,
    *,
    family: Family = "reflexion",
) -> Node:
    """The actor node for any supported actor (see :func:`create_reflexion_graph`)."""
    if isinstance(actor, BaseChatModel | str):
        return make_chat_actor(actor, prompt, family=family)
    if prompt is not None:
        raise ReflexionError(
            f"prompt is only used with a chat-model actor, and the actor is a {kind(actor)}: "
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
        named = getattr(actor, "__qualname__", None) or kind(actor)
    else:
        raise ReflexionError(
            f"the actor is a {kind(actor)}: pass a chat model, a Runnable, or a function "
            "taking a dict of task, passages, reflections, memory and trial"
        )

    def custom_actor(state: State, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        _, inputs = _actor_inputs(state, runtime)

        def draw(again: bool) -> Steps[tuple[str | None, list[str]]]:
            return _read_actor_output((yield from call(inputs)))

        answer, trajectory = yield from _guarded(draw, state, get_context(runtime))
        return _attempt(answer, trajectory, None)

    return Node(custom_actor, role="actor", family=family, acts=True, model=named)


def model_label(model: BaseChatModel) -> str:
    """A chat model object's name, as a results file or a message shows it: its
    ``model_name`` or ``model`` field (``gpt-4o-mini``), else its class name."""
    for attribute in ("model_name", "model"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return kind(model)


def _chat_model_in(runnable: Runnable[Any, Any]) -> BaseChatModel | None:
    """The chat model a ``prompt | model | parser`` chain calls (the first), if it has one."""
    steps = getattr(runnable, "steps", None) or [runnable]
    for step in steps:
        bound = getattr(step, "bound", step)  # a model with .bind(...) or .with_config(...)
        if isinstance(bound, BaseChatModel):
            return bound
    return None
