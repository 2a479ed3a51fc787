"""Your own tasks, for ``reflexion bench tasks`` and :func:`measure_loop`: a task file and a
graph with our state contract, and what a paired comparison of ``none`` (one attempt),
``resample`` (as many attempts, blind, chosen by the same evaluator) and ``reflexion`` found.

A task file is JSONL, one task per line: ``task`` (required), ``passages``, ``reference`` and
``task_id`` (optional; the line number names a task without one). The graph is
``reflexion`` (the generic graph), another graph id of ``langgraph.json``, or
``path/to/file.py:name`` / ``package.module:name`` naming a graph made by
``create_reflexion_graph``, a ``StateGraph`` builder, or a function returning either: any graph
whose input takes ``task`` and whose state keeps ``evaluations``, one record per trial.

``none`` is no run of its own: it is the first attempt the other two share (each forks every
task's first trial), so the three differ only in what happens after it.

A task with a ``reference`` is solved when its answer matches the reference (HotPotQA's exact
match), whatever the graph's evaluator is: the evaluator decides when a thread stops and which
answer it returns, and its own verdict is kept beside (``solved`` in a results file,
:attr:`Row.accepted`). A task without one is solved when the evaluator says so.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.ledger import read_results
from reflexion.harness.bench.stats import Paired, paired
from reflexion.harness.bench.usage import merge, totals

KEYS = ("task", "passages", "reference", "task_id")
"""What a task line may hold."""

SERVED = {
    "reflexion": "reflexion.graphs.generic:graph",
    "reflexion_qa": "reflexion.graphs.qa:graph",
    "reflexion_qa_cot": "reflexion.graphs.qa:cot_graph",
    "reflexion_react": "reflexion.graphs.qa:react_graph",
}
"""The graphs of ``langgraph.json`` that take a task as text, by id."""


def load_tasks(path: Path) -> list[dict[str, Any]]:
    """The tasks of a JSONL file, each checked: a one-line error names the line and the fix."""
    if not path.is_file():
        raise ReflexionError(f"task file {path} does not exist: give a JSONL file of tasks")
    tasks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            row = json.loads(line)
        except ValueError:
            raise ReflexionError(f"{where} is not JSON: write one JSON object per line") from None
        if not isinstance(row, dict):
            raise ReflexionError(f'{where} is not a JSON object: write {{"task": "..."}}')
        unknown = sorted(set(row) - set(KEYS))
        if unknown:
            raise ReflexionError(
                f"{where} has key(s) {', '.join(unknown)}: a task holds {', '.join(KEYS)}"
            )
        if not isinstance(row.get("task"), str) or not row["task"].strip():
            raise ReflexionError(f'{where} has no "task" text: give the task as a string')
        for key in ("passages", "reference", "task_id"):
            if row.get(key) is not None and not isinstance(row[key], str):
                raise ReflexionError(f'{where}: "{key}" is not a string: write it as one')
        task_id = row.get("task_id") or f"task-{number}"
        if task_id in seen:
            raise ReflexionError(f"{where} repeats task_id {task_id!r}: give each task its own")
        seen.add(task_id)
        tasks.append({"passages": "", **row, "task_id": task_id})
    if not tasks:
        raise ReflexionError(f"task file {path} holds no task: one JSON object per line")
    return tasks


def _attribute(spec: str) -> Any:
    """``file.py:name`` or ``package.module:name`` imported."""
    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        file = Path(where)
        if not file.is_file():
            raise ReflexionError(f"graph file {file} does not exist: give path/to/file.py:name")
        module_spec = importlib.util.spec_from_file_location(f"own_graph_{file.stem}", file)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ReflexionError(f"cannot import {where} for --graph: {exc}") from None
    if not hasattr(module, name):
        raise ReflexionError(f"{where} has no {name!r}: name the graph as {where}:<name>")
    return getattr(module, name)


@functools.cache
def load_graph(spec: str) -> Callable[[], StateGraph[Any, Any, Any, Any]]:
    """A builder of the graph ``spec`` names (a ``langgraph.json`` id, or ``where:name``),
    its state contract checked; once per spec (a graph file is executed once, however many
    callers ask for it)."""
    if ":" not in spec:
        if spec not in SERVED:
            raise ReflexionError(
                f"graph {spec!r} is not one of {', '.join(SERVED)}: or give file.py:name"
            )
        spec = SERVED[spec]
    found = _attribute(spec)
    if callable(found) and not isinstance(found, StateGraph) and not hasattr(found, "builder"):
        found = found()
    builder = getattr(found, "builder", found)
    if not isinstance(builder, StateGraph):
        raise ReflexionError(
            f"{spec} is a {type(found).__name__}, not a graph: give a compiled graph, a "
            "StateGraph or a function returning one"
        )
    compiled = builder.compile()
    inputs = compiled.get_input_jsonschema().get("properties", {})
    keeps = compiled.get_output_jsonschema().get("properties", {})
    if "task" not in inputs or "evaluations" not in keeps:
        raise ReflexionError(
            f"{spec} does not keep our state contract (input task, output evaluations): build "
            "it with create_reflexion_graph"
        )
    return lambda: builder


def solved(final: dict[str, Any]) -> bool:
    """A finished task's outcome: its final answer matched to the task's reference where it
    has one (``gold_final``), whatever the evaluator said; else the evaluator's verdict."""
    if "gold_final" in final:
        return bool(final["gold_final"])
    return bool(final.get("solved"))


def first_solved(final: dict[str, Any]) -> bool:
    """What ``none`` (the shared first attempt) solved, judged as :func:`solved` judges."""
    if "gold" in final:
        return bool((final["gold"] or [False])[0])
    return first_accepted(final)


def accepted(final: dict[str, Any]) -> bool:
    """What the graph's evaluator said of a finished task: its verdict on the final answer."""
    return bool(final.get("solved"))


def first_accepted(final: dict[str, Any]) -> bool:
    """What the graph's evaluator said of the shared first attempt."""
    evaluations = final.get("evaluations") or [{}]
    return bool(evaluations[0].get("success"))


@dataclass(frozen=True)
class Row:
    """One strategy of the comparison."""

    strategy: str
    tasks: int
    solved: int
    against_none: Paired | None
    against_resample: Paired | None
    tokens: int | None
    """Model tokens over all tasks (``None`` where not recorded)."""
    seconds: float | None
    """Wall seconds over the tasks run whole."""
    accepted: int = 0
    """Tasks whose answer the graph's evaluator accepted. ``solved`` counts the reference
    where a task has one, so the two differ where the evaluator was wrong."""

    def per_solved(self, total: float | None) -> float | None:
        return None if total is None or not self.solved else total / self.solved


def _first_trial_usage(path: Path) -> tuple[int | None, float | None]:
    """The shared first trials' tokens and seconds, from a results file's trial lines."""
    tokens, seconds, found = 0, 0.0, False
    for row in read_results(path):
        if row.get("type") == "trial" and int(row.get("trial") or 0) == 1 and row.get("usage"):
            used = totals(merge(row["usage"]))
            tokens += used["prompt_tokens"] + used["completion_tokens"]
            seconds += float(sum(u.get("wall_s", 0.0) for u in row["usage"].values()))
            found = True
    return (tokens, seconds) if found else (None, None)


def comparison(results: dict[str, list[dict[str, Any]]], files: dict[str, Path]) -> list[Row]:
    """``none``, ``resample`` and ``reflexion`` on the tasks every run finished, paired task
    by task (``none`` read from the runs' shared first attempts)."""
    common = set.intersection(*({str(f["task_id"]) for f in fs} for fs in results.values()))
    by_task = {
        label: {str(f["task_id"]): f for f in finals if str(f["task_id"]) in common}
        for label, finals in results.items()
    }
    any_run = next(iter(by_task.values()))
    order = sorted(common)
    none = [first_solved(any_run[t]) for t in order]
    tokens, seconds = _first_trial_usage(files[next(iter(files))])
    said = sum(first_accepted(any_run[t]) for t in order)
    rows = [Row("none", len(order), sum(none), None, None, tokens, seconds, said)]
    outcome = {label: [solved(runs[t]) for t in order] for label, runs in by_task.items()}
    for label, runs in by_task.items():
        used = totals(merge(*(runs[t].get("usage") for t in order)))
        whole = [runs[t]["wall_s"] for t in order if not runs[t].get("resumed")]
        rows.append(
            Row(
                label,
                len(order),
                sum(outcome[label]),
                paired(zip(none, outcome[label], strict=True)),
                paired(zip(outcome["resample"], outcome[label], strict=True))
                if label != "resample" and "resample" in outcome
                else None,
                used["prompt_tokens"] + used["completion_tokens"] if used["calls"] else None,
                sum(whole) if len(whole) == len(order) else None,
                sum(accepted(runs[t]) for t in order),
            )
        )
    return rows
