"""Answers scored on a task's reference after the run, beside the evaluator's own verdict:
what ``bench hotpotqa`` does for a run judged by a model, and ``bench tasks`` for every run of
a task that has a reference."""

from __future__ import annotations

from typing import Any

from reflexion.core.answers import exact_match
from reflexion.harness.bench.ledger import BenchTask
from reflexion.harness.bench.thread_updates import Finalize


def gold_scorer() -> Finalize:
    """A ``finalize`` that adds ``gold`` (each trial's answer matched to the task's
    ``reference``, in order) and ``gold_final`` (the thread's final answer matched to it) to a
    finished task's line, where the task has a reference (nothing where it has none). The
    evaluator never sees these; its verdicts stay in ``solved`` and each trial's ``success``."""

    def finalize(task: BenchTask, state: dict[str, Any]) -> dict[str, Any]:
        reference = str(task.meta.get("reference") or "")
        if not reference:
            return {}
        trials = [exact_match(e.get("answer"), reference) for e in state.get("evaluations", [])]
        return {"gold": trials, "gold_final": exact_match(state.get("answer"), reference)}

    return finalize
