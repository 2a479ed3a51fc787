"""User-facing errors.

Every error a user can fix is a :class:`ReflexionError` whose message is one line naming what
is wrong and how to fix it; the CLI prints it and exits non-zero without a traceback.
"""

from __future__ import annotations


class ReflexionError(RuntimeError):
    """An error with a one-line, actionable message. A ``RuntimeError``: a LangGraph server
    passes a run's error message on to its client only for Python's own exception types
    (others read "An internal error occurred"), and the line must reach the SDK whole."""


class ContextError(ReflexionError, ValueError):
    """A context value that is wrong (a type, a choice, a range, a name). Also a
    ``ValueError``, as pydantic's own checks raise."""


class ModelError(ReflexionError):
    """A model string that cannot be resolved, a missing package or a missing key."""


class DatasetError(ReflexionError):
    """A dataset file that is missing, unreadable or malformed."""


class EmptyReplyError(Exception):
    """A provider answered with an empty message (no text, no tool calls): a transient fault
    that is retried like a 429 or a 500. Deliberately not a :class:`ReflexionError`, which
    would stop a whole benchmark; once retries run out it becomes a :class:`ProviderError`."""


class ProviderError(Exception):
    """A model call that still failed after its retries (timeouts, 429, 5xx, empty replies).

    Not a :class:`ReflexionError`: a benchmark records it as the task's ``error`` line, with
    this one-line reason, and goes on with the next task."""


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's message (its type's name when it has none),
    for the one-line messages that quote an underlying error."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def typed_first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (the type alone when the message is empty)."""
    text = first_line(exc)
    name = type(exc).__name__
    return name if text == name else f"{name}: {text}"
