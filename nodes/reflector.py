"""The self-reflector: turns a failed trial into a short first-person lesson; the review node:
a person reads, edits or drops that lesson before the next trial (``Context.review_reflections``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import BasePromptTemplate
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from reflexion.core.context import Context, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.progress import emit
from reflexion.core.state import State
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.core.tracing import Family
from reflexion.core.window import update_window
from reflexion.nodes.common import attempt_values, resolve_model, trajectory_text
from reflexion.nodes.replies import clean_reflection
from reflexion.nodes.templates import kind
from reflexion.prompts import few_shot, render

STOP = ["\nTask:", "\n---", "\nPrevious attempt:"]

GENERIC_REFLECT_EXAMPLES = "common/generic_reflect_examples"
"""The prompt file of the worked examples of the generic graph's reflector (and
``create_reflexion_graph``'s): tasks of no benchmark (a unit conversion, a word problem, a
format instruction missed), each lesson naming the mistake, its cause and what to do
differently."""


REFLECTOR_VARIABLES = ("task", "passages", "trajectory", "answer", "feedback", "trial")
"""What a reflector prompt of your own may use (``create_reflexion_graph(reflector_prompt=...)``):
the task, its passages (empty when none), the failed attempt's steps as text, its final answer
(``(none)`` when it gave none), the evaluator's feedback and the 1-based number of the trial
that failed. Never the reference."""


def reflector_values(state: Any) -> dict[str, Any]:
    """The values of :data:`REFLECTOR_VARIABLES` for the trial that just failed."""
    feedback = (
        state.evaluations[-1]["feedback"] if state.evaluations else render("common/trial_failed")
    )
    return {**attempt_values(state), "feedback": feedback}


def reflection_turns(examples: str) -> list[BaseMessage]:
    """The worked reflections of the prompt file ``examples`` as chat turns: each failed
    attempt a user turn, its lesson (after ``Reflection:``) the assistant's."""
    turns: list[BaseMessage] = []
    for example in few_shot(examples):
        attempt, _, lesson = example.partition("\nReflection:")
        turns += [HumanMessage(attempt.strip()), AIMessage("Reflection: " + lesson.strip())]
    return turns


def reflection_messages(
    state: State,
    examples: str = "qa/reflect_examples",
    *,
    prompts: str = "common/reflect",
    with_passages: bool = False,
    feedback: str | None = None,
) -> list[BaseMessage]:
    """The reflector prompt: instructions (``prompts/<prompts>_system.md``, ``prompts`` naming
    its folder: ``common/reflect``), few-shot turns (from the prompt file ``examples``), then
    the failed trial (``<prompts>_task.md``), with the task's passages when the actor saw them
    (``with_passages``: the CoT (GT) agent), so the reflector checks the attempt against the
    same paragraphs instead of recalling facts; ``feedback`` replaces the last evaluation's
    feedback."""
    if feedback is None:
        feedback = (
            state.evaluations[-1]["feedback"]
            if state.evaluations
            else render("common/trial_failed")
        )
    messages: list[BaseMessage] = [SystemMessage(render(f"{prompts}_system"))]
    messages += reflection_turns(examples)
    passages = state.passages.strip() if with_passages else ""
    user = render(
        f"{prompts}_task",
        context_block=f"Context: {passages}\n" if passages else "",
        task=state.task.strip(),
        trajectory=trajectory_text(state.trajectory),
        feedback=feedback,
    )
    return [*messages, HumanMessage(user)]


def make_reflector(
    model: BaseChatModel | str | None = None,
    *,
    examples: str = "qa/reflect_examples",
    messages: Callable[[Any, Any], list[BaseMessage]] | None = None,
    written: Callable[[Any, Any], str | None] | None = None,
    family: Family,
    with_passages: bool = False,
    schema: type[Context] = Context,
    template: BasePromptTemplate[Any] | None = None,
) -> Node:
    """The reflector node; ``model`` (a chat model, or a ``provider:model`` string) overrides
    ``Context.reflector_model``; ``examples`` names
    the prompt file of few-shot reflections (one per agent family); ``messages`` replaces the
    whole prompt (a function of the state and the context, e.g. the programming reflector's);
    ``written`` gives a lesson that needs no model where the context asks for one (ALFWorld's
    facts), or None to ask the reflector model;
    ``family`` labels its model calls;
    ``with_passages`` shows it the task's passages, as its actor saw them; ``schema`` is the
    graph's context class, which ``messages`` and ``written`` receive; ``template`` (a prompt
    of your own, rendered with :func:`reflector_values`) replaces the whole prompt, worked
    examples included.

    What it writes depends on the strategy: the previous trajectory (``last_attempt``), a new
    reflection appended to the Ω window (``reflexion``), both, or nothing (``none``). A new
    reflection waits for review (``pending_review``, with ``Context.review_reflections``).
    """

    if model is not None and not isinstance(model, BaseChatModel | str):
        raise ReflexionError(
            f"reflector_model is a {kind(model)}: pass a chat model or a provider:model string"
        )
    override = model if isinstance(model, BaseChatModel) else None

    def prompt(state: Any, ctx: Context) -> list[BaseMessage]:
        if messages is not None:
            return messages(state, ctx)
        return reflection_messages(state, examples, with_passages=with_passages)

    def ask_reflector(state: Any, ctx: Context) -> Steps[str]:
        spec = model if isinstance(model, str) else ctx.reflector_model
        llm = yield from block(
            resolve_model, override, spec, ctx, temperature=0.0, role="reflector"
        )
        if template is not None:
            messages_in = template.invoke(reflector_values(state)).to_messages()
            return clean_reflection((yield from ask(llm, messages_in, stop=STOP)).text)
        return clean_reflection((yield from ask(llm, prompt(state, ctx), stop=STOP)).text)

    # ``state`` is left untyped: LangGraph reads a node's input schema from its annotation, and
    # the node serves every graph's own state class (QA, programming…).
    def reflector(state: Any, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, schema)
        update: dict[str, Any] = {}
        if ctx.uses_last_attempt:
            feedback = state.evaluations[-1]["feedback"] if state.evaluations else None
            update["previous_trajectory"] = [*state.trajectory, f"Observation: {feedback}"]
        if ctx.uses_reflections and ctx.memory_size > 0:
            lesson = written(state, ctx) if written is not None else None
            if lesson is None:
                lesson = yield from ask_reflector(state, ctx)
            if lesson:
                update["reflections"] = update_window(state.reflections, lesson, ctx.memory_size)
                emit("reflection_written", trial=state.trial, text=update["reflections"][-1])
                if ctx.review_reflections:
                    update["pending_review"] = lesson
        return update

    return Node(reflector, role="reflector", family=family)


ACCEPT, DROP = "accept", "drop"

REVIEW_HELP = (
    "Resume with Command(resume=...): '' or {'action': 'accept'} keeps the reflection, "
    "a string or {'reflection': text} replaces it, {'action': 'drop'} removes it."
)
"""(``Command(resume=None)`` is not a resume in LangGraph: it carries no value.)"""


def review_decision(value: Any) -> tuple[str, str | None]:
    """Read a review's resume value: ``("accept", None)``, ``("edit", text)`` or
    ``("drop", None)``; anything else is a one-line error."""
    if value is None:
        return ACCEPT, None
    if isinstance(value, str):
        return (ACCEPT, None) if not value.strip() else ("edit", value.strip())
    if isinstance(value, dict):
        if "reflection" in value and isinstance(value["reflection"], str):
            text = value["reflection"].strip()
            return ("edit", text) if text else (ACCEPT, None)
        action = value.get("action")
        if action in (ACCEPT, DROP) and set(value) == {"action"}:
            return str(action), None
    raise ReflexionError(f"cannot read the review answer {value!r}: {REVIEW_HELP}")


def make_review(family: Family) -> Node:
    """The review node: interrupts with the proposed reflection (and the trial, its feedback
    and the task) and applies the person's answer to the newest reflection of the window —
    keep, replace or drop. The reflector's model is not called again on resume: the proposal
    is in ``pending_review``. ``family`` labels the node, as the reflector's does."""

    def review(state: Any) -> Steps[dict[str, Any]]:
        # a node core is a generator of steps (reflexion.core.steps); the review takes none
        yield from ()
        proposed = state.pending_review
        if not proposed:
            return {"pending_review": None}
        feedback = state.evaluations[-1]["feedback"] if state.evaluations else ""
        answer = interrupt(
            {
                "reflection": proposed,
                "trial": state.trial,
                "feedback": feedback,
                "task": state.task,
                "help": REVIEW_HELP,
            }
        )
        action, text = review_decision(answer)
        update: dict[str, Any] = {"pending_review": None}
        if action == ACCEPT:
            return update
        window = list(state.reflections)
        newest = window[-1:] == [proposed]
        if action == DROP:
            update["reflections"] = window[:-1] if newest else window
        else:
            update["reflections"] = [*window[:-1], str(text)] if newest else window
        return update

    return Node(review, role="review", family=family)
