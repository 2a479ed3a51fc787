"""Why the game refused a command, read from the trial's own turns: where the agent was, what it
held, which receptacles it found closed and what it saw in each. The engine answers every
command it cannot carry out with the same "Nothing happens.", which a small model cannot learn
from; the reflector gets these reasons instead (``Context.alfworld_diagnosis``).

Nothing here asks the engine: every reason follows from observations the agent itself saw, as
the paper's heuristic does, so it is self-evaluation, not a hint from the environment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from reflexion.alfworld.household import NOTHING, Turn, commands_of

MOST_REASONS = 5
"""Distinct refused commands explained per trial (the first ones): the feedback stays short."""

MOST_SEEN = 6
"""Objects listed when a ``take`` names one the agent did not see there."""

COMMANDS = "go to, take, move, open, close, clean, heat, cool, use, examine, inventory, look"

_NAME = r"([^.\n]{1,80}?)"
"""A receptacle or object as the engine names it ("countertop 1"): bounded and free of full
stops, so no pattern rescans a long observation from many starting points."""
_ARRIVE = re.compile(rf"^you arrive at (?:the )?{_NAME}\.", re.IGNORECASE)
_OPENED = re.compile(rf"^you open the {_NAME}\.", re.IGNORECASE)
_CLOSED_NOW = re.compile(rf"^you close the {_NAME}\.", re.IGNORECASE)
_PICKED = re.compile(rf"^you pick up the {_NAME} from the {_NAME}\.", re.IGNORECASE)
_PUT = re.compile(rf"^you (?:move the {_NAME} to|put the {_NAME} in/on) the {_NAME}\.", re.I)

_GO = re.compile(r"^go to (.+)$")
_TAKE = re.compile(r"^take (.+?) from (.+)$")
_MOVE = re.compile(r"^(?:move (.+?) to|put (.+?) (?:in/on|in|on)) (.+)$")
_WITH = re.compile(r"^(?:heat|cool|clean|slice) (.+?) with (.+)$")
_OPEN = re.compile(r"^(open|close) (.+)$")
_USE = re.compile(r"^use (.+)$")
_KNOWN = re.compile(r"^(?:examine|inventory|look)\b")


def things_seen(observation: str) -> list[str] | None:
    """The objects an observation lists after its first "you see" (``[]`` for "nothing"), or
    None when it lists none."""
    lower = observation.lower()
    start = lower.find("you see ")
    if start < 0:
        return None
    start += len("you see ")
    end = lower.find(".", start)
    text = lower[start : end if end >= 0 else len(lower)].strip()
    if text == "nothing":
        return []
    names = []
    for part in text.split(","):  # "a mug 1, a knife 2, and a bowl 1"
        words = part.split()
        if words[:1] == ["and"]:
            words = words[1:]
        if words[:1] in (["a"], ["an"], ["the"]):
            words = words[1:]
        if words:
            names.append(" ".join(words))
    return names


@dataclass
class _Where:
    """What the turns so far say about the room."""

    room: list[str] | None
    at: str | None = None
    held: str | None = None
    closed: set[str] = field(default_factory=set)
    seen: dict[str, list[str]] = field(default_factory=dict)

    def unmet(self, thing: str | None, target: str) -> str | None:
        """Why a command that needs ``thing`` in hand (if any) at ``target`` could not run:
        the agent held something else, or was elsewhere; None when both held."""
        if thing is not None and self.held != thing:
            if self.held:
                return f"you were holding {self.held}, not {thing}"
            return f"you were not holding {thing} (take it first)"
        if self.at != target:
            if self.at:
                return f"you were at {self.at}, not at {target}"
            return f"you had not gone to {target}"
        return None

    def why(self, command: str) -> str:
        """The likeliest reason the game refused ``command`` in this state."""
        if m := _GO.match(command):
            target = m.group(1)
            if target == self.at:
                return "you were already there"
            if self.room is not None and target not in self.room:
                return f"the room has no {target}"
        elif m := _TAKE.match(command):
            thing, source = m.groups()
            if reason := self.unmet(None, source):
                return reason
            if self.held is not None:
                return f"your hands were full: you were holding {self.held} (put it down first)"
            if source in self.closed:
                return f"{source} was closed (open it first)"
            there = self.seen.get(source)
            if there is not None and thing not in there:
                listed = ", ".join(there[:MOST_SEEN]) or "nothing"
                return f"there was no {thing} at {source} (you saw: {listed})"
        elif m := _MOVE.match(command):
            thing, target = m.group(1) or m.group(2), m.group(3)
            if reason := self.unmet(thing, target):
                return reason
            if target in self.closed:
                return f"{target} was closed (open it first)"
        elif m := _WITH.match(command):
            thing, tool = m.groups()
            if reason := self.unmet(thing, tool):
                return reason
        elif m := _OPEN.match(command):
            verb, target = m.groups()
            if reason := self.unmet(None, target):
                return reason
            state = "open" if verb == "open" else "closed"
            return f"{target} does not {verb}, or was already {state}"
        elif m := _USE.match(command):
            thing = m.group(1)
            places = [p for p, things in self.seen.items() if thing in things]
            if places and self.at not in places:
                return f"{thing} is at {places[0]}, and you were at {self.at}"
        elif not _KNOWN.match(command):
            return f"the game has no such command (its commands: {COMMANDS})"
        return "the game did not accept it as written"

    def observe(self, observation: str) -> None:
        """Bring the state up to date with a command's observation."""
        text = observation.strip()
        if m := _ARRIVE.match(text):
            self.at = m.group(1).lower()
        elif m := _OPENED.match(text):
            self.closed.discard(m.group(1).lower())
        elif m := _CLOSED_NOW.match(text):
            self.closed.add(m.group(1).lower())
        elif m := _PICKED.match(text):
            thing, source = m.group(1).lower(), m.group(2).lower()
            self.held = thing
            if thing in self.seen.get(source, []):
                self.seen[source].remove(thing)
            return
        elif m := _PUT.match(text):
            thing, target = (m.group(1) or m.group(2)).lower(), m.group(3).lower()
            self.held = None
            self.seen.setdefault(target, []).append(thing)
            return
        else:
            return
        if self.at is not None:
            if f"the {self.at} is closed." in text.lower():
                self.closed.add(self.at)
            listed = things_seen(text)
            if listed is not None:
                self.seen[self.at] = listed


def refused_commands(turns: Sequence[Turn], task: str = "") -> list[str]:
    """One line per distinct command the game refused (``Nothing happens.``), the first
    :data:`MOST_REASONS` of them, each with the likeliest reason and how often it was sent;
    ``task`` (the game's first observation) names the room's receptacles."""
    where = _Where(room=things_seen(task.split("\n")[0]) if task else None)
    counts: dict[tuple[str, str], int] = {}
    for turn in commands_of(turns):
        command, observation = turn["action"], turn["observation"]
        if observation.strip() == NOTHING:
            key = (command, where.why(command))
            counts[key] = counts.get(key, 0) + 1
        else:
            where.observe(observation)
    lines = []
    for (command, reason), count in list(counts.items())[:MOST_REASONS]:
        times = f" ({count} times)" if count > 1 else ""
        lines.append(f"- {command}{times}: {reason}.")
    return lines


def diagnosis(turns: Sequence[Turn], task: str = "") -> str:
    """The refused commands as a feedback paragraph, or ``""`` when the game refused none."""
    lines = refused_commands(turns, task)
    if not lines:
        return ""
    return 'Commands the game refused (it answered "Nothing happens."):\n' + "\n".join(lines)


def turns_of(trajectory: Sequence[str]) -> list[Turn]:
    """The turns of a trajectory written as lines (``> action``, then its observation)."""
    turns: list[Turn] = []
    for line in trajectory:
        if line.startswith("> "):
            turns.append(Turn(action=line[2:], observation=""))
        elif turns and not turns[-1]["observation"]:
            turns[-1]["observation"] = line
    return turns
