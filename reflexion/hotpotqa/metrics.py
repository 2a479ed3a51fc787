"""Moved to :mod:`reflexion.core.answers` (every graph's exact match); this module goes in the
next release."""

from reflexion.core.moved import moved_names

__getattr__ = moved_names(
    "reflexion.hotpotqa.metrics",
    dict.fromkeys(("normalize_answer", "exact_match"), "reflexion.core.answers"),
)
