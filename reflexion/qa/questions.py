"""HotPotQA questions: the bundled 100-question sample or any JSONL file of the same format."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from reflexion.core.data import bundled, iter_jsonl
from reflexion.core.errors import DatasetError

HOTPOTQA_SAMPLE = "hotpotqa/hotpotqa_distractor_sample100.jsonl"


@dataclass(frozen=True)
class HotpotQuestion:
    """One HotPotQA question with its paragraphs."""

    id: str
    question: str
    answer: str
    paragraphs: list[tuple[str, list[str]]]
    """All the paragraphs of the data set's ``context`` field: (title, sentences)."""
    supporting_titles: list[str]
    """Titles of the gold paragraphs, in order of first mention in ``supporting_facts``."""


def _parse_hotpot(obj: object, where: str) -> HotpotQuestion:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object per line, got {type(obj).__name__}")
    missing = [k for k in ("question", "answer", "context") if k not in obj]
    if missing:
        raise DatasetError(
            f"{where}: missing field(s) {', '.join(missing)}; a HotPotQA line needs "
            "question, answer, context (and id, supporting_facts)"
        )
    question = obj["question"]
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{where}: the question is empty; give every line a question text")
    try:
        paragraphs = [(str(title), [str(s) for s in sents]) for title, sents in obj["context"]]
        facts = obj.get("supporting_facts") or []
        titles: list[str] = []
        for fact in facts:
            title = str(fact[0])
            if title not in titles:
                titles.append(title)
    except (TypeError, ValueError, IndexError):
        raise DatasetError(
            f"{where}: 'context' must be [[title, [sentences…]]…] and 'supporting_facts' "
            "[[title, sentence_id]…]"
        ) from None
    return HotpotQuestion(
        id=str(obj.get("id") or obj.get("_id") or where),
        question=question.strip(),
        answer=str(obj["answer"]),
        paragraphs=paragraphs,
        supporting_titles=titles,
    )


def iter_hotpotqa(path: str | Path | None = None) -> Iterator[HotpotQuestion]:
    """Questions of a HotPotQA JSONL file (default: the bundled sample), validated per line."""
    file = Path(path) if path is not None else bundled(HOTPOTQA_SAMPLE)
    for where, obj in iter_jsonl(file):
        yield _parse_hotpot(obj, where)
