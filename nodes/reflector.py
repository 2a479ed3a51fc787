"""The self-reflector: turns a failed trial into a short first-person lesson."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from nodes.common import resolve_model, trajectory_text
from reflexion.context import Context, get_context
from reflexion.memory import update_window
from reflexion.parsing import clean_reflection
from reflexion.prompts import few_shot, render
from reflexion.state import State

STOP = ["\nTask:", "\n---", "\nPrevious attempt:"]


def reflection_messages(
    state: State, examples: str = "reflect_examples", *, prompts: str = "reflect"
) -> list[BaseMessage]:
    """The reflector prompt: instructions (``prompts/<prompts>_system.md``), few-shot turns
    (from the prompt file ``examples``), then the failed trial (``<prompts>_task.md``)."""
    feedback = state.evaluations[-1]["feedback"] if state.evaluations else "The trial failed."
    messages: list[BaseMessage] = [SystemMessage(render(f"{prompts}_system"))]
    for example in few_shot(examples):
        attempt, _, lesson = example.partition("\nReflection:")
        messages += [HumanMessage(attempt.strip()), AIMessage("Reflection: " + lesson.strip())]
    user = render(
        f"{prompts}_task",
        task=state.task.strip(),
        trajectory=trajectory_text(state.trajectory),
        feedback=feedback,
    )
    return [*messages, HumanMessage(user)]


def make_reflector(
    model: BaseChatModel | None = None,
    *,
    examples: str = "reflect_examples",
    messages: Callable[[Any], list[BaseMessage]] | None = None,
) -> Callable[[Any, Runtime[Context]], dict[str, Any]]:
    """The reflector node; ``model`` overrides ``Context.reflector_model``; ``examples`` names
    the prompt file of few-shot reflections (one per agent family); ``messages`` replaces the
    whole prompt (a function of the state, e.g. the programming reflector's).

    What it writes depends on the strategy: the previous trajectory (``last_attempt``), a new
    reflection appended to the Ω window (``reflexion``), both, or nothing (``none``).
    """

    def prompt(state: Any) -> list[BaseMessage]:
        return messages(state) if messages is not None else reflection_messages(state, examples)

    # ``state`` is left untyped: LangGraph reads a node's input schema from its annotation, and
    # the node serves every graph's own state class (QA, programming…).
    def reflector(state: Any, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = get_context(runtime)
        update: dict[str, Any] = {}
        if ctx.uses_last_attempt:
            feedback = state.evaluations[-1]["feedback"] if state.evaluations else None
            update["previous_trajectory"] = [*state.trajectory, f"Observation: {feedback}"]
        if ctx.uses_reflections and ctx.memory_size > 0:
            llm = resolve_model(model, ctx.reflector_model, ctx, temperature=0.0, role="reflector")
            lesson = clean_reflection(llm.invoke(prompt(state), stop=STOP).text)
            if lesson:
                update["reflections"] = update_window(state.reflections, lesson, ctx.memory_size)
        return update

    return reflector
