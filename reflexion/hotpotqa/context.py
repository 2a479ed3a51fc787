"""The question-answering graphs' contexts: the chain-of-thought actor's (``QAContext``, graphs
``reflexion_qa`` and ``reflexion_qa_cot``) and the ReAct actor's (``ReActContext``, graph
``reflexion_react``). Both add to :class:`~reflexion.core.context.Context` what their actor
reads: how a retry treats answers already judged incorrect, and for ReAct its steps and its
Wikipedia."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from reflexion.core.context import (
    AFTER_FIRST_TRIAL,
    Context,
    ContextBudget,
    RetrySeeds,
    Trials,
    context_budget_field,
    redefault,
)
from reflexion.core.presets import Presets
from reflexion.core.schema import settings_class

WikiKind = Literal["offline", "live", "langchain"]
AnswerRetry = Literal["fresh_first", "memory", "resample"]


QA_FAMILY = "qa"
"""The task family of the chain-of-thought graph's lessons (``Context.lessons``)."""
REACT_FAMILY = "react"
"""The task family of the ReAct graph's lessons."""


@settings_class
class AnswerMemory(Context, abstract=True):
    """What both question-answering actors' memory does with answers judged incorrect."""

    PRESETS: ClassVar[Presets] = {"paper": {"redraw_rejected": 0}}
    """``paper``: no redraw of a retry that repeats an answer already judged incorrect."""

    show_rejected: bool = field(
        default=False,
        metadata={
            "description": "Question answering: the memory also lists the answers of earlier "
            "trials that the evaluator judged incorrect, asking for a different one (under "
            "every strategy that keeps memory; none keeps nothing). Off: the paper's memory.",
            "role": AFTER_FIRST_TRIAL,
            "acts": "memory",
        },
    )
    redraw_rejected: Annotated[int, Field(ge=0, le=10)] = field(
        default=2,
        metadata={
            "description": "Question answering (CoT and ReAct): when a retry gives an answer "
            "the evaluator already judged incorrect, sample again at temperature 0.8 up to "
            "this many times (under every strategy that keeps memory; none keeps nothing); "
            "0 = keep the repeat (the paper).",
            "role": AFTER_FIRST_TRIAL,
            "acts": "memory_or_resample",
        },
    )
    memory_first: bool = field(
        default=True,
        metadata={
            "description": "Question answering: the memory goes before the context and the "
            "question, as in the paper's prompts, so the question is read last. Off: after the "
            "question, so the prompt up to the question stays the same across trials.",
            "role": AFTER_FIRST_TRIAL,
            "acts": "memory",
        },
    )


@settings_class
class QAContext(AnswerMemory):
    """Settings of a chain-of-thought question-answering run."""

    PRESETS: ClassVar[Presets] = {"paper": {"answer_retry": "memory", "correct_rejected": False}}
    """``paper``: every retry is drawn with the memory (the default draws it first without,
    and the memory speaks only when that repeats a rejected answer), and no extra turn asks
    for another answer when the redraws still repeat a rejected one."""

    max_trials: Trials = redefault("max_trials", 2)  # the HotPotQA figures' two trials

    correct_rejected: bool = field(
        default=True,
        metadata={
            "description": "Chain-of-thought question answering: when a retry's answer is "
            "still one already judged incorrect after the redraws, one more turn tells the "
            "model so and asks for a different answer (under every strategy that keeps "
            "memory). Off: the repeat stands (the paper).",
            "role": AFTER_FIRST_TRIAL,
            "acts": "memory",
        },
    )
    answer_retry: AnswerRetry = field(
        default="fresh_first",
        metadata={
            "description": "Chain-of-thought retries: fresh_first draws a retry from trial 1's "
            "prompt and adds the memory only when that draw repeats a rejected answer; memory "
            "draws every retry with the memory (the paper); resample never shows the memory (the "
            "equal-budget baseline). Each is detailed on the question-answering page.",
            "role": AFTER_FIRST_TRIAL,
            "acts": "memory_or_resample",
        },
    )
    qa_seeds: RetrySeeds = field(
        default="retry",
        metadata={
            "description": "Chain-of-thought actor, on models that take a seed: retry seeds each "
            "retry's draw by the question, the trial and the draw, so a rerun draws the same; "
            "process uses one counter per process.",
            "role": AFTER_FIRST_TRIAL,
        },
    )


@settings_class
class ReActContext(AnswerMemory):
    """Settings of a ReAct question-answering run (Wikipedia search and lookup)."""

    PRESETS: ClassVar[Presets] = {"paper": {"redraw_steps": 0}}
    """``paper``: no redraw of a step that repeats an earlier search."""

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
    redraw_steps: Annotated[int, Field(ge=0, le=10)] = field(
        default=2,
        metadata={
            "description": "ReAct: when a step repeats a search this trial already made (a "
            "page already read, or a title already not found), sample the step again at "
            "temperature 0.8 up to this many times (under every strategy); 0 = keep the "
            "repeat (the paper).",
        },
    )
