"""The ALFWorld graph's context (``reflexion_alfworld``): what its ReAct actor, heuristic
evaluator and memory add to :class:`~reflexion.core.context.Context`."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    ContextBudget,
    Seeded,
    Tokens,
    Trials,
    context_budget_field,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

AlfworldMemory = Literal["reflection", "sightings"]
AlfworldEvaluator = Literal["heuristic", "llm"]
"""ALFWorld's self-evaluators, in place of the base's (exact match and agreement compare short
answers, which a game has none of)."""


@settings_class
class AlfworldContext(Seeded):
    """Settings of an ALFWorld run."""

    PRESETS: ClassVar[Presets] = {
        "paper": {
            "alfworld_explain": False,
            "alfworld_memory": "reflection",
        }
    }
    """``paper``: a refused command's reply says only "Nothing happens.", and the memory holds
    reflections (the default keeps each trial's sightings and calls no reflector)."""

    # The configuration of the ALFWorld figures: five trials, short replies (one command).
    max_trials: Trials = redefault("max_trials", 5)
    max_tokens: Tokens = redefault("max_tokens", 128)
    evaluator: AlfworldEvaluator = field(  # type: ignore[assignment]
        default="heuristic",
        metadata={
            "description": "ALFWorld's self-evaluator: heuristic (the paper's: a trial "
            "succeeds when the game is won before the agent repeats itself or takes too many "
            "commands) or llm (a judge model classifies the trajectory)."
        },
    )

    games: str | None = field(
        default=None,
        metadata={
            "description": "ALFWorld: a directory of game.tw-pddl files, or a packed game set "
            "(default: the bundled 134 valid_unseen games)."
        },
    )
    alfworld_steps: Annotated[int, Field(ge=1, le=500)] = field(
        default=30,
        metadata={
            "description": "ALFWorld: most turns (thoughts and commands) per trial; a trial "
            "that reaches it unsolved fails (the paper's results use 30)."
        },
    )
    context_budget: ContextBudget = context_budget_field()
    alfworld_explain: bool = field(
        default=True,
        metadata={
            "description": "ALFWorld actor: a refused command's 'Nothing happens.' is followed by "
            "its likeliest reason, worked out from the trial's own turns. Off: the game's reply "
            "only (the paper).",
        },
    )
    alfworld_memory: AlfworldMemory = field(
        default="sightings",
        metadata={
            "description": "ALFWorld: what a failed trial adds to the reflection window: "
            "sightings (where it saw the goal's objects, no model call; no entry when it saw "
            "none) or reflection (the reflector's, the paper). Set reflection to follow the "
            "paper; sightings measured better on the 1.5B model (the ALFWorld page).",
        },
    )
