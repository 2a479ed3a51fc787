"""Prompts of your own (``create_reflexion_graph(prompt=..., evaluator_prompt=...,
reflector_prompt=...)``): each checked once, when the graph is built, against the variables
its role hands it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate

from reflexion.core.errors import ReflexionError

WHERE = {"task": "the task", "trajectory": "the failed attempt", "answer": "the answer judged"}
"""Where a required variable belongs, as the error for a template without it says."""


def kind(value: object) -> str:
    """A value's type name for error messages."""
    return type(value).__name__


def user_template(
    prompt: ChatPromptTemplate | str,
    argument: str,
    variables: Sequence[str],
    required: Sequence[str],
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
            f"{argument} is a {kind(prompt)}: pass a ChatPromptTemplate or a template string"
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
                f"{WHERE.get(name, name)} belongs"
            )
    return template
