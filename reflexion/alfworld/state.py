"""The ALFWorld graph's state: the Reflexion state plus the game and what each trial did in the
environment (the environment itself lives outside the state)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from reflexion.core.state import OutputState, State

EXAMPLE_GAME = "look_at_obj_in_light-AlarmClock-None-DeskLamp-308/trial_T20190908_222917_366542"
"""A bundled game, the example Studio's form and the server guide give."""

FailureClass = Literal["hallucination", "inefficient_planning", "step_limit", "other"]


class Episode(TypedDict):
    """What one finished trial did in the environment (for scoring and Figure 3b; never
    shown to the agent, the evaluator or the reflector)."""

    trial: int
    won: bool
    """The engine's own verdict."""
    turns: int
    commands: int
    stop_reason: str | None
    failure: FailureClass | None
    """Why a trial that was not won failed; ``None`` when it was won."""


@dataclass(kw_only=True)
class AlfworldInputState:
    """What a caller provides to start an ALFWorld thread (the state's ``task`` is filled in
    from the game's initial observation: the room and the goal)."""

    game: Annotated[
        str,
        Field(
            description="The game to play: a bundled game's name (reflexion list-games lists "
            "them), a unique part of one, or a path to a game.tw-pddl file. Example: "
            f"{EXAMPLE_GAME}",
            examples=[EXAMPLE_GAME],
        ),
    ] = ""
    """The game: a name from the game set (``AlfworldContext.games``, by default the bundled
    ``valid_unseen`` games), a unique part of one, or a path to a ``game.tw-pddl`` file."""
    task_id: Annotated[
        str | None,
        Field(
            description="A name for the game in results and logs (optional). Example: "
            "alarm-clock-lamp",
            examples=["alarm-clock-lamp"],
        ),
    ] = None
    """An identifier for results and logs (e.g. the game name)."""


@dataclass(kw_only=True)
class AlfworldState(State, AlfworldInputState):
    """The state of an ALFWorld thread: the Reflexion state plus the game and what each
    trial did in the environment. The environment itself lives outside the state."""

    kind: str = ""
    """The task type (put, clean, heat, cool, examine, puttwo); picks the few-shot examples."""
    commands: list[str] = field(default_factory=list)
    """The environment commands of the current trial, in order (replayed on resume)."""
    episodes: Annotated[list[Episode], operator.add] = field(default_factory=list)
    """One record per finished trial: won (the engine's verdict, for scoring only), turns,
    commands, stop reason and failure class. Never shown to the agent or the evaluator."""


@dataclass(kw_only=True)
class AlfworldOutputState(OutputState):
    """What a finished ALFWorld run returns."""

    game: str = ""
    episodes: list[Episode] = field(default_factory=list)


def graph_family(state: object) -> str:
    """The task family an ALFWorld thread's model calls are labelled with
    (:mod:`reflexion.core.tracing`): ``alfworld-<kind>`` (put, clean, heat, cool, examine,
    puttwo), once the game's kind is known."""
    return f"alfworld-{getattr(state, 'kind', '') or 'unknown'}"
