"""ALFWorld game files: the bundled ``valid_unseen`` set, reading and packing games, and choosing
them (the engine that plays them is :mod:`reflexion.alfworld.env`).

A game is an ALFWorld ``game.tw-pddl`` file: a JSON object holding a PDDL domain, a PDDL
problem, a text grammar (which carries the ``Your task is to: …`` line) and, usually, an expert
walkthrough. The 134 ``valid_unseen`` games ship inside the package as one compact bundle
(:func:`pack_games`): the domain and the grammar are the same in every game apart from the task
line, so they are stored once. :func:`load_games` unpacks a bundle once into a cache directory,
because the engine loads games from files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
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

KINDS: tuple[str, ...] = ("put", "clean", "heat", "cool", "examine", "puttwo")
"""The task kinds, in the order a balanced selection takes them."""

BUNDLE = "alfworld/valid_unseen.jsonl.gz"
"""The bundled games, relative to ``reflexion/data``."""

GAME_FILE = "game.tw-pddl"
"""The file name of an ALFWorld game inside its directory."""

LIST_HINT = "list the game names with `reflexion list-games [SOURCE]`"
"""How a user sees the available game names (quoted by errors about unknown names)."""

"""The error message when the optional engine cannot be imported."""

_FORMAT = "reflexion-alfworld-games"
_VERSION = 1
_REQUIRED = ("pddl_domain", "grammar", "pddl_problem")
# The task line inside the grammar text (which is itself JSON-like text embedded in a string):
# group 1 is the raw, still-escaped sentence between the quotes.
_TASK_LINE = re.compile(r'"rhs": "(Your task is to: (?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Game:
    """One ALFWorld game file and what the harness needs to know about it."""

    name: str
    """The game's directory relative to the games root, ``/``-separated
    (``pick_and_place_simple-Book-None-Desk-308/trial_T2019…``)."""
    kind: str
    """The task kind, one of :data:`KINDS`."""
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


def _split_grammar(grammar: str) -> tuple[str, str, str] | None:
    """``(head, task, tail)`` with ``head + task + tail == grammar``, where ``task`` is the
    raw task sentence; None unless the grammar has exactly one task line."""
    matches = list(_TASK_LINE.finditer(grammar))
    if len(matches) != 1:
        return None
    start, end = matches[0].span(1)
    return grammar[:start], grammar[start:end], grammar[end:]


def _encode(header: dict[str, Any], name: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The bundle record of one game: only what differs from the header."""
    record: dict[str, Any] = {"name": name}
    data = dict(obj)
    if data["pddl_domain"] == header["pddl_domain"]:
        del data["pddl_domain"]
    split = _split_grammar(data["grammar"])
    if split is not None and (split[0], split[2]) == (
        header["grammar_head"],
        header["grammar_tail"],
    ):
        record["task"] = split[1]
        del data["grammar"]
    record["data"] = data
    return record


def _decode(header: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The game object a bundle record stands for (the inverse of :func:`_encode`)."""
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


def _read_bundle(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
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
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        raise DatasetError(
            f"{file}: not a game bundle made by `reflexion pack-games`; give a directory of "
            "ALFWorld games or such a bundle"
        )
    if header.get("version") != _VERSION or len(records) - 1 != header.get("games"):
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


def pack_games(src_dir: Path, out_file: Path) -> int:
    """Pack every game below ``src_dir`` into one gzip JSONL bundle at ``out_file``.

    The first line is a header with the shared PDDL domain and the grammar around its task
    line; each further line is one game (name, task sentence, PDDL problem, walkthrough and any
    other field), holding a full domain or grammar only where it differs from the header. The
    written file is read back and every game compared with its source (parsed JSON equality)
    before it replaces ``out_file``. Returns the number of games.
    """
    src_dir, out_file = Path(src_dir), Path(out_file)
    if not src_dir.is_dir():
        raise DatasetError(f"{src_dir}: no such directory; give the directory of ALFWorld games")
    games = _scan(src_dir)
    sources = {game.name: read_json(game.path) for game in games}
    first = sources[games[0].name]
    split = _split_grammar(first["grammar"])
    head, tail = (split[0], split[2]) if split else (first["grammar"], "")
    header = {
        "format": _FORMAT,
        "version": _VERSION,
        "games": len(games),
        "pddl_domain": first["pddl_domain"],
        "grammar_head": head,
        "grammar_tail": tail,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [
        json.dumps(_encode(header, name, obj), ensure_ascii=False) for name, obj in sources.items()
    ]
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    buffer = io.BytesIO()
    # mtime=0 and no file name: the same games always give the same bytes (and cache key).
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(payload)
    tmp = out_file.with_name(f".{out_file.name}.{os.getpid()}.tmp")
    try:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(buffer.getvalue())
        unpacked = dict(_read_bundle(tmp))
        if unpacked.keys() != sources.keys():
            raise DatasetError(f"{out_file}: packing lost or renamed games; nothing was written")
        for name, obj in sources.items():
            if unpacked[name] != obj:
                raise DatasetError(
                    f"{src_dir / name / GAME_FILE}: does not survive packing unchanged; "
                    "nothing was written"
                )
        tmp.replace(out_file)
    except OSError as exc:
        raise DatasetError(
            f"{out_file}: cannot be written ({exc.strerror or exc}); give a file path in a "
            "writable directory"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    return len(games)


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
    games = list(_read_bundle(file))
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
    below it; a file means a bundle made by :func:`pack_games` (unpacked once into
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


# ---- choosing games -------------------------------------------------------------------------


def select_games(
    games: list[Game], limit: int | None = None, offset: int = 0, *, balanced: bool = True
) -> list[Game]:
    """The games ``offset … offset+limit`` of an ordering of ``games``.

    Balanced, the ordering takes one game of each kind in turn (in :data:`KINDS` order, each
    kind's games by name, skipping kinds that have run out), so ``limit=12`` gives two games of
    each kind; otherwise it is name order.
    """
    if limit is not None and limit < 0:
        raise ReflexionError(f"the number of games must be 0 or more, not {limit}")
    if offset < 0:
        raise ReflexionError(f"the games offset must be 0 or more, not {offset}")
    ordered = sorted(games, key=lambda game: game.name)
    if balanced:
        queues = [[game for game in ordered if game.kind == kind] for kind in KINDS]
        others = [game for game in ordered if game.kind not in KINDS]
        ordered = [
            queue[depth]
            for depth in range(max((len(queue) for queue in queues), default=0))
            for queue in queues
            if depth < len(queue)
        ] + others
    end = None if limit is None else offset + limit
    return ordered[offset:end]


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
