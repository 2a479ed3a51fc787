"""An ALFWorld trial's turns as data: reading the agent's reply as a turn, the paper's
self-evaluation heuristic, and the failure classes of Figure 3b. Nothing here calls a model or
the engine."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from typing_extensions import TypedDict

from reflexion.alfworld.state import FailureClass

THINK_REPLY = "OK."
"""What the agent observes after a ``think:`` turn (the paper's setup)."""

NOTHING = "Nothing happens."
"""The engine's reply to a command it cannot carry out."""

HEURISTIC_REPEATS = 3
"""The paper's heuristic: reflect when the same command gave the same observation more than
this many times."""

HEURISTIC_MAX_ACTIONS = 30
"""The paper's heuristic: reflect after more than this many commands in a trial (inefficient
planning)."""

EMPTY_REPLY = "(empty reply)"
"""The action recorded for a reply that held no line (the agent observes ``NOTHING``)."""


class Turn(TypedDict):
    """One turn of a trial: what the agent wrote and what it observed."""

    action: str
    """``think: …`` or an environment command, as sent."""
    observation: str


@dataclass(frozen=True)
class ParsedTurn:
    """The agent's reply read as one turn."""

    action: str
    """The line to record (``think: …`` or the command); empty when the reply had none."""
    is_think: bool


_PREFIX = re.compile(r"^(?:>\s*|action\s*:\s*|command\s*:\s*)+", re.IGNORECASE)


def parse_turn(reply: str) -> ParsedTurn:
    """The first non-empty line of a reply, without a leading ``>`` or ``Action:``; commands
    are lower-cased and lose a final full stop (the engine matches commands exactly, in lower
    case), thoughts are kept as written."""
    for raw in (reply or "").splitlines():
        line = _PREFIX.sub("", raw.strip()).strip()
        if not line:
            continue
        if line.lower().startswith("think:"):
            thought = line[len("think:") :].strip()
            return ParsedTurn(action=f"think: {thought}"[:400], is_think=True)
        command = " ".join(line.lower().split()).rstrip(".!").strip()
        return ParsedTurn(action=command[:200].rstrip(), is_think=False)
    return ParsedTurn(action="", is_think=False)


def is_think(action: str) -> bool:
    return action.startswith("think:")


def commands_of(turns: Sequence[Turn]) -> list[Turn]:
    """The turns that were environment commands (thoughts left out)."""
    return [t for t in turns if not is_think(t["action"]) and t["action"]]


def most_repeated(turns: Sequence[Turn]) -> tuple[str, int]:
    """The (action, observation) pair seen most often among the commands, and its count."""
    counts = Counter((t["action"], t["observation"]) for t in commands_of(turns))
    if not counts:
        return "", 0
    (action, _), n = counts.most_common(1)[0]
    return action, n


def heuristic_trip(
    turns: Sequence[Turn],
    *,
    repeats: int = HEURISTIC_REPEATS,
    max_actions: int = HEURISTIC_MAX_ACTIONS,
) -> str | None:
    """The paper's self-evaluation heuristic: a reason to stop and reflect when the agent has
    issued the same command with the same observation more than ``repeats`` times, or more
    than ``max_actions`` commands; ``None`` while neither holds."""
    action, n = most_repeated(turns)
    if n > repeats:
        return (
            f"the same action '{action}' gave the same observation {n} times "
            f"(more than {repeats}): the agent is going round in circles"
        )
    count = len(commands_of(turns))
    if count > max_actions:
        return f"{count} actions were taken (more than {max_actions}): inefficient planning"
    return None


_HELD_VERBS = re.compile(
    r"^(move|put|clean|heat|cool|slice)\s+(.+?)\s+(?:to|in/on|in|on|with)\s+\S"
)
_PICKED = re.compile(r"^you pick up the (.+?) from the ", re.IGNORECASE)
_PUT = re.compile(r"^you (?:move the (.+?) to|put the (.+?) in/on) the ", re.IGNORECASE)


def hallucinated_actions(turns: Sequence[Turn]) -> list[str]:
    """Commands that act on an object the agent was not holding (move/put, clean, heat, cool
    or slice something it never picked up, or had already put down): the paper's
    *hallucination* failure."""
    held: set[str] = set()
    found: list[str] = []
    for turn in commands_of(turns):
        observation = turn["observation"].strip()
        picked, put = _PICKED.match(observation), _PUT.match(observation)
        if picked:
            held.add(picked.group(1).lower())
            continue
        if put:
            held.discard((put.group(1) or put.group(2)).lower())
            continue
        # Whitespace collapsed first, as parse_turn records commands: on a long blank run the
        # pattern's \s+(.+?)\s+ would try every split of it (cubic).
        m = _HELD_VERBS.match(" ".join(turn["action"].split()))
        if m and m.group(2) not in held:
            found.append(turn["action"])
    return found


def classify_failure(
    turns: Sequence[Turn],
    stop_reason: str | None,
    *,
    repeats: int = HEURISTIC_REPEATS,
    max_actions: int = HEURISTIC_MAX_ACTIONS,
) -> FailureClass:
    """Figure 3b's classes for a trial that was not won: *hallucination* (acted on an object
    it did not hold) first, then *inefficient planning* (the heuristic holds: repeated
    action/observation pairs or too many actions), then *step limit* (ran out of turns
    otherwise), else *other* (e.g. the LLM evaluator stopped it, or the prompt outgrew the
    context budget)."""
    if hallucinated_actions(turns):
        return "hallucination"
    if heuristic_trip(turns, repeats=repeats, max_actions=max_actions):
        return "inefficient_planning"
    if stop_reason and "step limit" in stop_reason:
        return "step_limit"
    return "other"
