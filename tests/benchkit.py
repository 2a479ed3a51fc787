"""What the benchmark-runner tests share: numbered questions, an actor rule that learns from
reflections, their tasks, a run of them into a results file and that file's lines (the SQLite
checkpointer fixture is in tests/unit/conftest.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from reflexion.harness.bench.driver import run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink, finished_tasks
from reflexion.qa.context import QAContext

QUESTIONS = {f"q{i}": (f"What is item {i}?", f"answer {i}") for i in range(6)}


def question_of(messages: list[BaseMessage]) -> str:
    match = re.search(r"Question: (What is item \d+\?)", messages[-1].text)
    assert match, messages[-1].text
    return match.group(1)


def gold_on_trial(trial: int) -> Callable[[list[BaseMessage]], str]:
    """Actor rule: wrong until the prompt carries ``trial - 1`` reflections, then right (and
    wrong again when told its answer was already judged incorrect)."""

    def rule(messages: list[BaseMessage]) -> str:
        text = messages[-1].text
        if "already judged incorrect" in text:  # the turn after a repeated wrong answer
            return "Action: Finish[still wrong]"
        number = question_of(messages).split()[-1].rstrip("?")
        if text.count("- lesson") + 1 >= trial:
            return f"Thought: ok.\nAction: Finish[answer {number}]"
        return "Thought: guess.\nAction: Finish[wrong]"

    return rule


def tasks(ids: list[str]) -> list[BenchTask]:
    return [
        BenchTask(
            thread_id=f"t-{i}",
            input={"task": QUESTIONS[i][0], "passages": "", "reference": QUESTIONS[i][1]},
            label=i,
            meta={"task_id": i},
        )
        for i in ids
    ]


def bench(
    graph: Any, ids: list[str], out: Path, settings: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the questions ``ids`` (three trials each) into the results file ``out``, skipping
    those it finished; ``kwargs`` go to :func:`run_benchmark`."""
    with out.open("a", encoding="utf-8") as handle:
        return run_benchmark(
            graph,
            tasks(ids),
            QAContext(max_trials=3, retry="informed"),  # the rules read the memory
            Sink(handle),
            settings=settings or {},
            done=finished_tasks(out),
            **kwargs,
        )


def rows(out: Path) -> list[dict[str, Any]]:
    """Every line of a results file."""
    return [json.loads(line) for line in out.read_text().splitlines()]
