"""How a context class is made: a pydantic dataclass whose constructor takes a preset, warns
about keys it does not know, expands a field's shorthand, and turns pydantic's
validation errors into one-line :class:`~reflexion.core.errors.ReflexionError` s.

Why ``pydantic.dataclasses`` and not a ``BaseModel``: LangGraph takes either as
``context_schema`` and publishes both as JSON schema with each field's ``minimum``/``maximum``
and ``enum`` (which Studio renders as a form), but a dataclass keeps what the code and its
users already rely on: ``dataclasses.replace``, ``asdict``, ``fields`` and their metadata (the
configuration page is built from it), and plain attribute access without a model's extra API
on every node's context.

Each field documents itself in its ``metadata``: ``description`` (the schema's, Studio's and
the docs'). How the benchmark commands treat a field is the harness's table, not metadata.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import warnings
from collections.abc import Callable
from dataclasses import field, fields
from pathlib import Path
from typing import (
    Annotated,
    Any,
    TypeVar,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from annotated_types import Ge, Gt, Le, Lt
from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from reflexion.core.errors import ContextError
from reflexion.core.presets import preset_values

T = TypeVar("T")

RENAMED = {
    "judge_mode": "judge_threshold: a score threshold, empty for a yes/no verdict",
    "base_url": "the transport (REFLEXION_BASE_URL)",
    "max_retries": "the transport (REFLEXION_MAX_RETRIES)",
    "request_timeout": "the transport (REFLEXION_REQUEST_TIMEOUT)",
    "retry_backoff": "the transport (REFLEXION_RETRY_BACKOFF)",
}
"""Context keys that were renamed before the first release, and what replaced each: an unknown
key's warning names the replacement (a family's context class names its own in a ``RENAMED``
class attribute)."""

REMOVED = dict.fromkeys(
    ("lessons", "recall_k", "lesson_filter", "task_family"),
    "the long-term lesson store (removed: it measured no better; commit cde2057 has it)",
)
"""Context keys of features that were removed, and what each belonged to: a context recorded
with an older thread may still carry them, and the warning says why they are ignored."""


@functools.cache
def _import_context_modules() -> None:
    """Import every package's ``context`` module (``reflexion/<family>/context.py``), found on
    disk rather than named here (the core knows no family), so a hint can name a context class
    the caller never imported."""
    root = Path(__file__).resolve().parents[1]
    package = __name__.rsplit(".", 2)[0]
    for found in pkgutil.iter_modules([str(root)]):
        if found.ispkg and (root / found.name / "context.py").is_file():
            importlib.import_module(f"{package}.{found.name}.context")


def unknown_key_hint(key: str, own: type) -> str:
    """What to write instead of ``key``, which is no field of context class ``own``: its
    replacement where it was renamed, the context classes that have it where it belongs to
    another graph's context, or nothing."""
    renamed = dict(RENAMED)
    for klass in reversed(own.__mro__):
        renamed.update(vars(klass).get("RENAMED", {}))
    if key in renamed:
        return f"{key} is now {renamed[key]}"
    if key in REMOVED:
        return f"{key} belonged to {REMOVED[key]}"
    _import_context_modules()
    root = next((k for k in reversed(own.__mro__) if hasattr(k, "__pydantic_fields__")), own)
    pending, holders = [root], set()
    while pending:
        klass = pending.pop()
        pending += klass.__subclasses__()
        if key in getattr(klass, "__pydantic_fields__", {}):
            holders.add(klass.__name__)
    return f"{key} is a field of {', '.join(sorted(holders))}" if holders else ""


CONFIG = ConfigDict(strict=True, arbitrary_types_allowed=False)
"""Strict: a string or a bool where a number belongs is an error, not a quiet conversion
(a server's JSON context and an embedding app can both hand over either)."""


Normalize = Callable[[type, dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]
"""Expands the shorthands some fields accept (a ``budget`` object) into their values, and hands
back attributes to set beside the fields (see :func:`settings_class`)."""


@overload
def settings_class(cls: type[T], /) -> type[T]: ...
@overload
def settings_class(*, normalize: Normalize | None = None) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(kw_only_default=True, field_specifiers=(field, Field))
def settings_class(cls: type[T] | None = None, /, *, normalize: Normalize | None = None) -> Any:
    """Class decorator of every context class: make it a keyword-only pydantic dataclass and
    wrap its constructor, which then

    - starts from ``preset=NAME`` (its fields this class has), under the values given;
    - hands the values to ``normalize`` (the shorthands some fields accept);
    - ignores a key that is no field, with a warning (a typo must not stop a server run);
    - raises one line naming the field and the fix on a bad value.
    """

    def make(klass: type[T]) -> type[T]:
        built: Any = pydantic_dataclass(kw_only=True, config=CONFIG)(klass)
        init: Callable[..., None] = built.__init__
        normalizing = normalize or getattr(klass, "__normalize__", None)  # a subclass's too
        if normalizing is not None:
            built.__normalize__ = staticmethod(normalizing)

        @functools.wraps(init)
        def __init__(self: T, /, **values: Any) -> None:
            own = type(self)
            names = {f.name for f in fields(own)}  # type: ignore[arg-type]
            preset = values.pop("preset", None)
            given = frozenset(k for k in values if k in names)  # the caller's, not the preset's
            if preset is not None:
                values = {
                    **preset_values(preset, own),
                    **values,
                }
            extras: dict[str, Any] = {}
            if normalizing is not None:
                values, extras = normalizing(own, values)
            unknown = sorted(str(k) for k in values if k not in names)
            if unknown:
                hints = [unknown_key_hint(k, own) for k in unknown]
                advice = [h for h in hints if h] + ["check the spelling"] * (not all(hints))
                warnings.warn(
                    f"context key(s) {', '.join(unknown)} are not fields of {own.__name__} and "
                    f"are ignored ({'; '.join(advice)}; the configuration reference lists each "
                    "graph's fields)",
                    UserWarning,
                    stacklevel=2,
                )
                values = {k: v for k, v in values.items() if k in names}
            try:
                init(self, **values)
            except ValidationError as exc:
                raise ContextError(one_line(own, exc)) from None
            if preset is not None:  # a family's graph given this context starts from it too
                extras["_preset"] = preset
            # what the caller set: a family's graph given this context takes these, and its
            # own defaults for the rest (its figures' configuration)
            extras["_given"] = given
            for name, value in extras.items():  # not fields: kept beside them, not in schemas
                object.__setattr__(self, name, value)

        built.__init__ = __init__
        result: type[T] = built
        return result

    return make if cls is None else make(cls)


def one_line(cls: type, exc: ValidationError) -> str:
    """The first error of a validation as one line: the field, the value, and what to give."""
    error = exc.errors(include_url=False)[0]
    raised = error.get("ctx", {}).get("error")
    if isinstance(raised, ContextError):  # a class's own check (its __post_init__): its line
        return str(raised)
    path = [str(p) for p in error["loc"]]
    name = ".".join(path)
    value = error.get("input")
    kind = error["type"]
    if kind == "literal_error":
        choices = error.get("ctx", {}).get("expected", "")
        choices = choices.replace(" or ", ", ").replace("'", "")
        return f"{name} is {value!r}: use one of {choices}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"{name} is {value!r}: use {_range_text(cls, path)}"
    if kind.endswith("_type") or kind.endswith("_parsing") or kind == "dataclass_exact_type":
        return f"{name} is {value!r}: give {_type_text(kind)}"
    return f"{name} is {value!r}: {error['msg']}"


Bound = dict[str, tuple[float, bool]]
"""A field's ``low`` and/or ``high`` bound, each ``(value, inclusive)``."""


def constraints(hint: Any) -> list[Any]:
    """The constraint objects in a field's ``Annotated`` parts (``annotated_types.Ge``…),
    also inside ``X | None`` and inside a pydantic ``Field``."""
    found: list[Any] = []
    if get_origin(hint) is Annotated:
        for part in get_args(hint)[1:]:  # a pydantic Field() carries its constraints inside
            found += list(getattr(part, "metadata", [part]))
        hint = get_args(hint)[0]
    for arg in get_args(hint):
        found += constraints(arg)
    return found


def field_bound(hint: Any) -> Bound:
    """The range a field's type constrains it to: what construction checks, what the JSON
    schema's ``minimum``/``maximum`` publish and what the configuration reference lists."""
    bound: Bound = {}
    for item in constraints(hint):
        if isinstance(item, Ge):
            bound["low"] = (float(item.ge), True)  # type: ignore[arg-type]
        elif isinstance(item, Gt):
            bound["low"] = (float(item.gt), False)  # type: ignore[arg-type]
        elif isinstance(item, Le):
            bound["high"] = (float(item.le), True)  # type: ignore[arg-type]
        elif isinstance(item, Lt):
            bound["high"] = (float(item.lt), False)  # type: ignore[arg-type]
    return bound


def _range_text(cls: type, path: list[str]) -> str:
    """``a value in [lo, hi]``, ``lo or more``, ``a positive number``…, from the field's
    constraints."""
    hint = get_type_hints(cls, include_extras=True).get(path[0])
    bound = field_bound(hint)
    low, high = bound.get("low"), bound.get("high")
    if low and high:
        return f"a value in [{low[0]:g}, {high[0]:g}]"
    if low and low[1]:
        return f"{low[0]:g} or more"
    if low:
        return "a positive number" if low[0] == 0 else f"a number above {low[0]:g}"
    return f"at most {high[0]:g}" if high else "a value in the field's range"


def _type_text(kind: str) -> str:
    for prefix, text in (
        ("int", "a whole number"),
        ("float", "a number"),
        ("bool", "true or false"),
        ("string", "a string"),
        ("dataclass", "an object of its fields"),
    ):
        if kind.startswith(prefix):
            return text
    return "a value of the field's type"
