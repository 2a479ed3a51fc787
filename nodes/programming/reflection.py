"""The code reflector's prompt (the node itself is the shared
:func:`reflexion.nodes.reflector.make_reflector`; the graph skips it by an edge when no retry
would read what it writes)."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from reflexion.nodes.programming.common import (
    problem_of,
    prompt_names,
)
from reflexion.nodes.programming.feedback import shown_feedback
from reflexion.nodes.reflector import reflection_turns
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeState
from reflexion.prompts import render


def code_reflection_messages(state: CodeState, ctx: CodeContext) -> list[BaseMessage]:
    """The code reflector prompt: instructions, two worked examples as turns, then the problem,
    the failed implementation and its test results (less any held out,
    every ``CodeContext.internal_tests`` but ``"all"``)."""
    problem = problem_of(state)
    names = prompt_names(problem.language)
    messages: list[BaseMessage] = [SystemMessage(render("programming/reflect_system", **names))]
    messages += reflection_turns("programming/reflect_examples")
    record = state.evaluations[-1] if state.evaluations else None
    feedback = shown_feedback(record, state, ctx)
    implementation = state.answer if state.answer else render("programming/no_implementation")
    user = render(
        "programming/reflect_task",
        prompt=problem.prompt.strip(),
        implementation=implementation.strip(),
        feedback=feedback,
        **names,
    )
    return [*messages, HumanMessage(user)]
