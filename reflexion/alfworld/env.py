"""The ALFWorld engine: TextWorld with ALFWorld's wrappers (the optional ``alfworld`` extra).

:class:`TextWorldEnv` imports the engine only when a game is reset, so this module imports
without it. The agent graph only sees the :class:`Environment` protocol.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reflexion.alfworld.games import Game, read_json
from reflexion.core.errors import ReflexionError, typed_first_line

ENGINE_MISSING = (
    "the ALFWorld engine is not installed: pip install -e '.[alfworld]' "
    "(it compiles for about 7 minutes)"
)
_BANNER = re.compile(r"-= Welcome to TextWorld, ALFRED! =-")


# ---- the engine -----------------------------------------------------------------------------


@runtime_checkable
class Environment(Protocol):
    """A text game the agent plays one command at a time.

    The agent reads only observations and admissible commands; :attr:`won` is for scoring.
    """

    def reset(self, game: Game) -> str:
        """Load (or restart) ``game``; return the initial observation (the room and the
        ``Your task is to: …`` line)."""
        ...

    def step(self, command: str) -> str:
        """Play one command and return the observation (``Nothing happens.`` when the
        command does not apply); raises :class:`ReflexionError` once the game has ended."""
        ...

    @property
    def admissible_commands(self) -> list[str]:
        """The commands the engine accepts in the current state."""
        ...

    @property
    def won(self) -> bool:
        """Whether the task is accomplished."""
        ...

    @property
    def done(self) -> bool:
        """Whether the engine ended the episode (it does when the game is won)."""
        ...

    def close(self) -> None:
        """Release the engine."""
        ...


def engine_available() -> bool:
    """Whether the optional ALFWorld engine (``textworld`` and ``alfworld``) is installed.

    This only looks the packages up; it does not import them.
    """
    return all(importlib.util.find_spec(name) is not None for name in ("textworld", "alfworld"))


def _broken_engine(exc: BaseException) -> str:
    """The message for an engine that is installed but does not import."""
    return (
        f"the ALFWorld engine is installed but does not import ({typed_first_line(exc)}); "
        "reinstall it: pip install -e '.[alfworld]'"
    )


def _import_engine() -> tuple[Any, Any]:
    """``(textworld, AlfredDemangler)``, imported now; :class:`ReflexionError` without them."""
    if not engine_available():
        raise ReflexionError(ENGINE_MISSING)
    try:
        textworld = importlib.import_module("textworld")
        importlib.import_module("textworld.envs")
        wrappers = importlib.import_module("alfworld.agents.environment.alfred_tw_env")
    except ImportError as exc:
        raise ReflexionError(_broken_engine(exc)) from exc
    return textworld, wrappers.AlfredDemangler


def tidy_observation(text: str) -> str:
    """An engine observation without TextWorld's welcome banner, with trailing spaces removed,
    runs of blank lines collapsed to one and the ends stripped."""
    text = _BANNER.sub("", text)
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    tidy: list[str] = []
    for line in lines:
        if line or (tidy and tidy[-1]):
            tidy.append(line)
    return "\n".join(tidy).strip()


class TextWorldEnv:
    """:class:`Environment` on the real engine: TextWorld playing ALFWorld's PDDL games with
    ALFWorld's name demangler (objects read ``alarmclock 1``, ``desk 2``…).

    The engine is imported on the first :meth:`reset`; without the ``alfworld`` extra that
    raises :class:`ReflexionError`. Resetting to the game already loaded restarts it without
    reloading. No step limit is enforced here; the agent counts its own steps.
    """

    def __init__(self) -> None:
        """An environment with no game loaded yet."""
        self._env: Any = None
        self._loaded: Path | None = None
        self._state: Any = None
        self._done = False
        self._won = False
        self._commands: list[str] = []

    def _engine(self) -> Any:
        """The engine with ALFWorld's name demangler, started on first use."""
        if self._env is None:
            textworld, demangler = _import_engine()
            infos = textworld.EnvInfos(won=True, admissible_commands=True)
            try:
                self._env = demangler(textworld.envs.PddlEnv(infos))
            except ImportError as exc:  # fast_downward's compiled library is missing
                raise ReflexionError(_broken_engine(exc)) from exc
        return self._env

    def reset(self, game: Game) -> str:
        """Load ``game`` (or restart it when it is the game loaded) and return its tidied
        initial observation: the room, a blank line and the ``Your task is to: …`` line."""
        env = self._engine()
        self._state, self._done, self._won, self._commands = None, False, False, []
        if self._loaded != game.path:
            # Loaded from the parsed object rather than the path: the engine's own reader
            # leaves the file open (a ResourceWarning), and the file gets validated here.
            data = read_json(game.path)
            self._loaded = None
            try:
                env.load(data)
            except Exception as exc:
                raise ReflexionError(
                    f"{game.path}: the engine cannot load this game ({typed_first_line(exc)}); "
                    "replace it with the original ALFWorld game file"
                ) from exc
            self._loaded = game.path
        self._update(env.reset())
        return tidy_observation(str(self._state.feedback))

    def step(self, command: str) -> str:
        """Play ``command`` and return the tidied observation (``Nothing happens.`` when the
        engine has no such command in this state)."""
        if self._env is None or self._state is None:
            raise ReflexionError("no game is loaded: reset the environment to a game first")
        if self._done:
            raise ReflexionError(
                "the game has already ended; reset the environment before another command"
            )
        state, _score, _done = self._env.step(command)
        self._update(state)
        return tidy_observation(str(state.feedback))

    def _update(self, state: Any) -> None:
        """Keep what the properties report from an engine state."""
        self._state = state
        self._won = bool(state["won"])
        # The engine's ``done`` is ``won or lost``; it reports no ``done`` on reset.
        self._done = self._won or bool(state.get("lost"))
        self._commands = [str(command) for command in state["admissible_commands"]]

    @property
    def admissible_commands(self) -> list[str]:
        """The engine's admissible commands in the current state (a copy)."""
        return list(self._commands)

    @property
    def won(self) -> bool:
        """Whether the current game is won."""
        return self._won

    @property
    def done(self) -> bool:
        """Whether the engine ended the current episode."""
        return self._done

    def close(self) -> None:
        """Close the engine; a later :meth:`reset` starts it again."""
        if self._env is not None:
            self._env.close()
        self._env = None
        self._loaded = None
        self._state, self._done, self._won, self._commands = None, False, False, []
