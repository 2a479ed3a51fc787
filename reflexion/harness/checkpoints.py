"""A thread's checkpoints read and written as trials: its finished trials
(:func:`thread_history`), whether its last step was cut short or left unfinished and where a
resume must start (:func:`cut_short`, :func:`unfinished`, :func:`replay_from`), a fork to a new
thread (:func:`fork_thread`) and notes added to its latest checkpoint (:func:`annotate_head`).
Works on any checkpointer (:mod:`reflexion.harness.persistence` opens them) and for every agent:
the loop's node names and the ``evaluations``/``reflections`` fields are shared."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from reflexion.core.errors import ReflexionError


@dataclass(frozen=True)
class TrialEntry:
    """One finished trial of a thread, as its checkpoints recorded it."""

    trial: int
    """1-based trial number."""
    answer: str | None
    """The answer (or implementation) the trial gave."""
    success: bool
    """The evaluator's verdict."""
    score: float
    """The evaluator's score in [0, 1]."""
    feedback: str
    """The evaluator's feedback."""
    reflection: str | None
    """The reflection written after this trial (``None``: none was written, e.g. it solved
    the task, it was the last trial, the strategy keeps no reflections, or the thread was
    interrupted before the reflector finished)."""
    checkpoint_id: str
    """The first checkpoint holding the trial's evaluation."""
    created_at: str | None
    """When that checkpoint was written (ISO 8601, UTC)."""


def cut_short(snap: Any) -> list[str]:
    """The nodes of a thread's latest step (a ``StateSnapshot``, or a server thread's) that
    stopped with an error after saving part of their writes: a server run cancelled (a client
    gone with ``on_disconnect="cancel"``, a cancel from Studio) or a Ctrl-C between a node's
    state update and the edge after it. LangGraph saves such a task's partial writes with its
    error and, on a plain resume, reads the task as finished: the loop would go on from half a
    step, e.g. an evaluation without the edge to the reflector, and end early. Such a step is
    replayed from its checkpoint instead (:func:`replay_from`), and its partial writes are
    not part of the thread's saved state."""
    return [str(t.name) for t in snap.tasks or () if t.error is not None and t.result is not None]


def replay_from(snap: Any) -> str | None:
    """The checkpoint id a resume of this thread must address (a step cut short is replayed
    from its checkpoint, see :func:`cut_short`), or ``None`` for a plain resume."""
    if not cut_short(snap):
        return None
    return str(snap.config["configurable"]["checkpoint_id"])


def unfinished(snap: Any) -> str | None:
    """Why a thread's latest state (a ``StateSnapshot``, or a server thread's) is not the end
    of its run, or ``None`` when it is: ``"during X"`` (node X was cut short, see
    :func:`cut_short`), ``"before X"`` (node X is next, e.g. an interrupt or a run stopped
    between steps) or ``"after X"``. The last is a process killed (or a server run
    cancelled) after node X's writes were saved but before its step's checkpoint was:
    ``get_state`` applies those writes and lists no ``next`` node, yet the loop has not
    ended; resuming with input ``None`` finishes the step without running X again."""
    if stopped := cut_short(snap):
        return "during " + ", ".join(stopped)
    if snap.next:
        return "before " + ", ".join(snap.next)
    done = [str(task.name) for task in snap.tasks or ()]
    return "after " + ", ".join(done) if done else None


def _lineage(snapshots: list[Any]) -> list[Any]:
    """The checkpoints leading to the latest one, oldest first (a thread forked with
    ``update_state`` lists abandoned branches too; they are left out)."""
    if not snapshots:
        return []
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snapshots}
    chain = []
    current: Any | None = snapshots[0]  # get_state_history lists the newest first
    while current is not None:
        chain.append(current)
        parent = current.parent_config
        parent_id = parent["configurable"].get("checkpoint_id") if parent else None
        current = by_id.get(parent_id) if parent_id else None
    return chain[::-1]


def thread_history(graph: Any, thread_id: str) -> list[TrialEntry]:
    """Every finished trial of a thread, from ``graph.get_state_history``: a trial appears at
    the first checkpoint whose ``evaluations`` include it; its reflection is the newest entry
    of the window the ``reflector`` step after it wrote (the step's saved writes, so a
    reflection repeated word for word is still seen). Works for every agent: the loop's node
    names and the ``evaluations``/``reflections`` fields are shared."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    chain = _lineage(list(graph.get_state_history(config)))
    entries: list[TrialEntry] = []
    seen = 0
    for index, snap in enumerate(chain):
        values = snap.values if isinstance(snap.values, dict) else {}
        evaluations = values.get("evaluations") or []
        for record in evaluations[seen:]:
            entries.append(
                TrialEntry(
                    trial=int(record.get("trial", len(entries) + 1)),
                    answer=record.get("answer"),
                    success=bool(record.get("success")),
                    score=float(record.get("score", 0.0)),
                    feedback=str(record.get("feedback", "")),
                    reflection=None,
                    checkpoint_id=str(snap.config["configurable"]["checkpoint_id"]),
                    created_at=snap.created_at,
                )
            )
        seen = max(seen, len(evaluations))
        if "reflector" not in snap.next or not entries or index + 1 == len(chain):
            continue
        child = chain[index + 1]
        window = child.values.get("reflections") if isinstance(child.values, dict) else None
        if window == values.get("reflections") and (child.metadata or {}).get("source") == "loop":
            # An unchanged window (Ω reached and the same lesson again): the reflector's own
            # saved writes tell whether it wrote one.
            written = next(
                (t.result for t in snap.tasks if t.name == "reflector" and t.result), None
            )
            window = written.get("reflections") if isinstance(written, dict) else None
        elif window == values.get("reflections"):
            window = None
        if window:
            entries[-1] = replace(entries[-1], reflection=str(window[-1]))
    return entries


def fork_thread(saver: BaseCheckpointSaver[Any], source: str, target: str) -> None:
    """Start thread ``target`` at thread ``source``'s latest checkpoint (its values, its next
    nodes and its pending writes), so that running ``target`` with input ``None`` goes on from
    there while ``source`` stays as it is: a LangGraph fork across threads, on any checkpointer
    (paired comparisons branch every strategy from one shared first trial). The fork's
    metadata names its source."""
    head = saver.get_tuple({"configurable": {"thread_id": source, "checkpoint_ns": ""}})
    if head is None:
        raise ReflexionError(f"cannot fork thread '{source}': it has no checkpoint")
    config: RunnableConfig = {"configurable": {"thread_id": target, "checkpoint_ns": ""}}
    metadata = {**head.metadata, "forked_from": source}
    versions = dict(head.checkpoint["channel_versions"])
    saved = saver.put(config, head.checkpoint, metadata, versions)  # type: ignore[arg-type]
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in head.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        saver.put_writes(saved, writes, task_id)


def annotate_head(saver: BaseCheckpointSaver[Any], thread_id: str, notes: dict[str, Any]) -> None:
    """Add ``notes`` to the metadata of thread ``thread_id``'s latest checkpoint, in place: the
    same checkpoint, parent and pending writes, no new step (a paired run records what its
    shared first trial cost, so a later fork of it can count that too). Channel values are
    not written again: their stored versions stay."""
    head = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if head is None:
        raise ReflexionError(f"cannot annotate thread '{thread_id}': it has no checkpoint")
    parent = (head.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if parent:
        config["configurable"]["checkpoint_id"] = parent
    saver.put(config, head.checkpoint, {**head.metadata, **notes}, {})  # type: ignore[typeddict-item]


__all__ = [
    "TrialEntry",
    "annotate_head",
    "cut_short",
    "fork_thread",
    "replay_from",
    "thread_history",
    "unfinished",
]
