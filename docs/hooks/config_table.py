"""MkDocs hook: the configuration reference's table, generated from the context classes.

Nothing in the table is written by hand. Each row is one dataclass field of a context class:
its name, its type, its default, the values it accepts (a ``Literal`` type's choices, or the
range that the class's ``__post_init__`` checks) and the ``description`` in the field's
metadata, the text LangGraph Studio shows. The range is read from the comparisons in
``__post_init__`` (``self.x < 1``, ``not 0 <= self.x <= 10``), so it is the check the code
makes, not a copy of it.

``SOURCES`` lists the classes, each with the graphs that read it. A field is listed under the
first class in ``SOURCES`` that has it, so a base class goes first and a subclass adds only
its own fields: splitting the context into a base and per-family classes is a change to
``SOURCES`` alone.

Run as a script, it prints the table: ``python docs/hooks/config_table.py``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
import types
import typing
from typing import Any

SOURCES: list[tuple[str, str]] = [
    ("reflexion.core.context.Context", "all graphs"),
]
"""The context classes (dotted path) and, for each, the graphs that read its fields."""

PAGE = "reference/configuration.md"
"""The page whose marker the table replaces."""

MARKER = "<!-- configuration table: generated from the context classes -->"

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


def _self_field(node: ast.AST, loop: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The field names an expression reads: ``self.x``, or ``getattr(self, name)`` (also
    inside ``count := ...``) where ``name`` runs over a tuple of field names."""
    if isinstance(node, ast.NamedExpr):
        return _self_field(node.value, loop)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return (node.attr,)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "self"
        and isinstance(node.args[1], ast.Name)
    ):
        return loop.get(node.args[1].id, ())
    return ()


def _number(node: ast.AST) -> float | int | None:
    """A numeric constant (``1``, ``-1``, ``0.5``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[no-any-return]
    return None


Bounds = dict[str, dict[str, tuple[float | int, bool]]]
"""Per field: ``low`` and/or ``high`` bound, each ``(value, inclusive)``."""


def _rejections(test: ast.AST, loop: dict[str, tuple[str, ...]], bounds: Bounds) -> None:
    """Bounds from an ``if`` test that rejects a value (its body raises): ``self.x < 1``
    rejects below 1, ``not a <= self.x <= b`` rejects outside [a, b]; ``or`` combines them."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        for value in test.values:
            _rejections(value, loop, bounds)
        return
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = test.operand
        if (
            isinstance(inner, ast.Compare)
            and len(inner.ops) == 2
            and all(isinstance(op, ast.LtE | ast.Lt) for op in inner.ops)
        ):
            low, high = _number(inner.left), _number(inner.comparators[1])
            for name in _self_field(inner.comparators[0], loop):
                if low is not None:
                    bounds.setdefault(name, {})["low"] = (low, isinstance(inner.ops[0], ast.LtE))
                if high is not None:
                    bounds.setdefault(name, {})["high"] = (
                        high,
                        isinstance(inner.ops[1], ast.LtE),
                    )
        return
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        names, limit = _self_field(test.left, loop), _number(test.comparators[0])
        if not names or limit is None:
            return
        op = test.ops[0]
        for name in names:
            if isinstance(op, ast.Lt):  # rejects below: the value must be >= limit
                bounds.setdefault(name, {})["low"] = (limit, True)
            elif isinstance(op, ast.LtE):
                bounds.setdefault(name, {})["low"] = (limit, False)
            elif isinstance(op, ast.Gt):
                bounds.setdefault(name, {})["high"] = (limit, True)
            elif isinstance(op, ast.GtE):
                bounds.setdefault(name, {})["high"] = (limit, False)


def checked_bounds(cls: type[Any]) -> Bounds:
    """The numeric bounds the ``__post_init__`` of ``cls`` (and of its bases) enforce."""
    bounds: Bounds = {}
    for klass in reversed(cls.__mro__):
        method = klass.__dict__.get("__post_init__")
        if method is None:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))

        def visit(node: ast.AST, loop: dict[str, tuple[str, ...]]) -> None:
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                items = node.iter
                if isinstance(items, ast.Tuple | ast.List) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in items.elts
                ):
                    names = tuple(e.value for e in items.elts)  # type: ignore[attr-defined]
                    loop = {**loop, node.target.id: names}
            if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
                _rejections(node.test, loop, bounds)
            for child in ast.iter_child_nodes(node):
                visit(child, loop)

        visit(tree, {})
    return bounds


def range_text(bound: dict[str, tuple[float | int, bool]]) -> str:
    """``[0, 10]``, ``≥ 1``, ``> 0`` and the like."""
    low, high = bound.get("low"), bound.get("high")
    if low and high:
        return f"{'[' if low[1] else '('}{low[0]}, {high[0]}{']' if high[1] else ')'}"
    if low:
        return f"{'≥' if low[1] else '>'} {low[0]}"
    if high:
        return f"{'≤' if high[1] else '<'} {high[0]}"
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


def rows(sources: list[tuple[str, str]] = SOURCES) -> list[dict[str, str]]:
    """One row per field of the classes in ``sources``; a field already listed under an
    earlier class is not repeated. Init-only settings (``InitVar``, such as ``preset``)
    come last in their class, marked as such."""
    seen: set[str] = set()
    found = []
    for path, read_by in sources:
        cls = load(path)
        hints = typing.get_type_hints(cls, include_extras=True)
        bounds = checked_bounds(cls)
        init_only = [
            f
            for f in cls.__dataclass_fields__.values()
            if f._field_type is dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
        ]
        for f in [*dataclasses.fields(cls), *init_only]:
            if f.name in seen:
                continue
            seen.add(f.name)
            hint = hints[f.name]
            if isinstance(hint, dataclasses.InitVar):
                hint = hint.type
            if f.default is not dataclasses.MISSING:
                default = code(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                default = code(f.default_factory())
            else:
                default = "required"
            choices = literal_choices(hint)
            accepts = (
                ", ".join(code(c) for c in choices)
                if choices
                else range_text(bounds.get(f.name, {}))
            )
            description = cell(f.metadata.get("description", ""))
            if f in init_only:
                description = "(init only: not kept as a field) " + description
            found.append(
                {
                    "field": f.name,
                    "type": type_name(hint),
                    "default": default,
                    "accepts": accepts,
                    "read_by": read_by,
                    "description": description,
                }
            )
    return found


def table(sources: list[tuple[str, str]] = SOURCES) -> str:
    """The Markdown table of every field in ``sources``."""
    lines = [HEADER]
    for row in rows(sources):
        lines.append(
            f"| `{row['field']}` | {row['type'].replace('|', chr(92) + '|')} "
            f"| {row['default']} | {row['accepts']} | {row['read_by']} | {row['description']} |"
        )
    return "\n".join(lines)


def render(markdown: str) -> str:
    """The configuration page's Markdown with its marker replaced by the table."""
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker line: {MARKER}")
    return markdown.replace(MARKER, table())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fill in the configuration page's table."""
    if page.file.src_uri == PAGE:
        return render(markdown)
    return markdown


if __name__ == "__main__":
    print(table())
