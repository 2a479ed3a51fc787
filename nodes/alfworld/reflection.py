"""What a failed ALFWorld trial leaves for the next one: the reflector's prompt or, under
``AlfworldContext.alfworld_memory``, an entry written from the trial's turns without a model."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.diagnosis import found_leads, turns_of
from reflexion.nodes.reflector import reflection_messages
from reflexion.prompts import render


def alfworld_reflection_messages(state: Any, ctx: AlfworldContext) -> list[BaseMessage]:
    """The reflector prompt for a failed ALFWorld trial: instructions, two worked examples,
    then the trial and the evaluator's feedback (the paper's)."""
    feedback = (
        state.evaluations[-1]["feedback"] if state.evaluations else render("common/trial_failed")
    )
    return reflection_messages(
        state, "alfworld/reflect_examples", prompts="alfworld/reflect", feedback=feedback
    )


def alfworld_written(state: Any, ctx: AlfworldContext) -> str | None:
    """The memory entry of a failed trial written without a model
    (``AlfworldContext.alfworld_memory="sightings"``: where the trial saw the goal's objects,
    ``""``, no entry, when it saw none); None for ``"reflection"``, so the reflector model
    writes it."""
    if ctx.alfworld_memory == "sightings":
        return found_leads(turns_of(state.trajectory), state.task)
    return None
