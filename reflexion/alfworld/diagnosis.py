"""What an ALFWorld trial's own turns show, for the sightings memory entry written without a
model (``AlfworldContext.alfworld_memory="sightings"``: where the goal's objects were seen) and,
refusal by refusal, for the actor (``AlfworldContext.alfworld_explain``): why the game refused
each refused command, worked out from where the agent was, what it held, which receptacles it
found closed and what it saw in each. The engine answers every command it cannot carry out
with the same "Nothing happens.", which a small model cannot learn from, and a small reflector
misremembers where things were.

Nothing here asks the engine: every reason follows from observations the agent itself saw, as
the paper's heuristic does, so it is self-evaluation, not a hint from the environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from reflexion.alfworld.turns import EMPTY_REPLY, NOTHING, Turn, commands_of

MOST_SEEN = 6
"""Objects listed when a ``take`` names one the agent did not see there."""

COMMANDS = "go to, take, move, open, close, clean, heat, cool, use, examine, inventory, look"
"""The game's verbs, as the actor's system prompt lists them."""

FORMS = {
    "go": "go to Y",
    "take": "take X from Y",
    "move": "move X to Y",
    "put": "move X to Y",
    "open": "open Y",
    "close": "close Y",
    "clean": "clean X with Y",
    "heat": "heat X with Y",
    "cool": "cool X with Y",
    "use": "use X",
}
"""How each verb is written, for a command with a known verb in another form."""

UNKNOWN = "nothing in the turns shows why"
"""The reason given when the turns do not explain a refusal."""

TOOLS = {"heat": ("microwave",), "cool": ("fridge",), "clean": ("sinkbasin", "bathtubbasin")}
"""What each change of state is done with in ALFWorld's households."""

_NAME = r"([^.\n]{1,80}?)"
"""A receptacle or object as the engine names it ("countertop 1"): bounded and free of full
stops, so no pattern rescans a long observation from many starting points."""
_ARRIVE = re.compile(rf"^you arrive at (?:the )?{_NAME}\.", re.IGNORECASE)
_OPENED = re.compile(rf"^you open the {_NAME}\.", re.IGNORECASE)
_CLOSED_NOW = re.compile(rf"^you close the {_NAME}\.", re.IGNORECASE)
_PICKED = re.compile(rf"^you pick up the {_NAME} from the {_NAME}\.", re.IGNORECASE)
_PUT = re.compile(
    rf"^you (?:move the {_NAME} to|put the {_NAME} in/on) the {_NAME}\.", re.IGNORECASE
)

_GO = re.compile(r"^go to (.+)$")
_TAKE = re.compile(r"^take (.+?) from (.+)$")
_MOVE = re.compile(r"^move (.+?) to (.+)$")
_PUT_CMD = re.compile(r"^put (.+?) (?:in/on|into|onto|in|on) (.+)$")
_WITH = re.compile(r"^(heat|cool|clean) (.+?) with (.+)$")
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
    first_seen: dict[str, str] = field(default_factory=dict)
    """Each object, and the receptacle where the agent first saw it."""

    def look(self, place: str, listed: list[str]) -> None:
        """Record what the agent saw at ``place``."""
        self.seen[place] = listed
        for thing in listed:
            self.first_seen.setdefault(thing, place)

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
        if command == EMPTY_REPLY:
            return "the reply held no command"
        if m := _GO.match(command):
            return self._go(m.group(1))
        if m := _TAKE.match(command):
            return self._take(*m.groups())
        if m := _MOVE.match(command):
            return self._move(*m.groups())
        if m := _PUT_CMD.match(command):
            return f"an object is put down with move {m.group(1)} to {m.group(2)}"
        if m := _WITH.match(command):
            return self._with(*m.groups())
        if m := _OPEN.match(command):
            verb, target = m.groups()
            state = "open" if verb == "open" else "closed"
            return self.unmet(None, target) or f"{target} does not {verb}, or was already {state}"
        if m := _USE.match(command):
            thing = m.group(1)
            places = [p for p, things in self.seen.items() if thing in things]
            if self.at and places and self.at not in places:
                return f"{thing} is at {places[0]}, and you were at {self.at}"
        elif (verb := command.split(" ", 1)[0]) in FORMS:
            return f"{verb} is written {FORMS[verb]}"
        elif not _KNOWN.match(command):
            return f"the game has no such command (its commands: {COMMANDS})"
        return UNKNOWN

    def _go(self, target: str) -> str:
        if target == self.at:
            return "you were already there"
        if self.room is not None and target not in self.room:
            return f"the room has no {target}"
        return UNKNOWN

    def _take(self, thing: str, source: str) -> str:
        if self.held == thing:
            return f"you were already holding {thing}"
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
        return UNKNOWN

    def _move(self, thing: str, target: str) -> str:
        if reason := self.unmet(thing, target):
            return reason
        if target in self.closed:
            return f"{target} was closed (open it first)"
        return UNKNOWN

    def _with(self, verb: str, thing: str, tool: str) -> str:
        kinds = TOOLS[verb]
        if tool.split(" ")[0] not in kinds:
            return f"{verb} is done with a {' or '.join(kinds)}"
        return self.unmet(thing, tool) or UNKNOWN

    def observe(self, observation: str) -> None:
        """Bring the state up to date with a command's observation."""
        text = observation.strip()
        if m := _ARRIVE.match(text):
            self.at = m.group(1).lower()
        elif m := _OPENED.match(text):
            opened = m.group(1).lower()
            self.closed.discard(opened)
            listed = things_seen(text)
            if listed is not None:
                self.look(opened, listed)
            return
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
                self.look(self.at, listed)


def _walk(turns: Sequence[Turn], where: _Where) -> Iterator[tuple[Turn, str | None]]:
    """Each command turn in order, with the likeliest reason the game refused it (None for a
    command it carried out), bringing ``where`` up to date as it goes."""
    for turn in commands_of(turns):
        if turn["observation"].strip() == NOTHING:
            yield turn, where.why(" ".join(turn["action"].split()))
        else:
            yield turn, None
            where.observe(turn["observation"])


def _room(task: str) -> _Where:
    """The room before the first turn: its receptacles, from the game's first observation."""
    return _Where(room=things_seen(task.split("\n")[0]) if task else None)


def _replay(turns: Sequence[Turn], task: str) -> _Where:
    """The room as the turns left it."""
    where = _room(task)
    for _ in _walk(turns, where):
        pass
    return where


def explained(turns: Sequence[Turn], task: str) -> list[str]:
    """Each turn's observation as the actor reads it with ``AlfworldContext.alfworld_explain``: a
    refused command's "Nothing happens." followed by the likeliest reason the turns before it
    show ("Nothing happens. Likely because you were already there."); every other observation, and
    a refusal the turns do not explain, as the game wrote it."""
    walked = _walk(turns, _room(task))
    reasons = {id(turn): why for turn, why in walked if why not in (None, UNKNOWN)}
    return [
        f"{turn['observation']} Likely because {reasons[id(turn)]}."
        if id(turn) in reasons
        else turn["observation"]
        for turn in turns
    ]


def task_words(task: str) -> set[str]:
    """The words of the goal ("Your task is to: put a clean mug in coffeemachine.")."""
    _, found, goal = task.lower().rpartition("your task is to:")
    return set(re.findall(r"[a-z]+", goal)) if found else set()


def goal_objects(where: _Where, task: str) -> list[tuple[str, str]]:
    """The objects the goal names that the turns saw, each with where it was first seen."""
    wanted = task_words(task)
    return [
        (thing, place)
        for thing, place in where.first_seen.items()
        if thing.rsplit(" ", 1)[0] in wanted
    ][:MOST_SEEN]


def found_leads(turns: Sequence[Turn], task: str = "") -> str:
    """Each of the goal's objects the trial saw, with the ``go to`` that reaches it, as one
    memory entry (``AlfworldContext.alfworld_memory="sightings"``); ``""`` (no entry) when it
    saw none: a trial that found nothing leaves the next one's prompt as it was."""
    where = _replay(turns, task)
    return " ".join(
        f"{thing} was at {place}: go to {place}." for thing, place in goal_objects(where, task)
    )


def turns_of(trajectory: Sequence[str]) -> list[Turn]:
    """The turns of a trajectory written as lines (``> action``, then its observation)."""
    turns: list[Turn] = []
    for line in trajectory:
        if line.startswith("> "):
            turns.append(Turn(action=line[2:], observation=""))
        elif turns and not turns[-1]["observation"]:
            turns[-1]["observation"] = line
    return turns
