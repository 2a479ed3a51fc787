"""ALFWorld games without the engine: the bundle format, loading, validation, the unpack
cache, balanced selection and resolving a game by name or path."""

from __future__ import annotations

import collections
import gzip
import json
import shutil
from pathlib import Path

import pytest

from reflexion.alfworld import env as alfworld_env
from reflexion.alfworld.env import Environment, TextWorldEnv, tidy_observation
from reflexion.alfworld.games import (
    TASK_TYPES,
    Game,
    bundled_games_path,
    load_games,
    resolve_game,
)
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import KINDS, pack_games, select_games

SHARED = Path("/work/shared/datasets/alfworld/valid_unseen")
"""The original ALFWorld files, where this machine has them (the bundle was packed from them)."""

COUNTS = {"examine": 6, "put": 8, "clean": 11, "cool": 7, "heat": 8, "puttwo": 7}
"""Task directories per kind in ``valid_unseen`` (134 trials in all)."""

TRIALS = {"examine": 18, "put": 24, "clean": 31, "cool": 21, "heat": 23, "puttwo": 17}
"""Trials (games) per kind in ``valid_unseen``."""


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache directory for every test (bundles unpack there)."""
    home = tmp_path / "cache"
    monkeypatch.delenv("REFLEXION_CACHE_DIR", raising=False)  # it would take precedence
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def original_games() -> Path:
    """A directory of original game files: the shared dataset, else the bundle unpacked."""
    if SHARED.is_dir():
        return SHARED
    return load_games()[0].path.parent.parent.parent


@pytest.fixture
def three_games(tmp_path: Path) -> Path:
    """A directory holding three real games of three kinds, copied with their directories."""
    root, src = tmp_path / "games", original_games()
    picked: dict[str, Path] = {}
    for file in sorted(src.glob("*/*/game.tw-pddl")):
        prefix = next(p for p in TASK_TYPES if file.parent.parent.name.startswith(p))
        if TASK_TYPES[prefix] in ("put", "clean", "examine"):
            picked.setdefault(TASK_TYPES[prefix], file)
    for file in picked.values():
        target = root / file.parent.relative_to(src)
        shutil.copytree(file.parent, target)
    return root


def parsed(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


# ---- packing ----------------------------------------------------------------------------------


def test_pack_then_load_gives_the_same_games(tmp_path: Path, three_games: Path, cache_home: Path):
    bundle = tmp_path / "out" / "three.jsonl.gz"
    assert pack_games(three_games, bundle) == 3
    originals = load_games(three_games)
    unpacked = load_games(bundle)
    assert [g.name for g in unpacked] == [g.name for g in originals]
    assert [g.kind for g in unpacked] == [g.kind for g in originals]
    for before, after in zip(originals, unpacked, strict=True):
        assert after.path.is_relative_to(cache_home / "reflexion" / "alfworld")
        assert parsed(after.path) == parsed(before.path)
        assert after.walkthrough == before.walkthrough and after.walkthrough


def test_packing_stores_the_domain_and_grammar_once(tmp_path: Path, three_games: Path):
    bundle = tmp_path / "three.jsonl.gz"
    pack_games(three_games, bundle)
    header, *records = map(json.loads, gzip.decompress(bundle.read_bytes()).splitlines())
    assert header["games"] == 3 and "pddl_domain" in header
    for record in records:
        assert "pddl_domain" not in record["data"] and "grammar" not in record["data"]
        assert record["task"].startswith("Your task is to: ")
    again = tmp_path / "again.jsonl.gz"
    pack_games(three_games, again)
    assert again.read_bytes() == bundle.read_bytes()  # deterministic bytes, stable cache key


def test_games_that_differ_from_the_shared_parts_round_trip_too(tmp_path: Path, three_games: Path):
    files = sorted(three_games.glob("*/*/game.tw-pddl"))
    odd = parsed(files[1])
    odd["pddl_domain"] += "\n; a local change"
    odd["grammar"] = odd["grammar"].replace("Your task is to:", "Your goal:")
    odd["note"] = ["an extra field", 1]
    del odd["walkthrough"]
    files[1].write_text(json.dumps(odd), encoding="utf-8")
    bundle = tmp_path / "odd.jsonl.gz"
    pack_games(three_games, bundle)
    unpacked = load_games(bundle)
    for before, after in zip(files, unpacked, strict=True):
        assert parsed(after.path) == parsed(before)
    assert unpacked[1].walkthrough == ()


def test_the_unpack_cache_is_written_once_and_atomically(
    tmp_path: Path, three_games: Path, cache_home: Path
):
    bundle = tmp_path / "three.jsonl.gz"
    pack_games(three_games, bundle)
    first = load_games(bundle)
    root = cache_home / "reflexion" / "alfworld"
    (entry,) = root.iterdir()  # one directory named by the content hash, no temporary left
    assert not entry.name.startswith(".")
    stamp = first[0].path.stat().st_mtime_ns
    second = load_games(bundle)
    assert second == first and second[0].path.stat().st_mtime_ns == stamp
    # A stray temporary directory from an interrupted unpack is never mistaken for the cache.
    shutil.rmtree(entry)
    (root / f".{entry.name}-crashed").mkdir()
    (root / f".{entry.name}-crashed" / "partial").write_text("x")
    assert load_games(bundle) == first
    assert sorted(p.name for p in root.iterdir()) == sorted([entry.name, f".{entry.name}-crashed"])


# ---- the bundled set --------------------------------------------------------------------------


def test_the_bundle_holds_the_134_valid_unseen_games():
    games = load_games()
    assert len(games) == 134 and bundled_games_path().name.endswith(".gz")
    assert [g.name for g in games] == sorted(g.name for g in games)
    assert collections.Counter(g.kind for g in games) == TRIALS
    task_dirs = {g.name.split("/")[0]: g.kind for g in games}
    assert collections.Counter(task_dirs.values()) == COUNTS
    assert all(g.walkthrough and g.path.is_absolute() and g.path.is_file() for g in games)
    assert set(KINDS) == set(TASK_TYPES.values())


@pytest.mark.skipif(
    not SHARED.is_dir(), reason="the original ALFWorld files are not on this machine"
)
def test_the_bundle_equals_the_original_files():
    originals = load_games(SHARED)
    bundled = load_games()
    assert [g.name for g in bundled] == [g.name for g in originals]
    for before, after in zip(originals, bundled, strict=True):
        assert parsed(after.path) == parsed(before.path), before.name


def test_a_directory_source_at_any_depth(tmp_path: Path, three_games: Path):
    nested = tmp_path / "deep" / "er"
    shutil.copytree(three_games, nested / "set")
    games = load_games(nested)
    assert [g.name for g in games] == [f"set/{g.name}" for g in load_games(three_games)]
    assert {g.kind for g in games} == {"put", "clean", "examine"}
    # The kind may also come from the source directory itself.
    task_dir = sorted(three_games.iterdir())[0]
    (single,) = load_games(task_dir)
    assert single.name.startswith("trial_") and single.kind == load_games(three_games)[0].kind


# ---- selection --------------------------------------------------------------------------------


def test_balanced_selection_takes_the_kinds_in_turn():
    games = load_games()
    twelve = select_games(games, 12)
    assert collections.Counter(g.kind for g in twelve) == dict.fromkeys(KINDS, 2)
    assert [g.kind for g in twelve[:6]] == list(KINDS)
    by_kind = [g for g in twelve if g.kind == "put"]
    assert by_kind == [g for g in games if g.kind == "put"][:2]
    assert select_games(games, 6, offset=6) == twelve[6:]
    everything = select_games(games)
    assert len(everything) == 134 and set(everything) == set(games)
    # Kinds that run out are skipped: the tail holds only the largest kind.
    assert [g.kind for g in everything[-8:]] == ["clean"] * 8


def test_unbalanced_selection_is_name_order():
    games = load_games()
    assert select_games(games, 5, balanced=False) == games[:5]
    assert select_games(games, 3, offset=130, balanced=False) == games[130:133]
    assert select_games(games, 0) == [] and select_games(games, 5, offset=200) == []


@pytest.mark.parametrize(("limit", "offset"), [(-1, 0), (None, -2)])
def test_negative_limit_or_offset_is_an_error(limit: int | None, offset: int):
    with pytest.raises(ReflexionError, match="0 or more") as info:
        select_games(load_games(), limit, offset)
    assert "\n" not in str(info.value)


# ---- bad inputs -------------------------------------------------------------------------------


def one_line_error(source: Path, *fragments: str) -> str:
    with pytest.raises(ReflexionError) as info:
        load_games(source)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return message


def test_a_missing_source(tmp_path: Path):
    one_line_error(tmp_path / "nowhere", "nowhere", "no such file or directory")


def test_a_directory_without_games(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    one_line_error(tmp_path / "empty", "empty", "no */game.tw-pddl")


def test_a_malformed_game_file(three_games: Path):
    file = sorted(three_games.glob("*/*/game.tw-pddl"))[0]
    file.write_text('{"pddl_domain": "(define', encoding="utf-8")
    one_line_error(three_games, str(file), "not valid JSON")


def test_a_game_file_without_a_field(three_games: Path):
    file = sorted(three_games.glob("*/*/game.tw-pddl"))[2]
    obj = parsed(file)
    assert isinstance(obj, dict)
    del obj["pddl_problem"]
    file.write_text(json.dumps(obj), encoding="utf-8")
    one_line_error(three_games, str(file), "pddl_problem")


def test_a_game_that_is_not_an_object(three_games: Path):
    file = sorted(three_games.glob("*/*/game.tw-pddl"))[0]
    file.write_text("[1, 2]", encoding="utf-8")
    one_line_error(three_games, str(file), "JSON object")


def test_a_game_in_a_directory_of_unknown_kind(three_games: Path):
    game = sorted(three_games.glob("*/*/game.tw-pddl"))[0].parent
    shutil.copytree(game, three_games / "mystery-Task-308" / "trial_1")
    message = one_line_error(three_games, "mystery-Task-308", "must start with one of")
    assert "pick_and_place_simple" in message


def test_a_file_that_is_not_a_bundle(tmp_path: Path):
    plain = tmp_path / "games.txt"
    plain.write_text("hello", encoding="utf-8")
    one_line_error(plain, "games.txt", "reflexion pack-games")
    wrong = tmp_path / "wrong.jsonl.gz"
    with gzip.open(wrong, "wt") as handle:
        handle.write('{"format": "something else"}\n')
    one_line_error(wrong, "wrong.jsonl.gz", "not a game bundle")


def test_a_truncated_bundle(tmp_path: Path, three_games: Path):
    bundle = tmp_path / "three.jsonl.gz"
    pack_games(three_games, bundle)
    lines = gzip.decompress(bundle.read_bytes()).decode().splitlines()
    with gzip.open(bundle, "wt") as handle:
        handle.write("\n".join(lines[:-1]) + "\n")
    one_line_error(bundle, "truncated")


def test_packing_a_missing_directory(tmp_path: Path):
    with pytest.raises(ReflexionError, match="no such directory"):
        pack_games(tmp_path / "nowhere", tmp_path / "out.jsonl.gz")
    assert not (tmp_path / "out.jsonl.gz").exists()


def test_the_pack_games_command_writes_a_game_set_bench_can_read(
    tmp_path: Path, three_games: Path, cache_home: Path, monkeypatch, capsys
):
    from tests import clikit

    bundle = tmp_path / "sets" / "three.jsonl.gz"
    code, _ = clikit.cli(monkeypatch, capsys, "pack-games", str(three_games), str(bundle))
    assert code == 0
    assert [g.name for g in load_games(bundle)] == [g.name for g in load_games(three_games)]
    nowhere = str(tmp_path / "nowhere")
    code, err = clikit.cli(monkeypatch, capsys, "pack-games", nowhere, str(bundle))
    clikit.one_line_error(code, err, nowhere, "no such directory")
    code, err = clikit.cli(monkeypatch, capsys, "pack-games", str(three_games), str(tmp_path))
    clikit.one_line_error(code, err, str(tmp_path), "cannot be written")


# ---- resolving one game -----------------------------------------------------------------------


def test_resolve_by_name_prefix_substring_and_path(three_games: Path):
    games = load_games(three_games)
    target = games[1]
    assert resolve_game(target.name, three_games) == target
    task_dir, trial = target.name.split("/")
    assert resolve_game(task_dir, three_games) == target  # a unique prefix
    assert resolve_game(trial[-12:], three_games) == target  # a unique substring
    assert resolve_game(str(target.path), three_games) == target
    assert resolve_game(str(target.path.parent), three_games) == target
    # Without a source, a path still gives a game named by its last two directories.
    alone = resolve_game(str(target.path))
    assert (alone.name, alone.kind, alone.path) == (target.name, target.kind, target.path)


def test_resolve_in_the_bundled_set():
    games = load_games()
    assert resolve_game(games[40].name) == games[40]
    assert resolve_game(games[40].name.split("/")[1]) == games[40]  # trial ids are unique
    with pytest.raises(ReflexionError, match="matches 17 games"):
        resolve_game("pick_two_obj_and_place")


def test_resolve_unknown_and_ambiguous_names(three_games: Path):
    with pytest.raises(ReflexionError, match="no game named 'zzz'") as unknown:
        resolve_game("zzz", three_games)
    with pytest.raises(ReflexionError, match="ambiguous") as ambiguous:
        resolve_game("trial_", three_games)
    with pytest.raises(ReflexionError):
        resolve_game(" ", three_games)
    for info in (unknown, ambiguous):
        assert "\n" not in str(info.value) and "reflexion list-games" in str(info.value)


# ---- the environment without the engine -------------------------------------------------------


def test_the_engine_environment_satisfies_the_protocol():
    env = TextWorldEnv()
    assert isinstance(env, Environment)
    assert not env.done and not env.won and env.admissible_commands == []
    env.close()


def test_a_missing_engine_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(alfworld_env, "engine_available", lambda: False)
    env = TextWorldEnv()
    with pytest.raises(ReflexionError) as info:
        env.reset(load_games()[0])
    assert str(info.value) == alfworld_env.ENGINE_MISSING
    assert "pip install -e '.[alfworld]'" in str(info.value)
    with pytest.raises(ReflexionError, match="reset"):
        env.step("look")


def test_observations_lose_the_banner_and_stray_whitespace():
    raw = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in a room.  \n\n\n\nYour task is to: x.\n"
    assert tidy_observation(raw) == "You are in a room.\n\nYour task is to: x."


def test_game_is_a_frozen_value():
    game = Game("a/b", "put", Path("/x/game.tw-pddl"), ("go to desk 1",))
    with pytest.raises(AttributeError):
        game.name = "c"  # type: ignore[misc]
