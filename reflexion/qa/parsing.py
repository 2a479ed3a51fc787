"""The QA actors' replies read: a CoT reply's ``Finish[answer]`` and a ReAct step's
``Search[..]``/``Lookup[..]``/``Finish[..]`` action. They never raise: a result or a typed
"unparseable" outcome."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

_FINISH = re.compile(r"finish\s*\[", re.IGNORECASE)
_THOUGHT_PREFIX = re.compile(r"^\s*thought(?:\s*\d+)?\s*:\s*", re.IGNORECASE)
_ACTION_LINE = re.compile(r"^\s*action(?:\s*\d+)?\s*:\s*", re.IGNORECASE)

PLACEHOLDERS = frozenset({"answer", "your answer", "the answer", "final answer", "...", "…"})
"""What a small model copies from the format line ``Finish[answer]`` instead of answering: read
as no answer, so the actor asks again (compared without case, brackets and quotes)."""


@dataclass(frozen=True)
class FinishParse:
    """The actor's reply split into its thought and its ``Finish[answer]`` action."""

    thought: str
    answer: str | None
    """The answer inside ``Finish[...]``; ``None`` when the reply has no parseable action."""
    error: str | None = None
    """Why no answer could be read (``None`` when ``answer`` is set)."""


def _balanced(text: str, start: int) -> tuple[str, bool]:
    """Text from ``start`` to the bracket closing an already-open ``[``; (text, closed)."""
    depth = 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return text[start:i], True
        elif ch == "\n" and depth == 1:
            break
    end = text.find("\n", start)
    return text[start : end if end != -1 else len(text)], False


def parse_finish(reply: str) -> FinishParse:
    """Read ``Finish[answer]`` from an actor reply.

    The last ``Finish[`` wins (small models sometimes restate the format first). An unclosed
    bracket is accepted up to the end of its line, since stop sequences can cut the ``]``.
    """
    text = reply or ""
    matches = list(_FINISH.finditer(text))
    thought_part = text[: matches[-1].start()] if matches else text
    lines = [ln for ln in thought_part.strip().splitlines() if not _ACTION_LINE.match(ln)]
    thought = _THOUGHT_PREFIX.sub("", "\n".join(lines).strip()).strip()
    if not matches:
        if not text.strip():
            return FinishParse(thought="", answer=None, error="the reply was empty")
        return FinishParse(thought=thought, answer=None, error="no Finish[answer] action found")
    inner, _closed = _balanced(text, matches[-1].end())
    answer = " ".join(inner.split()).strip("\"'").strip()
    if not answer:
        return FinishParse(thought=thought, answer=None, error="Finish[] held no answer")
    if answer.strip("<>[]{}\"' ").lower() in PLACEHOLDERS:
        error = f"Finish[{answer}] repeats the format's placeholder instead of an answer"
        return FinishParse(thought=thought, answer=None, error=error)
    return FinishParse(thought=thought, answer=answer)


_REACT_ACTION = re.compile(r"\b(search|lookup|finish)\s*\[", re.IGNORECASE)
ReactAction = Literal["search", "lookup", "finish"]


@dataclass(frozen=True)
class ReactStepParse:
    """One ReAct step read from model output: a thought and an action with its argument."""

    thought: str
    action: ReactAction | None
    """``None`` when the reply holds no ``Search[...]``, ``Lookup[...]`` or ``Finish[...]``."""
    argument: str = ""
    error: str | None = None
    """Why no action could be read (``None`` when ``action`` is set)."""


def parse_react_step(reply: str) -> ReactStepParse:
    """Read the first ``Search[..]`` / ``Lookup[..]`` / ``Finish[..]`` action of a ReAct step.

    The first action wins (a model that runs on and invents its own observations has already
    committed to its first action). The thought is the text before it, labels removed.
    """
    text = (reply or "")[:20000]
    match = _REACT_ACTION.search(text)
    head = text[: match.start()] if match else text
    lines = [ln for ln in head.strip().splitlines() if not _ACTION_LINE.match(ln)]
    thought = _THOUGHT_PREFIX.sub("", " ".join(" ".join(lines).split())).strip()
    if match is None:
        if not text.strip():
            return ReactStepParse(thought="", action=None, error="the reply was empty")
        return ReactStepParse(
            thought=thought, action=None, error="no Search[...], Lookup[...] or Finish[...] action"
        )
    inner, _closed = _balanced(text, match.end())
    argument = " ".join(inner.split()).strip("\"'").strip()
    action = cast(ReactAction, match.group(1).lower())
    if not argument:
        return ReactStepParse(
            thought=thought, action=None, error=f"{match.group(1).capitalize()}[] was empty"
        )
    return ReactStepParse(thought=thought, action=action, argument=argument)
