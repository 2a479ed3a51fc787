"""What every family's nodes read out of a model reply: the answer an ``Answer:`` marker
gives, a judge's verdict, a reflection trimmed to its lesson. They never raise: a result or a
typed "unparseable" outcome."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

_LINE_START = r"^[ \t]*[*_]*(?i:final[ \t]+)?(?i:answer)"  # at a line's start, in any case
_IN_LINE = r"(?<=\s)[*_]*(?:(?i:final[ \t]+answer)|Answer|ANSWER)"  # after a space: no `f(answer:`
_ANSWER_MARKER = re.compile(
    rf"(?:{_LINE_START}|{_IN_LINE})[*_]*[ \t]*:[*_]*[ \t]*",
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
