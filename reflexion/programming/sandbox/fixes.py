"""The fixes ``rustc`` suggests for its own errors, read from its JSON diagnostics and applied
to the source it checked.

``rustc --error-format=json`` prints one diagnostic per line. An error's ``children`` (its
``help:`` notes) may carry suggestions: spans of the checked file, each with a
``suggested_replacement`` and how sure ``rustc`` is of it (``suggestion_applicability``).
This module only reads text: the compiler runs in the sandbox (:func:`.runner.fix_rust`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

APPLICABLE = ("MachineApplicable", "MaybeIncorrect")
"""The suggestions taken: those ``rustc`` would apply itself, and those it is unsure of (a
conversion such as ``.try_into().unwrap()``, a borrow added or removed). Suggestions with
placeholders, or of unspecified applicability, are left alone."""


@dataclass(frozen=True)
class Edit:
    """Replace bytes ``start``–``end`` of the checked source by ``text``."""

    start: int
    end: int
    text: str

    def overlaps(self, other: Edit) -> bool:
        """Whether the two edits touch the same bytes (two insertions at one place count)."""
        if self.start == other.start:
            return True
        return self.start < other.end and other.start < self.end


def suggested_edits(stderr: str, file_name: str) -> list[tuple[Edit, ...]]:
    """Per error diagnostic, the first suggestion in ``file_name`` that ``rustc`` marks as
    applicable, as the group of edits that make it up (a suggestion may change several
    places at once)."""
    groups: list[tuple[Edit, ...]] = []
    for line in stderr.splitlines():
        try:
            diagnostic = json.loads(line)
        except ValueError:
            continue
        if not isinstance(diagnostic, dict) or diagnostic.get("level") != "error":
            continue
        for child in diagnostic.get("children") or []:
            group = _suggestion(child, file_name) if isinstance(child, dict) else ()
            if group:
                groups.append(group)
                break
    return groups


def _suggestion(child: dict[str, Any], file_name: str) -> tuple[Edit, ...]:
    spans = [s for s in child.get("spans") or [] if isinstance(s, dict)]
    edits: list[Edit] = []
    for span in spans:
        replacement = span.get("suggested_replacement")
        if not isinstance(replacement, str):
            continue
        if span.get("suggestion_applicability") not in APPLICABLE:
            return ()
        if span.get("file_name") != file_name:
            return ()
        try:
            edits.append(Edit(int(span["byte_start"]), int(span["byte_end"]), replacement))
        except (KeyError, TypeError, ValueError):
            return ()
    return tuple(edits)


def apply_edits(source: str, groups: Iterable[tuple[Edit, ...]], start: int = 0) -> str:
    """``source`` with each group applied whose edits all lie at or after byte ``start`` and
    touch nothing an earlier group changes (the others wait for the next check). An insertion
    before ``start`` (rustc puts a missing ``use`` at the top of the file) moves to ``start``."""
    data = source.encode()
    taken: list[Edit] = []
    for found in groups:
        group = [Edit(start, start, e.text) if e.start == e.end < start else e for e in found]
        if any(not start <= e.start <= e.end <= len(data) for e in group):
            continue
        if any(e.overlaps(t) for e in group for t in taken):
            continue
        taken.extend(group)
    for edit in sorted(taken, key=lambda e: e.start, reverse=True):
        data = data[: edit.start] + edit.text.encode() + data[edit.end :]
    return data.decode(errors="replace")
