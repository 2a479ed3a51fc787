"""User-facing errors.

Every error a user can fix is a :class:`ReflexionError` whose message is one line naming what
is wrong and how to fix it; the CLI prints it and exits non-zero without a traceback.
"""

from __future__ import annotations


class ReflexionError(Exception):
    """An error with a one-line, actionable message."""


class ModelError(ReflexionError):
    """A model string that cannot be resolved, a missing package or a missing key."""


class DatasetError(ReflexionError):
    """A dataset file that is missing, unreadable or malformed."""
