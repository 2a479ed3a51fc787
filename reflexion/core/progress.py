"""Live progress through LangGraph's custom stream: what a loop's nodes report as they run.

Stream a run with ``stream_mode=["updates", "custom"]`` (or ``"custom"`` alone) and each
``custom`` chunk is a dict whose ``"reflexion"`` key names the event:

- ``trial_started``: ``trial`` (1-based), when an attempt begins (``source`` says who makes
  it where it is not the actor's model: ``"compiler"`` for rustc's fixes);
- ``attempt_scored``: ``trial`` and ``record``, the evaluator's verdict with its evidence (the
  trial record: answer, score, success, feedback, and a family's own keys such as each test's
  outcome). ``record["success"]`` is False for an attempt the loop will not return as such;
- ``reflection_written``: ``trial`` and ``text``, the lesson the next trial reads;
- ``answer_chosen``: ``answer``, ``trial`` (the attempt it came from), ``solved``,
  ``why`` (``"last"``: the last attempt, the paper's policy; ``"best"``: the best by the
  evidence, an earlier one when it was better) and ``stopped`` (why the thread ended: a
  :data:`~reflexion.core.budget.StopReason` such as ``"solved"``, ``"max_trials"`` or
  ``"token_budget"``), once the thread ends.

So a client can show a progress view, and tell an answer that was rejected from the one the
thread returns. (The command line's results files keep being written from the nodes' updates:
a resume after a kill streams a finished node's update again from its saved writes, not its
custom events.)
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.config import get_stream_writer

Event = Literal["trial_started", "attempt_scored", "reflection_written", "answer_chosen"]

KEY = "reflexion"
"""The key of a custom chunk that names its event."""


def emit(event: Event, **payload: Any) -> None:
    """Write one progress event to the run's custom stream (nothing outside a run, or when
    no client streams ``custom``)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer({KEY: event, **payload})


def event_of(chunk: Any) -> tuple[str, dict[str, Any]] | None:
    """A custom chunk as ``(event, payload)``, or ``None`` for one that is not ours."""
    if isinstance(chunk, dict) and isinstance(chunk.get(KEY), str):
        return chunk[KEY], {k: v for k, v in chunk.items() if k != KEY}
    return None
