"""The code reflector's prompt (the node itself is the shared
:func:`reflexion.nodes.reflector.make_reflector`; the graph skips it by an edge when no retry
would read what it writes)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from reflexion.nodes.programming.common import (
    problem_of,
    prompt_names,
)
from reflexion.nodes.programming.feedback import (
    checks_own_tests,
    failed_tests,
    held_out,
    shown_feedback,
)
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeState, CodeTrialRecord
from reflexion.prompts import few_shot, render


def code_reflection_messages(state: CodeState, ctx: CodeContext) -> list[BaseMessage]:
    """The code reflector prompt: instructions, two worked examples as turns, then the problem,
    the failed implementation and its test results (less any held out,
    ``CodeContext.test_trust="held_out"``); under ``CodeContext.test_trust="checked"``,
    where the model's own tests decide, the request to check the first failed one against the
    documentation before anything else (:func:`_check`)."""
    problem = problem_of(state)
    names = prompt_names(problem.language)
    messages: list[BaseMessage] = [SystemMessage(render("programming/reflect_system", **names))]
    for example in few_shot("programming/reflect_examples"):
        attempt, _, lesson = example.partition("\nReflection:")
        messages += [HumanMessage(attempt.strip()), AIMessage("Reflection: " + lesson.strip())]
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
    check = _check(state, ctx, record) if record and checks_own_tests(state, ctx) else None
    return [*messages, HumanMessage(user if check is None else f"{user}\n\n{check}")]


def _check(state: CodeState, ctx: CodeContext, record: CodeTrialRecord) -> str | None:
    """Under ``test_trust="checked"``: the request to check the first failed self-written
    test the reflector is shown against the documentation, quoting its input and the actual
    output (``None`` when no counted test failed, e.g. code that did not compile)."""
    hidden = held_out(state, ctx)
    failed = failed_tests(record, [t for t in state.written_tests if t not in hidden])
    if not failed:
        return None
    test, detail = failed[0]
    output = detail.removeprefix("output:").strip() or render("programming/no_value")
    return render("programming/reflect_check", test=test, output=output)
