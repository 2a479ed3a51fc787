"""The question-answering graphs' contexts: the chain-of-thought actor's (``QAContext``, graphs
``reflexion_qa`` and ``reflexion_qa_cot``) and the ReAct actor's (``ReActContext``, graph
``reflexion_react``). Both add to :class:`~reflexion.core.context.Context` what their actor
reads: for chain-of-thought the defaults its figures were measured with, for ReAct its steps and
its Wikipedia. How retries read the memory and guard against a repeated rejected answer are the
loop's settings (``Context.retry``, ``Context.repeat_guard``)."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    Context,
    ContextBudget,
    Guard,
    Retry,
    Seeded,
    Trials,
    context_budget_field,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

WikiKind = Literal["offline", "live", "langchain"]


QA_FAMILY = "qa"
"""The task family the chain-of-thought graph's model calls are labelled with."""
REACT_FAMILY = "react"
"""The task family the ReAct graph's model calls are labelled with."""


@settings_class
class QAContext(Seeded):
    """Settings of a chain-of-thought question-answering run."""

    PRESETS: ClassVar[Presets] = {"paper": {"retry": "informed", "repeat_guard": 0}}
    """``paper``: every retry is drawn with the memory (the default draws the one informed
    retry first without it), and a repeated rejected answer is kept."""

    max_trials: Trials = redefault("max_trials", 2)  # the HotPotQA figures' two trials
    retry: Retry = redefault("retry", "informed_once")
    repeat_guard: Guard = redefault("repeat_guard", 2)


@settings_class
class ReActContext(Context):
    """Settings of a ReAct question-answering run (Wikipedia search and lookup)."""

    PRESETS: ClassVar[Presets] = {"paper": {"repeat_guard": 0}}
    """``paper``: a repeated search or rejected answer is kept."""

    repeat_guard: Guard = redefault("repeat_guard", 2)

    max_steps: Annotated[int, Field(ge=1, le=100)] = field(
        default=6,
        metadata={
            "description": "ReAct: most Thought/Action steps per trial; a trial that reaches "
            "it without Finish[answer] fails (halted)."
        },
    )
    context_budget: ContextBudget = context_budget_field()
    wiki: WikiKind = field(
        default="offline",
        metadata={
            "description": "ReAct's Wikipedia: offline (a local corpus, no network), live "
            "(wikipedia.org, exact titles) or langchain (langchain-community's "
            "WikipediaRetriever); react_builder(backend=...) takes any LangChain retriever."
        },
    )
    corpus: str | None = field(
        default=None,
        metadata={
            "description": "Offline Wikipedia: a HotPotQA-format JSONL file whose context "
            "paragraphs form the corpus (default: the bundled 100-question sample)."
        },
    )
