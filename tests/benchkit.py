"""What the benchmark-runner tests share: numbered questions, an actor rule that learns from
reflections, and their tasks (the SQLite checkpointer fixture is in tests/unit/conftest.py)."""

from __future__ import annotations

import re
from collections.abc import Callable

from langchain_core.messages import BaseMessage

from reflexion.bench.ledger import BenchTask

QUESTIONS = {f"q{i}": (f"What is item {i}?", f"answer {i}") for i in range(6)}


def question_of(messages: list[BaseMessage]) -> str:
    match = re.search(r"Question: (What is item \d+\?)", messages[-1].text)
    assert match, messages[-1].text
    return match.group(1)


def gold_on_trial(trial: int) -> Callable[[list[BaseMessage]], str]:
    """Actor rule: wrong until the prompt carries ``trial - 1`` reflections, then right."""

    def rule(messages: list[BaseMessage]) -> str:
        text = messages[-1].text
        number = question_of(messages).split()[-1].rstrip("?")
        if text.count("- lesson") + 1 >= trial:
            return f"Thought: ok.\nAction: Finish[answer {number}]"
        return "Thought: guess.\nAction: Finish[wrong]"

    return rule


def tasks(ids: list[str]) -> list[BenchTask]:
    return [
        BenchTask(
            thread_id=f"t-{i}",
            input={"task": QUESTIONS[i][0], "context": "", "reference": QUESTIONS[i][1]},
            label=i,
            meta={"task_id": i},
        )
        for i in ids
    ]
