"""Parsers for model output. They never raise: a result or a typed "unparseable" outcome."""

from __future__ import annotations

import json
import math
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


_ANSWER_MARKER = re.compile(
    r"(?:^[ \t]*[*_]*(?i:final[ \t]+)?(?i:answer)"  # at a line's start, in any case
    r"|(?<=\s)[*_]*(?:(?i:final[ \t]+answer)|Answer|ANSWER))"  # after a space: not `f(answer:`
    r"[*_]*[ \t]*:[*_]*[ \t]*",
    re.MULTILINE,
)


def read_answer(text: str) -> tuple[str | None, str]:
    """The answer marked ``Answer:`` in a free-text reply, and the reasoning before it.

    A marker is ``Answer:`` (or ``Final answer:``, bold or not) at the start of a line, in any
    case, or ``Answer:``/``ANSWER:``/``final answer:`` after a space anywhere in a line
    ("… so it is Sydney. Answer: Sydney"). A lower-case ``answer:`` inside a line is no marker,
    so code such as ``lambda answer: answer`` is left whole. The last marker wins: the answer is
    the text after it, to the end of the reply (it may span lines), and the reasoning is the
    text before it. Without a marker the whole reply is the answer and the reasoning is empty.
    The answer is ``None`` when that text is empty."""
    text = (text or "").strip()
    markers = list(_ANSWER_MARKER.finditer(text))
    if not markers:
        return text or None, ""
    last = markers[-1]
    return text[last.end() :].strip() or None, text[: last.start()].strip()


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict read from model output."""

    success: bool | None
    """``None`` when the output held no verdict."""
    score: float | None
    feedback: str


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_SCORE = re.compile(r"\bscore\b\W{0,5}(\d+(?:\.\d+)?)\s*(/\s*(\d+))?", re.IGNORECASE)
_NEGATIVE = re.compile(
    r"\b(incorrect|wrong|not correct|fail(?:s|ed)?|unsolved|not solved|no)\b", re.IGNORECASE
)
_POSITIVE = re.compile(
    r"\b(correct|right|solved|succe(?:ss|eded)|pass(?:es|ed)?|yes)\b", re.IGNORECASE
)
_TRUTHY = {"true", "yes", "correct", "pass", "passed", "success", "solved", "1"}
_FALSY = {"false", "no", "incorrect", "fail", "failed", "wrong", "unsolved", "0"}


def _clamp(value: float) -> float | None:
    """The score within [0, 1]; ``None`` for NaN (``max``/``min`` would make it 1.0)."""
    return None if math.isnan(value) else max(0.0, min(1.0, value))


def _from_json(obj: dict[str, object]) -> Verdict | None:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    success: bool | None = None
    for key in ("verdict", "correct", "success", "solved", "answer_correct", "label"):
        if key in lowered:
            value = lowered[key]
            if isinstance(value, bool):
                success = value
            elif str(value).strip().lower() in _TRUTHY:
                success = True
            elif str(value).strip().lower() in _FALSY:
                success = False
            break
    score: float | None = None
    raw_score = lowered.get("score")
    if isinstance(raw_score, (int, float)) and not isinstance(raw_score, bool):
        try:
            score = float(raw_score)
        except OverflowError:  # an integer beyond the float range
            score = math.inf if raw_score > 0 else -math.inf
        score = _clamp(score / 10.0 if 1.0 < score <= 10.0 else score)
    elif isinstance(raw_score, str):
        try:
            score = _clamp(float(raw_score))
        except ValueError:
            score = None
    if success is None and score is None:
        return None
    feedback = str(
        lowered.get("feedback")
        or lowered.get("reason")
        or lowered.get("reasoning")
        or lowered.get("explanation")
        or ""
    )
    return Verdict(success=success, score=score, feedback=feedback.strip())


def parse_verdict(text: str) -> Verdict:
    """Read a judge's verdict from JSON or free text; ``success=None`` when there is none."""
    text = text or ""
    for match in _JSON_OBJECT.finditer(text[:20000]):
        try:
            obj = json.loads(match.group(0))
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            verdict = _from_json(obj)
            if verdict is not None:
                return verdict
    score: float | None = None
    m = _SCORE.search(text)
    if m:
        try:
            value = float(m.group(1))
            denom = float(m.group(3)) if m.group(3) else (10.0 if value > 1.0 else 1.0)
            score = _clamp(value / denom) if denom > 0 else None
        except ValueError:
            score = None
    head = text.strip()[:200]
    neg, pos = _NEGATIVE.search(head), _POSITIVE.search(head)
    success: bool | None
    if neg and (not pos or neg.start() <= pos.start()):
        success = False
    elif pos:
        success = True
    else:
        success = None
    return Verdict(success=success, score=score, feedback=text.strip()[:1000])


_REFLECTION_PREFIX = re.compile(r"^\s*(?:reflection|lesson)\s*:\s*", re.IGNORECASE)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def clean_reflection(text: str, max_sentences: int = 3, max_chars: int = 800) -> str:
    """Trim a reflector reply to the lesson itself: no label, no repeats, no trailing chatter."""
    text = _REFLECTION_PREFIX.sub("", (text or "").strip())
    # A small model may go on to invent a new trial; keep only the lesson.
    # [^\S\n]*, not \s*: from every newline of a long blank run \s* would rescan the rest of
    # the run (quadratic); the part kept differs only by trailing whitespace, dropped below.
    text = re.split(
        r"\n[^\S\n]*(?:trial\s*#?\d|question\s*:|task\s*:|previous (?:trial|attempt))",
        text,
        flags=re.IGNORECASE,
    )[0]
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        if sentence and sentence not in sentences:
            sentences.append(sentence)
        if len(sentences) == max_sentences:
            break
    text = " ".join(sentences)
    if len(text) > max_chars:
        text = text[: max_chars - 1].rstrip() + "…"
    return text


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
