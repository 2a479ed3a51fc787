"""ALFWorld game files: the bundled ``valid_unseen`` set, reading games and naming one (the
engine that plays them is :mod:`reflexion.alfworld.env`).

A game is an ALFWorld ``game.tw-pddl`` file: a JSON object holding a PDDL domain, a PDDL
problem, a text grammar (which carries the ``Your task is to: …`` line) and, usually, an expert
walkthrough. The 134 ``valid_unseen`` games ship inside the package as one compact bundle
(made by ``reflexion pack-games``): the domain and the grammar are the same in every game
apart from the task line, so they are stored once.
:func:`load_games` unpacks a bundle once into a cache directory, because the engine loads games
from files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reflexion.core.data import bundled, cache_root
from reflexion.core.errors import DatasetError, ReflexionError

TASK_TYPES: dict[str, str] = {
    "pick_and_place_simple": "put",
    "look_at_obj_in_light": "examine",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "puttwo",
}
"""ALFWorld's task-type directory prefixes and the short kind each one stands for."""

BUNDLE = "alfworld/valid_unseen.jsonl.gz"
"""The bundled games, relative to ``reflexion/data``."""

GAME_FILE = "game.tw-pddl"
"""The file name of an ALFWorld game inside its directory."""

LIST_HINT = "list the game names with `reflexion list-games [SOURCE]`"
"""How a user sees the available game names (quoted by errors about unknown names)."""

BUNDLE_FORMAT = "reflexion-alfworld-games"
BUNDLE_VERSION = 1
"""What a bundle's header line says it is: the format and its version (``reflexion
pack-games`` writes them, :func:`load_games` reads only these)."""

_REQUIRED = ("pddl_domain", "grammar", "pddl_problem")


@dataclass(frozen=True)
class Game:
    """One ALFWorld game file and what the harness needs to know about it."""

    name: str
    """The game's directory relative to the games root, ``/``-separated
    (``pick_and_place_simple-Book-None-Desk-308/trial_T2019…``)."""
    kind: str
    """The task kind, one of :data:`TASK_TYPES`' values."""
    path: Path
    """The absolute path of the ``game.tw-pddl`` file the engine loads."""
    walkthrough: tuple[str, ...]
    """The expert's commands that win the game (empty when the file has none)."""


# ---- reading and validating game files ------------------------------------------------------


def _kind_of(file: Path, parts: Sequence[str]) -> str:
    """The kind named by the first of ``parts`` that starts with a task-type prefix."""
    for part in parts:
        for prefix, kind in TASK_TYPES.items():
            if part.startswith(prefix):
                return kind
    raise DatasetError(
        f"{file}: cannot tell the task type of this game; its directory name must start with "
        f"one of: {', '.join(TASK_TYPES)}"
    )


def read_json(file: Path) -> dict[str, Any]:
    """The validated JSON object of a game file."""
    try:
        obj = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read this game file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{file}: not UTF-8 text; a game file is ALFWorld's JSON") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{file}: not valid JSON ({exc.msg} at line {exc.lineno}); replace it with the "
            "original ALFWorld game file"
        ) from None
    _validate(obj, str(file))
    assert isinstance(obj, dict)
    return obj


def _validate(obj: object, where: str) -> None:
    """Raise :class:`DatasetError` unless ``obj`` looks like an ALFWorld game."""
    if not isinstance(obj, dict):
        raise DatasetError(
            f"{where}: expected a JSON object with {', '.join(_REQUIRED)}, got "
            f"{type(obj).__name__}; replace it with the original ALFWorld game file"
        )
    bad = [key for key in _REQUIRED if not isinstance(obj.get(key), str)]
    if bad:
        raise DatasetError(
            f"{where}: missing or non-string field(s) {', '.join(bad)}; a game file needs the "
            f"string fields {', '.join(_REQUIRED)} (replace it with the original ALFWorld file)"
        )
    walkthrough = obj.get("walkthrough", [])
    if not isinstance(walkthrough, list) or not all(isinstance(c, str) for c in walkthrough):
        raise DatasetError(f"{where}: 'walkthrough' must be a list of command strings")


def _game(file: Path, name: str, kind_parts: Sequence[str]) -> Game:
    """Read, validate and describe one game file."""
    obj = read_json(file)
    kind = _kind_of(file, kind_parts)
    return Game(
        name=name,
        kind=kind,
        path=file.resolve(),
        walkthrough=tuple(obj.get("walkthrough", [])),
    )


def _scan(root: Path) -> list[Game]:
    """Every ``*/game.tw-pddl`` below ``root`` (any depth), sorted by name."""
    games = []
    above = list(reversed(root.resolve().parts))
    for file in root.rglob(GAME_FILE):
        if not file.is_file():
            continue
        rel = file.parent.relative_to(root)
        name = rel.as_posix() if rel.parts else root.resolve().name
        games.append(_game(file, name, [*rel.parts, *above]))
    if not games:
        raise DatasetError(
            f"{root}: no */{GAME_FILE} files found below this directory; give a directory of "
            "ALFWorld games or a bundle made by `reflexion pack-games`"
        )
    return sorted(games, key=lambda game: game.name)


# ---- the bundle -----------------------------------------------------------------------------


def bundled_games_path() -> Path:
    """The packed ``valid_unseen`` bundle shipped with the package."""
    return bundled(BUNDLE)


def _decode(header: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The game object a bundle record stands for (the inverse of what
    ``reflexion pack-games`` writes)."""
    data = record["data"]
    obj: dict[str, Any] = {"pddl_domain": data.get("pddl_domain", header["pddl_domain"])}
    if "task" in record:
        obj["grammar"] = header["grammar_head"] + record["task"] + header["grammar_tail"]
    else:
        obj["grammar"] = data["grammar"]
    obj.update((key, value) for key, value in data.items() if key not in obj)
    return obj


def _safe_name(name: object, where: str) -> str:
    """A bundle game name that is a harmless relative path."""
    if not isinstance(name, str) or not name:
        raise DatasetError(f"{where}: a game record needs a non-empty 'name'")
    parts = name.split("/")
    if name.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\\" in name:
        raise DatasetError(f"{where}: game name {name!r} is not a plain relative path")
    return name


def read_bundle(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, game object)`` for each game of a bundle, validated."""
    try:
        with gzip.open(file, "rt", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"{file}: not a readable game bundle ({exc}); give a directory of ALFWorld games or "
            "a bundle made by `reflexion pack-games`"
        ) from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{file}:{number}: not valid JSON ({exc.msg}); rebuild the bundle with "
                "`reflexion pack-games`"
            ) from None
    header = records[0] if records else None
    if not isinstance(header, dict) or header.get("format") != BUNDLE_FORMAT:
        raise DatasetError(
            f"{file}: not a game bundle made by `reflexion pack-games`; give a directory of "
            "ALFWorld games or such a bundle"
        )
    if header.get("version") != BUNDLE_VERSION or len(records) - 1 != header.get("games"):
        raise DatasetError(
            f"{file}: unsupported or truncated bundle (version {header.get('version')}, "
            f"{len(records) - 1} of {header.get('games')} games); rebuild it with "
            "`reflexion pack-games`"
        )
    seen: set[str] = set()
    for number, record in enumerate(records[1:], 2):
        where = f"{file}:{number}"
        if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
            raise DatasetError(f"{where}: a game record must be an object with 'name' and 'data'")
        name = _safe_name(record.get("name"), where)
        if name in seen:
            raise DatasetError(f"{where}: game {name!r} appears twice; rebuild the bundle")
        seen.add(name)
        obj = _decode(header, record)
        _validate(obj, where)
        yield name, obj


def _dump_game(obj: dict[str, Any]) -> str:
    """The text of a game file written from a bundle."""
    return json.dumps(obj, ensure_ascii=False)


def _unpacked(file: Path) -> Path:
    """The directory a bundle is unpacked to, unpacking it first when it is not cached.

    The directory is named by the bundle's content hash and appears atomically: the games are
    written to a temporary sibling that is then renamed, so an interrupted unpack leaves no
    half-written cache (only a stray temporary directory, ignored and replaced next time).
    """
    try:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read this bundle ({exc.strerror or exc})") from None
    root = cache_root("alfworld")
    target = root / digest
    if target.is_dir():
        return target
    games = list(read_bundle(file))
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=root))
    except OSError as exc:
        raise DatasetError(
            f"cannot unpack {file} into {root} ({exc.strerror or exc}); set REFLEXION_CACHE_DIR to "
            "a writable directory"
        ) from None
    try:
        for name, obj in games:
            game_dir = tmp / name
            game_dir.mkdir(parents=True, exist_ok=True)
            (game_dir / GAME_FILE).write_text(_dump_game(obj), encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent unpack that won the race
                raise
    except OSError as exc:
        raise DatasetError(
            f"cannot unpack {file} into {root} ({exc.strerror or exc}); set REFLEXION_CACHE_DIR to "
            "a writable directory"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_games(source: str | Path | None = None) -> list[Game]:
    """The games of ``source``, sorted by name, every file validated.

    ``None`` means the bundled ``valid_unseen`` set; a directory means every ``*/game.tw-pddl``
    below it; a file means a bundle made by ``reflexion pack-games`` (unpacked once into
    ``alfworld/<hash>/`` of :func:`~reflexion.core.data.cache_root`). A game's kind comes from
    the first path component that starts with one of the :data:`TASK_TYPES` prefixes. Problems raise
    :class:`~reflexion.core.errors.DatasetError` with a one-line message naming the file.
    """
    path = bundled_games_path() if source is None else Path(source).expanduser()
    if path.is_dir():
        return _scan(path)
    if path.is_file():
        return _scan(_unpacked(path))
    raise DatasetError(
        f"{path}: no such file or directory; give a directory of ALFWorld games or a bundle "
        "made by `reflexion pack-games`"
    )


def _standalone(file: Path, source: str | Path | None) -> Game:
    """A game given by its file path; named relative to ``source`` when it lies below it."""
    file = file.resolve()
    name = "/".join(file.parent.parts[-2:])
    if source is not None and Path(source).is_dir():
        root = Path(source).expanduser().resolve()
        if file.is_relative_to(root) and file.parent != root:
            name = file.parent.relative_to(root).as_posix()
    return _game(file, name, list(reversed(file.parent.parts)))


def resolve_game(spec: str, source: str | Path | None = None) -> Game:
    """The game ``spec`` names: a game name of ``load_games(source)``, a unique prefix or
    substring of one, or the path of a ``game.tw-pddl`` file or of its directory."""
    if not spec.strip():
        raise ReflexionError(f"an empty game name matches every game; {LIST_HINT}")
    path = Path(spec).expanduser()
    if path.is_dir() and (path / GAME_FILE).is_file():
        return _standalone(path / GAME_FILE, source)
    if path.is_file() and path.name == GAME_FILE:
        return _standalone(path, source)
    games = load_games(source)
    for game in games:
        if game.name == spec:
            return game
    for matches in (
        [game for game in games if game.name.startswith(spec)],
        [game for game in games if spec in game.name],
    ):
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(game.name for game in matches[:3])
            raise ReflexionError(
                f"game {spec!r} is ambiguous: it matches {len(matches)} games ({shown}"
                f"{', …' if len(matches) > 3 else ''}); give more of the name ({LIST_HINT})"
            )
    raise ReflexionError(f"no game named {spec!r}; {LIST_HINT}")


if __name__ == "__main__":  # the last release's way to list the games, for one more release
    import warnings

    warnings.warn(
        "python -m reflexion.alfworld.games is deprecated: use reflexion list-games [SOURCE]",
        DeprecationWarning,
        stacklevel=1,
    )
    for listed in load_games(sys.argv[1] if len(sys.argv) > 1 else None):
        print(f"{listed.kind:8} {listed.name}")
