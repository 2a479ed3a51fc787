"""The code reflector's prompt (the node itself is the shared
:func:`reflexion.nodes.reflector.make_reflector`)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from reflexion.nodes.coder.common import problem_of, prompt_names
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeState
from reflexion.prompts import few_shot, render


def code_reflection_messages(state: CodeState, ctx: CodeContext | None = None) -> list[BaseMessage]:
    """The code reflector prompt: instructions, two worked examples as turns, then the problem,
    the failed implementation and its test results (no option of ``ctx`` changes it)."""
    problem = problem_of(state)
    names = prompt_names(problem.language)
    messages: list[BaseMessage] = [SystemMessage(render("code_reflect_system", **names))]
    for example in few_shot("code_reflect_examples"):
        attempt, _, lesson = example.partition("\nReflection:")
        messages += [HumanMessage(attempt.strip()), AIMessage("Reflection: " + lesson.strip())]
    feedback = state.evaluations[-1]["feedback"] if state.evaluations else "The tests failed."
    implementation = state.answer if state.answer else "(no implementation was produced)"
    user = render(
        "code_reflect_task",
        prompt=problem.prompt.strip(),
        implementation=implementation.strip(),
        feedback=feedback,
        **names,
    )
    return [*messages, HumanMessage(user)]
