"""The real ALFWorld engine (the optional ``alfworld`` extra) behind :class:`TextWorldEnv`:
a bundled game played to a win by its walkthrough, invalid commands, admissible commands and
restarting a game."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexion.alfworld.env import TextWorldEnv, engine_available
from reflexion.alfworld.games import Game, load_games
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import select_games

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not engine_available(), reason="the ALFWorld engine is not installed (extra 'alfworld')"
    ),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One private unpack cache for the module (the engine loads games from files)."""
    home = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("REFLEXION_CACHE_DIR", raising=False)  # it would take precedence
        patch.setenv("XDG_CACHE_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def heat_game(cache: Path) -> Game:
    """A bundled 'heat' game: its walkthrough goes to, takes, heats, opens and places."""
    return next(g for g in select_games(load_games(), balanced=False) if g.kind == "heat")


@pytest.fixture(scope="module")
def env() -> Iterator[TextWorldEnv]:
    """One engine for the module (loading a game costs about a second)."""
    environment = TextWorldEnv()
    yield environment
    environment.close()


def test_a_walkthrough_wins_the_game(env: TextWorldEnv, heat_game: Game):
    first = env.reset(heat_game)
    assert "Your task is to:" in first and "Welcome to TextWorld" not in first
    assert first.startswith("You are in the middle of a room.")
    assert not env.done and not env.won
    *before, last = heat_game.walkthrough
    for command in before:
        assert command in env.admissible_commands
        observation = env.step(command)
        assert observation and observation != "Nothing happens."
        assert not env.done and not env.won, command
    assert last in env.admissible_commands
    env.step(last)
    assert env.won and env.done
    with pytest.raises(ReflexionError, match="ended") as info:
        env.step("look")
    assert "\n" not in str(info.value)


def test_invalid_commands_and_admissible_commands(env: TextWorldEnv, heat_game: Game):
    first = env.reset(heat_game)
    assert env.step("dance with the fridge") == "Nothing happens."
    assert env.step("think: where is the apple?") == "Nothing happens."
    commands = env.admissible_commands
    assert commands and heat_game.walkthrough[0] in commands
    assert {"look", "inventory"} <= set(commands)
    assert env.step("inventory") == "You are not carrying anything."
    observation = env.step(heat_game.walkthrough[0])
    assert observation.startswith("You arrive at ")
    assert heat_game.walkthrough[1] in env.admissible_commands
    # Restarting the loaded game gives the same start and forgets the moves.
    assert env.reset(heat_game) == first
    assert not env.done and heat_game.walkthrough[0] in env.admissible_commands


def test_switching_games_and_stepping_before_reset(heat_game: Game):
    other = next(g for g in load_games() if g.kind == "examine")
    fresh = TextWorldEnv()
    try:
        with pytest.raises(ReflexionError, match="reset"):
            fresh.step("look")
        first = fresh.reset(other)
        assert "Your task is to:" in first and "desklamp" in first
        assert fresh.reset(heat_game) != first
        for command in heat_game.walkthrough:
            fresh.step(command)
        assert fresh.won
    finally:
        fresh.close()
