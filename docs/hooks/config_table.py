"""MkDocs hook: the configuration reference's table, generated from the context classes.

Nothing in the table is written by hand. Each row is one dataclass field of a context class: its
name, its type, its default, the values it accepts (a ``Literal`` type's choices, or the range
of its pydantic constraints, read by :func:`reflexion.core.schema.field_bound`, which are what
construction checks and what the JSON schema publishes), the graphs that read it (those of
``langgraph.json`` whose context schema has it; a graph whose context gives the field another
default, the one its family's figures were measured with, is named beside it) and the
``description`` in the field's metadata, the text LangGraph Studio shows.

``SOURCES`` lists the classes, base first. A field is listed under the first class in
``SOURCES`` that has it, so a subclass adds only its own fields, and a field it declares again
with another type (ALFWorld's ``evaluator``, whose choices are its own): that row is read by
the graphs whose context has the field with that type, the earlier row by the others.

Run as a script, it prints the table: ``python docs/hooks/config_table.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

from reflexion.core.schema import Bound, field_bound

SOURCES: list[str] = [
    "reflexion.core.context.Context",
    "reflexion.core.context.Budget",
    "reflexion.qa.context.QAContext",
    "reflexion.qa.context.ReActContext",
    "reflexion.programming.context.CodeContext",
    "reflexion.alfworld.context.AlfworldContext",
]
"""The context classes (dotted path), base first. ``Budget`` is the nested ``budget`` field:
its rows read ``budget.<name>``."""

NESTED = {"reflexion.core.context.Budget": "budget"}
"""Classes that are a field of another, by the field's name."""

GRAPHS = "langgraph.json"
"""Where the graphs are named: the "read by" column lists, for each field, the graphs whose
context schema has it."""

PAGE = "reference/configuration.md"
"""The page whose marker the table replaces."""

MARKER = "<!-- configuration table: generated from the context classes -->"

COMMON_MARKER = "<!-- the fields most users set: generated from the context classes -->"

COMMON: dict[str, list[str]] = {
    "reflexion": ["actor_model", "max_trials", "memory_size", "evaluator", "temperature"],
    "reflexion_qa": ["actor_model", "max_trials", "memory_size", "strategy", "retry"],
    "reflexion_qa_cot": ["actor_model", "max_trials", "memory_size", "strategy", "retry"],
    "reflexion_react": ["actor_model", "max_trials", "max_steps", "wiki", "memory_size"],
    "reflexion_programming": [
        "actor_model",
        "max_trials",
        "memory_size",
        "retry",
        "internal_tests",
        "temperature",
    ],
    "reflexion_alfworld": ["actor_model", "max_trials", "evaluator", "alfworld_memory", "games"],
}
"""Per graph, the handful of fields most users set, in the order the page lists them; the
page opens with them, each at that graph's default."""

MORE: dict[str, str] = {
    "evaluator": "concepts.md#evaluators",
    "strategy": "concepts.md#the-four-strategies",
    "memory_size": "concepts.md#the-memory-window",
    "select_answer": "concepts.md#which-answer-a-thread-returns",
    "budget": "guide/embedding.md#budgets-and-a-plateau-stop",
    "retry": "concepts.md#the-loop",
    "repeat_guard": "agents/qa.md#retries-beyond-the-paper",
    "seeds": "agents/qa.md#settings-in-detail",
    "wiki": "agents/qa.md#wikipedia-three-backends-or-any-retriever-the-same-observations",
    "internal_tests": "agents/programming.md#settings-in-detail",
    "compiler_fixes": "agents/programming.md#settings-in-detail",
    "alfworld_explain": "agents/alfworld.md#settings-in-detail",
    "alfworld_memory": "agents/alfworld.md#settings-in-detail",
    "preset": "concepts.md#presets",
    "max_trials": "concepts.md#the-loop",
    "actor_model": "reference/models.md#hosted-and-served-models",
    "evaluator_model": "reference/models.md#hosted-and-served-models",
    "reflector_model": "reference/models.md#hosted-and-served-models",
    "temperature": "guide/embedding.md#the-arguments",
    "max_tokens": "guide/embedding.md#the-arguments",
    "max_steps": "agents/qa.md#the-three-agents",
    "max_tests": "agents/programming.md#1-tests-once-per-problem",
    "games": "agents/alfworld.md#games-and-the-engine",
}
"""Where a field's description continues (a page under docs/ and its anchor): the table links
it after the description, which stays within two sentences."""

HEADER = (
    "| field | type | default | choices or range | read by | description |\n"
    "|---|---|---|---|---|---|"
)


def load(path: str) -> type[Any]:
    """The class at a dotted path (``package.module.Class``)."""
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"{path} is not a dataclass")
    return cls


def strip_annotated(hint: Any) -> Any:
    """``Annotated[T, ...]`` as ``T``."""
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def type_name(hint: Any) -> str:
    """A short readable name of a field's type: ``int``, ``str | None``, ``str`` for a
    ``Literal`` of strings (its values go to the choices column)."""
    hint = strip_annotated(hint)
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        kinds = sorted({type(v).__name__ for v in typing.get_args(hint)})
        return " | ".join(kinds)
    if origin in (types.UnionType, typing.Union):
        return " | ".join(type_name(arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", str(hint).replace("typing.", ""))


def literal_choices(hint: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` type (or an optional one) allows; empty for other types."""
    hint = strip_annotated(hint)
    if typing.get_origin(hint) is typing.Literal:
        return typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return tuple(v for arg in typing.get_args(hint) for v in literal_choices(arg))
    return ()


def range_text(bound: Bound) -> str:
    """``[0, 10]``, ``≥ 1``, ``> 0`` and the like."""
    low, high = bound.get("low"), bound.get("high")
    if low and high:
        return f"{'[' if low[1] else '('}{low[0]:g}, {high[0]:g}{']' if high[1] else ')'}"
    if low:
        return f"{'≥' if low[1] else '>'} {low[0]:g}"
    if high:
        return f"{'≤' if high[1] else '<'} {high[0]:g}"
    return ""


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    text = " ".join(text.split())
    for char in ("\\", "|", "*", "_", "<", "[", "]", "`"):
        text = text.replace(char, "\\" + char)
    return text


def code(value: Any) -> str:
    """A value as inline code (a table cell)."""
    return "`" + repr(value).replace("|", "\\|") + "`"


def graph_classes() -> dict[str, type[Any]]:
    """Each graph of ``langgraph.json`` with its context schema."""
    root = Path(__file__).resolve().parents[2]
    graphs = json.loads((root / GRAPHS).read_text())["graphs"]
    found: dict[str, type[Any]] = {}
    for graph_id, spec in graphs.items():
        path, _, name = spec["path"].rpartition(":")
        module = importlib.import_module("reflexion.graphs." + Path(path).stem)
        found[graph_id] = getattr(module, name).builder.context_schema
    return found


def graph_schemas() -> dict[str, set[str]]:
    """Each graph of ``langgraph.json`` with the fields of its context schema (a nested
    class's as ``budget.<name>``)."""
    return {graph_id: field_names(schema) for graph_id, schema in graph_classes().items()}


def graph_defaults(name: str, default: Any, readers: list[str]) -> str:
    """Where a graph of ``readers`` gives field ``name`` another default than ``default``
    (the configuration its figures were measured with): ``; `graph`: `value```, one per
    value."""
    by_value: dict[str, list[str]] = {}
    for graph_id, schema in graph_classes().items():
        if graph_id not in readers:
            continue
        own = {f.name: f for f in dataclasses.fields(schema)}.get(name)
        if own is not None and own.default is not dataclasses.MISSING and own.default != default:
            by_value.setdefault(code(own.default), []).append(f"`{graph_id}`")
    return "".join(f"; {', '.join(graphs)}: {value}" for value, graphs in by_value.items())


def field_names(cls: type[Any]) -> set[str]:
    """A context class's field names, a nested class's fields as ``<field>.<name>``."""
    names = set()
    for f in dataclasses.fields(cls):
        names.add(f.name)
        if f.name in NESTED.values():
            names.update(f"{f.name}.{g.name}" for g in dataclasses.fields(f.default_factory()))  # type: ignore[misc]
    return names


def declared(cls: type[Any], name: str) -> str:
    """Field ``name``'s annotation as written by the class that last declared it: two
    declarations that write the same type (a family's context giving a field another default)
    read alike."""
    for klass in cls.__mro__:
        own = inspect.get_annotations(klass)
        if name in own:
            return str(own[name])
    return ""


def rows(sources: list[str] = SOURCES) -> list[dict[str, Any]]:
    """One row per field of the classes in ``sources``; a field already listed under an
    earlier class is not repeated unless this class gives it another type. Init-only settings
    (``InitVar``, such as ``preset``) come last in their class, marked as such. Each row keeps
    its ``readers`` (graph ids) beside the ``read_by`` text, and its ``source`` (the index of
    its class in ``sources``)."""
    schemas = graph_schemas()
    classes = graph_classes()
    seen: dict[str, str] = {}
    found = []
    for source, path in enumerate(sources):
        cls = load(path)
        prefix = f"{NESTED[path]}." if path in NESTED else ""
        hints = typing.get_type_hints(cls, include_extras=True)
        init_only = [
            f
            for f in cls.__dataclass_fields__.values()
            if f._field_type is dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
        ]
        for f in [*dataclasses.fields(cls), *init_only]:
            name = prefix + f.name
            if seen.get(name) == declared(cls, f.name):
                continue  # listed already, with this type
            seen[name] = declared(cls, f.name)
            hint = hints[f.name]
            if isinstance(hint, dataclasses.InitVar):
                hint = hint.type
            readers = [
                g
                for g, names in schemas.items()
                if f in init_only
                or (name in names and (prefix or declared(classes[g], f.name) == seen[name]))
            ]
            if f.default is not dataclasses.MISSING:
                default = code(f.default) + graph_defaults(f.name, f.default, readers)
            elif f.default_factory is not dataclasses.MISSING:
                default = "see below" if f.name in NESTED.values() else code(f.default_factory())
            else:
                default = "required"
            choices = literal_choices(hint)
            accepts = (
                ", ".join(code(c) for c in choices) if choices else range_text(field_bound(hint))
            )
            description = cell(f.metadata.get("description", ""))
            if f in init_only:
                description = "(init only: not kept as a field) " + description
            found.append(
                {
                    "field": name,
                    "type": type_name(hint),
                    "default": default,
                    "accepts": accepts,
                    "read_by": "all graphs"
                    if len(readers) == len(schemas)
                    else ", ".join(f"`{g}`" for g in readers),
                    "description": description,
                    "readers": readers,
                    "source": source,
                }
            )
    return found


def table(sources: list[str] = SOURCES) -> str:
    """The Markdown table of every field in ``sources``."""
    lines = [HEADER]
    for row in rows(sources):
        lines.append(
            f"| `{row['field']}` | {row['type'].replace('|', chr(92) + '|')} "
            f"| {row['default']} | {row['accepts']} | {row['read_by']} | {described(row)} |"
        )
    return "\n".join(lines)


def described(row: dict[str, str]) -> str:
    """A row's description, with the link to where it continues (``MORE``)."""
    name = row["field"]
    more = f" [More](../{MORE[name]})" if name in MORE else ""
    return row["description"] + more


def common_tables() -> str:
    """Per graph of ``COMMON``, its handful of most-set fields at that graph's default, each
    with the first sentence of its description."""
    listed = rows()
    classes = graph_classes()
    parts = []
    for graph_id, names in COMMON.items():
        defaults = {f.name: f for f in dataclasses.fields(classes[graph_id])}
        lines = [f"**`{graph_id}`**\n", "| field | default | what it sets |", "|---|---|---|"]
        for name in names:
            own = defaults[name]
            default = code(own.default) if own.default is not dataclasses.MISSING else "required"
            row = next(r for r in listed if r["field"] == name and graph_id in r["readers"])
            first = row["description"].split(". ", 1)[0].rstrip(".") + "."
            lines.append(f"| `{name}` | {default} | {first} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def render(markdown: str) -> str:
    """The configuration page's Markdown with its marker replaced by the table."""
    for marker in (MARKER, COMMON_MARKER):
        if marker not in markdown:
            raise ValueError(f"{PAGE} lost its marker line: {marker}")
    return markdown.replace(COMMON_MARKER, common_tables()).replace(MARKER, table())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fill in the configuration page's table."""
    if page.file.src_uri == PAGE:
        return render(markdown)
    return markdown


if __name__ == "__main__":
    print(table())
