"""Live ALFWorld environments, kept outside the graph state.

The environment is not serialisable, so it never enters the graph state: :class:`EnvSessions`
keeps one live environment per thread and brings it to the state's recorded actions by
replaying them (a resumed thread, or a new process, replays its trial).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reflexion.alfworld.env import Environment
from reflexion.alfworld.games import Game


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
