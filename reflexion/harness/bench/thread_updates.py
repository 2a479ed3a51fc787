"""What a benchmark thread is, whichever runner runs it: in this process
(:mod:`reflexion.harness.bench.driver`) or on a LangGraph server
(:mod:`reflexion.harness.bench.remote`).

Both runners give a thread the same recursion limit (:func:`recursion_limit`), turn the graph's
updates into the same ``trial`` and ``reflection`` lines (:func:`update_events`), write them only
once the checkpoint holding them is saved (:func:`release_held`), recover the lines a killed run
saved but never wrote (:func:`unrecorded`), and let a benchmark add fields to a task's ``final``
line (:data:`Finalize`). :class:`ServerGraph` names a graph on a server, the other runner's
target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig

from reflexion.core.context import Context
from reflexion.harness.bench.ledger import BenchTask
from reflexion.harness.checkpoints import cut_short, thread_history

Finalize = Callable[[BenchTask, dict[str, Any]], dict[str, Any]]
"""``finalize(task, final_state)``: fields to add to a task's ``final`` line (e.g. the
programming benchmark's hidden-test scores); it runs on this machine, whichever runner ran the
thread."""


@dataclass(frozen=True)
class ServerGraph:
    """A graph on a LangGraph server: the server's URL and the graph's id there. Given to
    :func:`reflexion.harness.bench.driver.run_benchmark` in place of a compiled graph, every task
    runs
    on that server (:mod:`reflexion.harness.bench.remote`)."""

    url: str
    graph_id: str


def recursion_limit(ctx: Context) -> int:
    """A recursion limit that lets ``max_trials`` trials (and ``max_steps`` ReAct steps, or
    ``alfworld_steps`` ALFWorld turns) run: up to five supersteps per trial in the loop (the
    actor or a repair, the evaluator, a verdict's second node, the retry step, the reflector;
    six with human review), two per step in the ReAct subgraph, one per turn in the ALFWorld
    subgraph."""
    per_trial = 6 if ctx.review_reflections else 5
    steps = int(getattr(ctx, "max_steps", 0))  # the family's inner loop, where it has one
    turns = int(getattr(ctx, "alfworld_steps", 0))
    return max(25, per_trial * ctx.max_trials + 5, 2 * steps + 5, turns + 5)


def update_events(update: Any) -> list[tuple[str, dict[str, Any]]]:
    """The results-file events of one ``updates`` chunk (node → its update): the newest
    evaluation a node writes (the evaluator, or the node that finishes its verdict, such as
    the programming graph's cross-check) is a ``trial``, the reflector's newest reflection a
    ``reflection``."""
    events: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(update, dict):
        return events
    for node, values in update.items():
        if not isinstance(values, dict):
            continue
        if values.get("evaluations"):
            events.append(("trial", dict(values["evaluations"][-1])))
        elif node == "reflector" and values.get("reflections"):
            events.append(("reflection", {"text": values["reflections"][-1]}))
    return events


def release_held(
    held: list[tuple[str, dict[str, Any]]],
    saved: Any,
    report: Callable[[str, dict[str, Any]], None],
) -> None:
    """Report the held events once the checkpoint holding them is saved (``saved``: its
    values); a reflection gets the trial it follows from them. Empties ``held``."""
    for event, payload in held:
        if event == "reflection" and isinstance(saved, dict):
            payload["trial"] = saved.get("trial")
        report(event, payload)
    held.clear()


class SavedStates(Protocol):
    """What :func:`unrecorded` reads of a thread: a compiled graph with its checkpointer, or a
    LangGraph server thread's saved states
    (:class:`reflexion.harness.bench.remote.ServerThread`)."""

    def get_state(self, config: RunnableConfig) -> Any: ...

    def get_state_history(self, config: RunnableConfig) -> Iterator[Any]: ...


def unrecorded(
    graph: SavedStates, thread_id: str, recorded: tuple[set[int], set[int]] | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Trials and reflections a thread's checkpoints hold but its results lines lack (a
    process killed between saving a step and writing its line), in order, marked
    ``recovered``; their usage went with the killed process."""
    trials, reflections = recorded or (set(), set())
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    latest = graph.get_state(config)
    if cut_short(latest):
        # The partial writes of a step cut short are not saved state: the newest checkpoint is.
        latest = next(iter(graph.get_state_history(config)))
    values = latest.values
    evaluations = values.get("evaluations") or [] if isinstance(values, dict) else []
    numbers = [r.get("trial") for r in evaluations]
    if all(n in trials for n in numbers) and not any(n not in reflections for n in numbers[:-1]):
        return  # nothing can be missing (the last trial's reflection may not exist yet)
    written = {e.trial: e.reflection for e in thread_history(graph, thread_id)}
    for record in evaluations:
        number = record.get("trial")
        if number not in trials:
            yield "trial", {**record, "usage": {}, "recovered": True}
        text = written.get(number)
        if text is not None and number not in reflections:
            yield "reflection", {"text": text, "trial": number, "usage": {}, "recovered": True}
