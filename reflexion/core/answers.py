"""Answer normalisation and exact match, as in the HotPotQA evaluation script (SQuAD's rules):
the exact-match evaluator of every graph that has a reference answer."""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str | None, reference: str) -> bool:
    """Whether the normalised prediction equals the normalised reference."""
    if prediction is None:
        return False
    return normalize_answer(prediction) == normalize_answer(reference)
