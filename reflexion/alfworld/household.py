"""ALFWorld trials as data: reading the agent's turn, the paper's self-evaluation heuristic,
the failure classes of Figure 3b, and environment sessions kept outside the graph state.

Nothing here calls a model. The environment is not serialisable, so it never enters the graph
state: :class:`EnvSessions` keeps one live environment per thread and brings it to the state's
recorded actions by replaying them (a resumed thread, or a new process, replays its trial).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from typing_extensions import TypedDict

from reflexion.alfworld.env import Environment
from reflexion.alfworld.games import Game
from reflexion.core.state import FAILURE_CLASSES, Episode, FailureClass

THINK_REPLY = "OK."
"""What the agent observes after a ``think:`` turn (the paper's setup)."""

NOTHING = "Nothing happens."
"""The engine's reply to a command it cannot carry out."""

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


def heuristic_trip(turns: Sequence[Turn], *, repeats: int, max_actions: int) -> str | None:
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
    turns: Sequence[Turn], stop_reason: str | None, *, repeats: int, max_actions: int
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


# ---- sessions ---------------------------------------------------------------------------------


@dataclass
class _Session:
    env: Environment
    game: str = ""
    history: list[str] = field(default_factory=list)


class EnvSessions:
    """Live environments, one per thread, made by ``factory`` and reused across threads.

    :meth:`observe` and :meth:`step` first bring the thread's environment to the state the
    graph recorded (game and commands so far), resetting and replaying when they differ, so
    a thread resumed from a checkpoint — in this process or another — continues from the same
    game state. :meth:`release` returns a thread's environment to a pool for the next thread.
    """

    def __init__(self, factory: Callable[[], Environment]) -> None:
        self._factory = factory
        self._sessions: dict[str, _Session] = {}
        self._idle: list[Environment] = []
        self._lock = threading.Lock()
        self.replays = 0
        """How many times a thread's environment had to be rebuilt by replay (for tests)."""

    def _session(self, key: str) -> _Session:
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                env = self._idle.pop() if self._idle else self._factory()
                session = self._sessions[key] = _Session(env)
            return session

    def start(self, key: str, game: Game) -> str:
        """Reset the thread's environment to the start of ``game``; the initial observation."""
        session = self._session(key)
        observation = session.env.reset(game)
        session.game, session.history = game.name, []
        return observation

    def _sync(self, session: _Session, game: Game, history: Sequence[str]) -> None:
        if session.game == game.name and session.history == list(history):
            return
        self.replays += 1
        session.env.reset(game)
        session.game, session.history = game.name, []
        for command in history:
            session.env.step(command)
            session.history.append(command)

    def step(self, key: str, game: Game, history: Sequence[str], command: str) -> str:
        """Run ``command`` after the recorded ``history`` of this trial; the observation."""
        session = self._session(key)
        self._sync(session, game, history)
        observation = session.env.step(command)
        session.history.append(command)
        return observation

    def done(self, key: str, game: Game, history: Sequence[str]) -> tuple[bool, bool]:
        """(episode over, won) after ``history``."""
        session = self._session(key)
        self._sync(session, game, history)
        return session.env.done, session.env.won

    def release(self, key: str) -> None:
        """The thread's trial is over: keep its environment for reuse."""
        with self._lock:
            session = self._sessions.pop(key, None)
            if session is not None:
                self._idle.append(session.env)

    def close(self) -> None:
        """Close every environment."""
        with self._lock:
            envs = [s.env for s in self._sessions.values()] + self._idle
            self._sessions.clear()
            self._idle.clear()
        for env in envs:
            env.close()


# ---- scoring a benchmark (Figure 3) ---------------------------------------------------------


def won_at(episodes: Sequence[Episode]) -> int | None:
    """The first trial the engine scored as won, or ``None``."""
    return next((e["trial"] for e in episodes if e["won"]), None)


def solved_curve(finals: Sequence[dict[str, object]], trials: int) -> list[float]:
    """Figure 3a: the proportion of games won by trial 1..``trials`` (by the engine's verdict;
    a game the loop stopped early on stays as it was)."""
    n = len(finals)
    firsts = [won_at(_episodes(f)) for f in finals]
    return [
        sum(1 for w in firsts if w is not None and w <= t) / n if n else 0.0
        for t in range(1, trials + 1)
    ]


def failure_curves(
    finals: Sequence[dict[str, object]], trials: int
) -> dict[FailureClass, list[float]]:
    """Figure 3b: for each failure class, the proportion of games not yet won after trial t
    whose latest trial so far failed for that reason."""
    n = len(finals)
    curves: dict[FailureClass, list[float]] = {c: [0.0] * trials for c in FAILURE_CLASSES}
    for final in finals:
        episodes = _episodes(final)
        first = won_at(episodes)
        for t in range(1, trials + 1):
            if first is not None and first <= t:
                continue
            ran = [e for e in episodes if e["trial"] <= t]
            if ran and ran[-1]["failure"] is not None:
                curves[ran[-1]["failure"]][t - 1] += 1 / n
    return curves


def failure_counts(finals: Sequence[dict[str, object]]) -> Counter[str]:
    """How many failed trials fell in each class, over all games and trials."""
    return Counter(
        str(e["failure"]) for f in finals for e in _episodes(f) if e["failure"] is not None
    )


def self_evaluation(finals: Sequence[dict[str, object]]) -> tuple[int, int, int]:
    """(agreements, false successes, missed wins) of the self-evaluator against the engine,
    over every trial."""
    agree = false_success = missed = 0
    for final in finals:
        verdicts = {int(str(r["trial"])): bool(r["success"]) for r in _records(final)}
        for episode in _episodes(final):
            said = verdicts.get(episode["trial"])
            if said is None:
                continue
            if said == episode["won"]:
                agree += 1
            elif said:
                false_success += 1
            else:
                missed += 1
    return agree, false_success, missed


def _episodes(final: dict[str, object]) -> list[Episode]:
    value = final.get("episodes")
    return list(value) if isinstance(value, list) else []


def _records(final: dict[str, object]) -> list[dict[str, object]]:
    value = final.get("evaluations")
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []
