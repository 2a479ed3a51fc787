"""What the guide pages say about the command line and the settings, checked against the code.

The pages are read as a reader reads them, as the figures test reads its tables:

- every option written ``--some-option`` on a line of a code block that runs ``reflexion
  <command>``, or in backquotes in a paragraph that names a command (```reflexion bench
  tasks```, ```bench alfworld```), must be an option of that command (of one of them, where the
  paragraph names several), as its ``--help`` has it;
- a default given beside an option in such a paragraph (```--trials` trials each (10)``,
  ```--db` (default `x`)``) must be the option's default, where the paragraph names one
  command;
- every setting written ```field=value``` must be a field of a context class that accepts the
  value, and a default given beside a field (```memory_size` (Ω, 3 by default)``, ```field`
  defaults to `x```, a table with ``field`` and ``default`` columns) must be that field's
  default in a context class that has it.

Each check has a test that feeds it a wrong page, so a check that found nothing cannot pass
for one that works.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.settings import CONTEXTS
from reflexion.harness.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "guide").glob("*.md")),
    *sorted((ROOT / "docs" / "agents").glob("*.md")),
    ROOT / "docs" / "reference" / "configuration.md",
]
"""The pages a user reads to use the project (the results pages record what ran then)."""

NOT_SETTINGS = {
    "checkpointer": "create_reflexion_graph's argument",
    "durability": "LangGraph's stream argument",
    "evaluator_prompt": "create_reflexion_graph's argument",
    "field": "the placeholder of field=value",
    "interrupt_before": "LangGraph's compile argument",
    "reflector_prompt": "create_reflexion_graph's argument",
    "source": "a fix's record (programming)",
    "subgraphs": "LangGraph's stream argument",
}
"""Names written ``name=value`` on the pages that are no context field, and what they are."""

CLI: Any = typer.main.get_command(app)
"""The ``reflexion`` application as the command line runs it (Typer's own click)."""

GROUPS = ("bench", "perf")
"""The commands that hold commands."""

COMMAND = re.compile(
    r"`(?:reflexion )?((?:bench|perf)(?: [a-z][a-z-]*)?|"
    + "|".join(sorted((n for n in CLI.commands if n not in GROUPS), key=len))
    + r")\b"
)
"""A command named in backquotes in prose: ``reflexion run``, ``bench tasks``, ``perf served``;
``reflexion bench …`` (a group alone) names each of its commands."""


# ---- reading the pages -----------------------------------------------------------------------


def command_of(words: list[str]) -> tuple[str, Any] | None:
    """The command that ``reflexion`` followed by ``words`` runs, with its name."""
    command = CLI
    names: list[str] = []
    for word in words:
        if word not in getattr(command, "commands", {}):
            break
        command = command.commands[word]
        names.append(word)
    return (" ".join(names), command) if names else None


def options_of(command: Any) -> dict[str, Any]:
    """Every spelling of every option of ``command`` (``--trials``, ``-t``, ``--no-diagnose``),
    ``--help`` with no default."""
    found: dict[str, Any] = {"--help": None}
    for param in command.params:
        for name in [*param.opts, *getattr(param, "secondary_opts", [])]:
            found[name] = param
    return found


def paragraphs(text: str) -> Iterator[tuple[str, str]]:
    """("code", line) for each line of a code block, a backslash continuation joined;
    ("prose", paragraph) for each paragraph outside them (a table row is a paragraph)."""
    for n, part in enumerate(re.split(r"^```[^\n]*\n", text, flags=re.M)):
        if n % 2:
            for line in part.replace("\\\n", " ").splitlines():
                yield "code", line.split(" #")[0].strip()
        else:
            for block in re.split(r"\n\s*\n", part):
                rows = block.splitlines() if block.lstrip().startswith("|") else [block]
                for row in rows:
                    yield "prose", " ".join(row.split())


def option_claims(text: str) -> Iterator[tuple[list[str], str, str | None]]:
    """(commands named, option, default written beside it or None) for each option the text
    writes next to a command."""
    for kind, chunk in paragraphs(text):
        if kind == "code":
            words = chunk.split()
            if words[:1] != ["reflexion"]:
                continue
            found = command_of(words[1:])
            if found is None:
                continue
            for word in words:
                if re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", word):
                    yield [found[0]], word.split("=")[0], None
            continue
        named = list(dict.fromkeys(m.group(1) for m in COMMAND.finditer(chunk)))
        named = [
            f"{n} {sub}" if n in GROUPS else n
            for n in named
            for sub in (CLI.commands[n].commands if n in GROUPS else [""])
        ]
        named = [n.strip() for n in named]
        if not named:
            continue
        for span in re.finditer(r"`(--[a-z][a-z0-9-]*)[^`]*`", chunk):
            after = chunk[span.end() : span.end() + 40]
            written = re.match(
                r"(?:[a-z ]{0,20}\((?:default:? )?`?([\w./:-]+)`?\)|"
                r" defaults to `?([\w./:-]+)`?)",
                after,
            )
            default = next((g for g in written.groups() if g), None) if written else None
            yield named, span.group(1), default


def setting_claims(text: str) -> Iterator[tuple[str, str, str]]:
    """(kind, field, value): ``("value", f, v)`` for each ```f=v```, ``("default", f, v)`` for
    each default the text gives a field."""
    for kind, chunk in paragraphs(text):
        if kind == "code":
            continue
        for name, value in re.findall(r"`([a-z][a-z0-9_]*)=([^`\s]*)`", chunk):
            yield "value", name, value
        for name, value in re.findall(
            r"`([a-z][a-z0-9_]*)` \([^()`]*?`?([\w.:-]+)`? by default\)", chunk
        ):
            yield "default", name, value
        for name, value in re.findall(r"`([a-z][a-z0-9_]*)` defaults to `([^`]+)`", chunk):
            yield "default", name, value
        for name, value in re.findall(
            r"`([a-z][a-z0-9_]*)`[a-z ]{0,20}\((?:default:? )?`?(\d[\d.]*)`?\)", chunk
        ):
            yield "default", name, value
    for table in re.findall(r"((?:^\|.*\|\n)+)", text, flags=re.M):
        rows = [[c.strip() for c in row.strip("|").split("|")] for row in table.splitlines()]
        header = [c.lower() for c in rows[0]]
        if "field" not in header or "default" not in header:
            continue
        at, default = header.index("field"), header.index("default")
        for row in rows[2:]:
            name = re.fullmatch(r"`([a-z][a-z0-9_.]*)`", row[at])
            value = re.fullmatch(r"`([^`]*)`", row[default])
            if name and value:
                yield "default", name.group(1), value.group(1)


# ---- checking a claim ------------------------------------------------------------------------


def classes_with(name: str) -> list[type[Any]]:
    return [c for c in CONTEXTS if name in {f.name for f in dataclasses.fields(c)}]


def parse(value: str) -> Any:
    """A value as a page writes it (``3``, ``0.7``, ``false``, ``"turn"``, ``held_out``)."""
    value = value.strip("\"'")
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def default_of(cls: type[Any], name: str) -> Any:
    return getattr(cls(), name)


def setting_problem(kind: str, name: str, value: str) -> str | None:
    """What is wrong with a page's ``name=value`` or default claim, or None."""
    if "." in name or (kind == "value" and (not value or value.isupper())):
        return None  # a nested key (budget.x) or a placeholder (cross_check=N)
    owners = classes_with(name)
    if not owners:
        return None if name in NOT_SETTINGS else f"{name} is no field of a context class"
    wanted = parse(value)
    if kind == "value":
        for cls in owners:
            try:
                cls(**{name: wanted})
                return None
            except (ReflexionError, ValueError, TypeError):
                continue
        return f"no context class accepts {name}={value}"
    defaults = {repr(default_of(cls, name)) for cls in owners}
    if any(default_of(cls, name) == wanted for cls in owners):
        return None
    return f"{name} defaults to {' or '.join(sorted(defaults))}, not {value}"


def option_problem(named: list[str], option: str, default: str | None) -> str | None:
    """What is wrong with an option a page writes beside ``named`` commands, or None."""
    commands = [command_of(n.split()) for n in named]
    found = [(n, options_of(c)) for n, c in filter(None, commands)]
    having = [(n, opts[option]) for n, opts in found if option in opts]
    if not having:
        return f"{option} is no option of {', '.join(n for n, _ in found)}"
    if default is None or len(found) > 1:
        return None
    param = having[0][1]
    if param is None or param.default is None or str(param.default) == default:
        return None
    return f"{option} of {having[0][0]} defaults to {param.default}, not {default}"


def problems(text: str) -> list[str]:
    found = [option_problem(*claim) for claim in option_claims(text)]
    found += [setting_problem(*claim) for claim in setting_claims(text)]
    return [p for p in found if p is not None]


# ---- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", GUIDES, ids=[str(p.relative_to(ROOT)) for p in GUIDES])
def test_a_guide_names_only_real_options_settings_and_defaults(page):
    assert problems(page.read_text(encoding="utf-8")) == []


def test_the_pages_make_claims_for_the_checks_to_read():
    """The checks read something: options beside commands, settings and defaults."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in GUIDES)
    assert len(list(option_claims(text))) > 100
    claims = list(setting_claims(text))
    assert sum(kind == "value" for kind, _, _ in claims) > 20
    assert sum(kind == "default" for kind, _, _ in claims) > 8


@pytest.mark.parametrize(
    ("page", "said"),
    [
        ("```bash\nreflexion bench tasks tasks.jsonl --trails 3\n```\n", "--trails is no option"),
        ("Run `reflexion bench tasks` with `--context x`.\n", "--context is no option"),
        ("`bench alfworld` plays up to `--trials` trials each (10).\n", "defaults to 5, not 10"),
        ("`bench tasks` keeps threads in `--db` (default `.reflexion/x`).\n", "not .reflexion/x"),
        ("Set `wiki=online` for the real site.\n", "no context class accepts wiki=online"),
        ("Set `answer_retries=fresh` here.\n", "answer_retries is no field"),
        (
            "`memory_size` (Ω, 5 by default) is the window.\n",
            "memory_size defaults to 1 or 3, not 5",
        ),
        ("`strategy` defaults to `none`.\n", "not none"),
        (
            "| field | default |\n|---|---|\n| `internal_tests` | `all` |\n",
            "internal_tests defaults to",
        ),
    ],
)
def test_a_wrong_page_fails(page, said):
    found = problems(page)
    assert any(said in p for p in found), found


def test_a_right_page_passes():
    page = (
        "`bench alfworld` plays up to `--trials` trials each (5), `-t` for short.\n\n"
        "```bash\nreflexion bench tasks tasks.jsonl --db runs/t.sqlite --no-diagnose\n```\n"
        '`memory_size` (Ω, 3 by default); `wiki=live`; `seeds="retry"`.\n'
    )
    assert problems(page) == ["--no-diagnose is no option of bench tasks"]


LABORATORY = {
    "a commit hash": r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b",
    "a date": r"\b20\d\d-\d\d-\d\d\b",
    "a default's end date": r"\buntil 20\d\d",
    "draws": r"\bdraws?\b",
    "fresh-first": r"\bfresh-first\b",
    "witnesses": r"\bwitness(?:es)?\b",
    "a database's trial 1": r"\bdatabases? whose\b",
}
"""The laboratory's words, which the results pages keep (they record what ran, and when) and the
guides leave out: the glossary (docs/reference/glossary.md) defines the words a guide needs."""


def laboratory_words(text: str) -> list[str]:
    """The laboratory's words in ``text``, leaving out links' targets (a results page's file
    name may say what it measured)."""
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return [
        f"{what}: {m.group(0)!r}" for what, rx in LABORATORY.items() for m in re.finditer(rx, text)
    ]


@pytest.mark.parametrize("page", GUIDES, ids=[str(p.relative_to(ROOT)) for p in GUIDES])
def test_a_guide_keeps_the_laboratory_s_words_out(page):
    assert laboratory_words(page.read_text(encoding="utf-8")) == []


def test_the_laboratory_s_words_are_found():
    text = "the default until 2026-11-29 (commit 89cc9c9), on other draws, fresh-first, witnesses"
    assert len(laboratory_words(text)) == 6


def prose_sentences(text: str) -> list[str]:
    """A page's sentences as a reader meets them: code blocks, tables and headings left out,
    a link read as its text, each paragraph split after a full stop, a question or an
    exclamation mark."""
    text = re.sub(r"^```.*?^```", "\n\n", text, flags=re.M | re.S)
    found = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*- )", text):  # a list item is a paragraph
        lines = [ln for ln in paragraph.splitlines() if not ln.lstrip().startswith(("|", "#"))]
        prose = " ".join(re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", " ".join(lines)).split())
        ends = r"(?:(?<=[.!?:])|(?<=[.!?:]\*\*))\s+(?=[A-Z*`(\[])"
        found += [s for s in re.split(ends, prose) if s]
    return found


def test_no_readme_sentence_is_over_40_words():
    long = [
        s
        for s in prose_sentences((ROOT / "README.md").read_text(encoding="utf-8"))
        if len(s.split()) > 40
    ]
    assert long == []


def test_a_long_sentence_is_found():
    sentence = " ".join(["Word"] * 41) + "."
    assert [
        len(s.split()) for s in prose_sentences(f"# Title\n\nShort one. {sentence} Next.\n")
    ] == [2, 41, 1]
