"""A benchmark run's bookkeeping, whichever runner runs its tasks (in this process, or on a
LangGraph server): the results file (one JSON line per trial, reflection, final and error),
the tasks it finished before, the lines it already holds, and this run's finals and errors.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.usage import Usage, merge, recorded_usage

Emit = Callable[[str, "BenchTask", dict[str, Any]], None]
"""Called with (event, task, payload) for ``trial``, ``reflection``, ``final``, ``error`` and
``skipped``."""


@dataclass(frozen=True)
class BenchTask:
    """One task of a benchmark: its thread, its graph input and what the results file keeps."""

    thread_id: str
    input: dict[str, Any]
    label: str
    meta: dict[str, Any]
    """Copied into the ``final`` line (task id, question, reference…)."""
    fork_from: str | None = None
    """A paired comparison's shared first-trial thread: the task's thread is a fork of it
    (see :func:`run_benchmark`); None runs the task from its input."""


def read_results(path: Path, malformed: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """Every well-formed line of a results file; the numbers of the others (a line a crash cut
    short, or damage) are added to ``malformed`` when it is given."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            if isinstance(row, dict):
                yield row
            elif malformed is not None and line.strip():
                malformed.append(number)


def finished_tasks(path: Path, malformed: list[int] | None = None) -> dict[str, dict[str, Any]]:
    """The ``final`` lines of a results file, by thread id (a line cut by a crash is skipped:
    its thread resumes from the checkpointer; see :func:`read_results` for ``malformed``)."""
    done: dict[str, dict[str, Any]] = {}
    for row in read_results(path, malformed):
        if row.get("type") == "final":
            done[str(row.get("thread_id"))] = row
    return done


def load_finals(path: Path, malformed: list[int] | None = None) -> list[dict[str, Any]]:
    """The finished tasks of a results file that a command reads (``compare``, ``plot``,
    ``perf``): a missing file, or one that holds no finished task, is a one-line error."""
    if not path.is_file():
        raise ReflexionError(f"results file {path} does not exist: check the path")
    finals = list(finished_tasks(path, malformed).values())
    if not finals:
        raise ReflexionError(f"{path} holds no finished tasks: run the benchmark first")
    return finals


class Sink:
    """Appends JSON lines to the results file from any thread, flushed line by line."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle
        self._lock = threading.Lock()
        self._torn = self._ends_mid_line()

    def _ends_mid_line(self) -> bool:
        """Whether the file ends in a line a killed process left unfinished; the next line
        then starts on a new line instead of joining it (and being lost with it)."""
        path = self.path
        if path is None or path.stat().st_size == 0:
            return False
        with path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"

    @property
    def path(self) -> Path | None:
        """The results file, when the handle is an open file (not e.g. a ``StringIO``)."""
        name = getattr(self._handle, "name", None)
        if isinstance(name, str) and Path(name).is_file():
            return Path(name)
        return None

    def write(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            if self._torn:
                line, self._torn = "\n" + line, False
            self._handle.write(line)
            self._handle.flush()


def recorded_lines(rows: Iterable[dict[str, Any]]) -> dict[str, tuple[set[int], set[int]]]:
    """By thread id: the trial numbers that have a ``trial`` line and those that have a
    ``reflection`` line (a reflection line without ``trial``, from an older version, follows
    the thread's trial line before it)."""
    found: dict[str, tuple[set[int], set[int]]] = {}
    last: dict[str, int] = {}
    for row in rows:
        thread = str(row.get("thread_id"))
        trials, reflections = found.setdefault(thread, (set(), set()))
        number = row.get("trial")
        if row.get("type") == "trial" and isinstance(number, int):
            trials.add(number)
            last[thread] = number
        elif row.get("type") == "reflection":
            number = number if isinstance(number, int) else last.get(thread)
            if number is not None:
                reflections.add(number)
    return found


def note_line(
    recorded: dict[str, tuple[set[int], set[int]]],
    thread_id: str,
    event: str,
    payload: dict[str, Any],
) -> bool:
    """Note a trial or reflection line about to be written in ``recorded`` (see
    :func:`recorded_lines`); ``False`` when the file has it already. A resume re-emits the
    update of a node whose writes were saved before its step's checkpoint; its line was
    recovered from the checkpoints just before (:func:`unrecorded`), so it is not written
    twice."""
    trials, reflections = recorded.setdefault(thread_id, (set(), set()))
    number = payload.get("trial")
    if not isinstance(number, int):
        return True
    seen = trials if event == "trial" else reflections
    if number in seen:
        return False
    seen.add(number)
    return True


def final_row(
    task: BenchTask,
    values: Mapping[str, Any],
    *,
    wall_s: float,
    usage: Usage,
    resumed: bool,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """A task's ``final`` line from its thread's final state (local or on a server)."""
    return {
        "type": "final",
        "thread_id": task.thread_id,
        **task.meta,
        "answer": values.get("answer"),
        "solved": bool(values.get("solved")),
        "trials": values.get("trial", 0),
        "evaluations": values.get("evaluations", []),
        "reflections": values.get("reflections", []),
        "wall_s": wall_s,
        "usage": usage,
        "resumed": resumed,
        "settings": settings,
    }


def error_row(task: BenchTask, reason: str) -> dict[str, Any]:
    """A failed task's ``error`` line; ``reason`` is cut to its first line, 500 characters."""
    return {
        "type": "error",
        "thread_id": task.thread_id,
        **task.meta,
        "error": (reason.splitlines() or [""])[0][:500],
    }


class Ledger:
    """What one run of a benchmark keeps: the tasks finished before (skipped), the lines the
    results file already holds (not written twice on a resume), the usage of interrupted
    runs, and this run's finals and errors. Both runners report through it."""

    def __init__(
        self,
        tasks: list[BenchTask],
        sink: Sink,
        settings: dict[str, Any],
        done: dict[str, dict[str, Any]] | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.tasks = tasks
        self.sink = sink
        self.settings = settings
        self.done = dict(done or {})
        self.emit = emit
        # What interrupted runs already recorded (read before this run writes anything).
        rows = list(read_results(sink.path)) if sink.path is not None else []
        self.earlier = recorded_usage(rows)
        self.recorded = recorded_lines(rows)
        self.results: dict[str, dict[str, Any]] = {}
        self.errors: list[dict[str, Any]] = []

    def pending(self) -> list[BenchTask]:
        """The tasks to run; each finished one is reported as ``skipped``."""
        for task in self.tasks:
            if task.thread_id in self.done:
                self.report("skipped", task, self.done[task.thread_id])
        return [t for t in self.tasks if t.thread_id not in self.done]

    def report(self, event: str, task: BenchTask, payload: dict[str, Any]) -> None:
        if self.emit is not None:
            self.emit(event, task, payload)

    def line(self, task: BenchTask, event: str, payload: dict[str, Any]) -> None:
        """A trial or reflection line, once (its trial number noted as recorded)."""
        if note_line(self.recorded, task.thread_id, event, payload):
            self.sink.write({"type": event, "thread_id": task.thread_id, **payload})
            self.report(event, task, payload)

    def final(
        self,
        task: BenchTask,
        values: Mapping[str, Any],
        *,
        wall_s: float,
        usage: Usage,
        resumed: bool,
        counted: bool,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write a finished task's ``final`` line; ``counted``: the usage of interrupted
        runs of its thread (from the results file) is added to ``usage``."""
        row = final_row(
            task,
            values,
            wall_s=wall_s,
            usage=merge(self.earlier.get(task.thread_id) if counted else None, usage),
            resumed=resumed,
            settings=self.settings,
        )
        row.update(extra or {})
        self.sink.write(row)
        self.report("final", task, row)
        self.results[task.thread_id] = row
        return row

    def failed(self, task: BenchTask, reason: str) -> None:
        """Write a failed task's ``error`` line (a rerun retries it)."""
        row = error_row(task, reason)
        self.sink.write(row)
        self.errors.append(row)
        self.report("error", task, row)

    def finals(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(finals in task order, the finished ones before included; this run's errors)."""
        finals = [self.done.get(t.thread_id) or self.results.get(t.thread_id) for t in self.tasks]
        return [f for f in finals if f is not None], self.errors
