"""``reflexion perf overhead``: what the loop itself costs (graph, checkpointer, sandbox) with a
model that answers at once, and the same figures read from a real run's results."""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from rich.markup import escape
from rich.table import Column, Table

from reflexion.core.errors import ReflexionError
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import thread_config
from reflexion.harness.bench.ledger import finished_tasks
from reflexion.harness.bench.usage import UsageRecorder, merge, totals
from reflexion.harness.fakes import InstantChatModel
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.harness.persistence import open_checkpointer, parse_target
from reflexion.qa.context import QAContext

WRONG_ACTOR = "Thought: The first name in the context looks right.\nAction: Finish[not the answer]"
REFLECTION = (
    "Reflection: I answered with the first name I saw instead of reading the whole context. "
    "Next time I will find the sentence that answers the question before I finish."
)
LOOP_TASK = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava, the longest river in the Czech Republic.",
    "reference": "Vltava",
}


@dataclass(frozen=True)
class LoopTiming:
    """One timed pass of the loop under one checkpointer."""

    checkpointer: str
    tasks: int
    trials: int
    supersteps: int
    seconds: float

    @property
    def ms_per_trial(self) -> float:
        return 1000 * self.seconds / self.trials if self.trials else 0.0

    @property
    def ms_per_superstep(self) -> float:
        return 1000 * self.seconds / self.supersteps if self.supersteps else 0.0


def time_loop(
    name: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
    tasks: int,
    trials_per_task: int,
    run_id: str,
) -> tuple[LoopTiming, list[str]]:
    """Run ``tasks`` QA threads of ``trials_per_task`` failing trials each (actor, evaluator
    and reflector every trial but the last) and time them, after one untimed warm-up thread.
    Each thread runs as the benchmark runs it: ``stream_mode="updates"`` with the usage
    recorder as callback. Returns the timing and the thread ids it created."""
    actor = InstantChatModel(text=WRONG_ACTOR)
    reflector = InstantChatModel(text=REFLECTION)
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=checkpointer
    )
    # memory retries: the same calls a trial as when these figures were first measured
    ctx = QAContext(
        max_trials=trials_per_task, memory_size=3, strategy="reflexion", retry="informed"
    )
    threads: list[str] = []

    def one(thread_id: str) -> tuple[int, int]:
        threads.append(thread_id)
        config = thread_config(thread_id, ctx)
        config["callbacks"] = [UsageRecorder()]
        steps = trials = 0
        # as stream_thread runs it: each step's checkpoint saved before the next step starts
        # (durability only applies with a checkpointer; LangGraph warns otherwise)
        durable: dict[str, Any] = {"durability": "sync"} if checkpointer is not None else {}
        for mode, data in graph.stream(
            {**LOOP_TASK, "task_id": thread_id},
            config,
            context=ctx,
            stream_mode=["updates", "checkpoints"],
            **durable,
        ):
            if mode == "updates":
                steps += len(data)
                trials += "evaluator" in data
        return steps, trials

    one(f"perf-{run_id}-{name}-warm")
    supersteps = trials = 0
    started = time.perf_counter()
    for i in range(tasks):
        s, t = one(f"perf-{run_id}-{name}-{i}")
        supersteps += s
        trials += t
    seconds = time.perf_counter() - started
    return LoopTiming(name, tasks, trials, supersteps, seconds), threads


@contextlib.contextmanager
def sqlite_saver(path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A SQLite checkpointer on a file, opened as the CLI opens its own."""
    with open_checkpointer(path) as saver:
        yield saver


@contextlib.contextmanager
def postgres_saver(dsn: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """A ``PostgresSaver`` on ``dsn`` (tables created if missing), or a one-line error."""
    if parse_target(dsn, option="--postgres").kind != "postgres":
        raise ReflexionError(
            f"--postgres '{dsn}' is not a PostgreSQL connection string: "
            "pass postgresql://user@host:port/dbname"
        )
    with open_checkpointer(dsn, option="--postgres") as saver:
        yield saver


def overhead_figures(
    trials: int,
    trials_per_task: int = 3,
    postgres: str | None = None,
) -> list[LoopTiming]:
    """Time the loop under every checkpointer (Postgres only with a DSN)."""
    tasks = max(1, math.ceil(trials / trials_per_task))
    run_id = uuid.uuid4().hex[:8]
    timings: list[LoopTiming] = []
    with contextlib.ExitStack() as stack:
        # Open every checkpointer first, so a bad DSN fails before anything is timed.
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reflexion-perf-")))
        savers: list[tuple[str, BaseCheckpointSaver[Any] | None]] = [
            ("none", None),
            ("InMemorySaver", InMemorySaver()),
            ("SqliteSaver", stack.enter_context(sqlite_saver(tmp / "perf.sqlite"))),
        ]
        if postgres:
            savers.append(("PostgresSaver", stack.enter_context(postgres_saver(postgres))))
        for name, saver in savers:
            timing, threads = time_loop(name, saver, tasks, trials_per_task, run_id)
            timings.append(timing)
            if name == "PostgresSaver" and saver is not None:
                for thread_id in threads:  # leave the user's database as it was
                    saver.delete_thread(thread_id)
    return timings


def real_run_figures(path: Path) -> dict[str, Any]:
    """From a ``reflexion bench`` results file: wall time of the finished tasks (those not
    resumed, whose ``final`` line covers the whole run), the time inside nodes and inside model
    calls, per node and in all."""
    if not path.is_file():
        raise ReflexionError(f"results file {path} does not exist: check --real-run")
    finals = [
        f
        for f in finished_tasks(path).values()
        if not f.get("resumed") and isinstance(f.get("usage"), dict)
    ]
    if not finals:
        raise ReflexionError(
            f"{path} holds no finished, unresumed task with usage: run `reflexion bench` first"
        )
    timed = all(
        any(isinstance(c, dict) and "model_s" in c for c in f["usage"].values()) for f in finals
    )
    wall = sum(float(f.get("wall_s") or 0.0) for f in finals)
    nodes = merge(*(f["usage"] for f in finals))
    total = totals(nodes)
    per_node = {
        node: {
            "calls": c["calls"],
            "wall_s": round(c["wall_s"], 3),
            "model_s": round(c["model_s"], 3) if timed else None,
        }
        for node, c in sorted(nodes.items())
    }
    out: dict[str, Any] = {
        "file": str(path),
        "tasks": len(finals),
        "wall_s": round(wall, 3),
        "in_nodes_s": round(total["wall_s"], 3),
        "model_s": round(total["model_s"], 3) if timed else None,
        "model_time_recorded": timed,
        "share_outside_nodes": round(1 - total["wall_s"] / wall, 4) if wall else None,
        "share_outside_model_calls": (
            round(1 - total["model_s"] / wall, 4) if wall and timed else None
        ),
        "nodes": per_node,
    }
    return out


def _real_run_table(fig: dict[str, Any]) -> Table:
    table = Table(
        Column("node", no_wrap=True),
        "calls",
        "wall s",
        "in model calls s",
        "outside model calls s",
        title=f"{escape(fig['file'])}: {fig['tasks']} finished task(s)",
    )
    timed = fig["model_time_recorded"]
    for node, c in fig["nodes"].items():
        model = c["model_s"]
        table.add_row(
            node,
            str(c["calls"]),
            f"{c['wall_s']:.2f}",
            f"{model:.2f}" if timed else "-",
            f"{c['wall_s'] - model:.2f}" if timed else "-",
        )
    outside_nodes = fig["wall_s"] - fig["in_nodes_s"]
    table.add_row("(between nodes)", "", f"{outside_nodes:.2f}", "", f"{outside_nodes:.2f}")
    share = fig["share_outside_model_calls"]
    table.add_row(
        "[bold]threads in all[/]",
        "",
        f"{fig['wall_s']:.2f}",
        f"{fig['model_s']:.2f}" if timed else "-",
        f"{fig['wall_s'] - fig['model_s']:.2f} ({share:.1%})" if timed else "-",
    )
    table.caption = (
        "wall = the finished, unresumed tasks' thread wall times; outside model calls: prompt "
        "building, parsing, evaluation, checkpoints, the results file, retry backoff"
        if timed
        else "this file has no model time (written before usage recorded model_s): rerun the "
        "benchmark for the share outside model calls; only the time between nodes is known"
    )
    return table


def overhead(
    trials: Annotated[
        int,
        typer.Option(
            "--trials",
            "-t",
            metavar="N",
            min=0,
            help="Trials timed per checkpointer (0: skip the loop).",
        ),
    ] = 300,
    trials_per_task: Annotated[
        int,
        typer.Option("--trials-per-task", metavar="N", min=1, help="Trials per thread (all fail)."),
    ] = 3,
    postgres: Annotated[
        str | None,
        typer.Option(
            "--postgres",
            help="Also time PostgresSaver on this DSN, e.g. postgresql://user@localhost/db "
            "(needs the postgres extra).",
        ),
    ] = None,
    real_run: Annotated[
        Path | None,
        typer.Option(
            "--real-run",
            help="A results JSONL of `reflexion bench`: report the share of its wall time "
            "spent outside model calls.",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """The Reflexion loop's own cost: mean time per trial and per superstep with an instant
    fake model whose every trial fails (actor, evaluator, reflector), per checkpointer."""
    if trials == 0 and real_run is None:
        raise ReflexionError("nothing to measure: give --trials N or --real-run RESULTS.jsonl")
    tables: list[Table] = []
    figures: dict[str, Any] = {}
    if trials:
        timings = overhead_figures(trials, trials_per_task, postgres)
        base = timings[0].ms_per_trial
        table = Table(
            Column("checkpointer", no_wrap=True),
            "trials",
            "steps",
            "total s",
            "ms/trial",
            "ms/step",
            "ms/trial vs none",
            title="Reflexion loop (QA, CoT actor), instant fake model",
        )
        for t in timings:
            table.add_row(
                t.checkpointer,
                str(t.trials),
                str(t.supersteps),
                f"{t.seconds:.3f}",
                f"{t.ms_per_trial:.2f}",
                f"{t.ms_per_superstep:.2f}",
                "-" if t.checkpointer == "none" else f"{t.ms_per_trial - base:+.2f}",
            )
        table.caption = (
            f"{timings[0].tasks} thread(s) of {trials_per_task} failing trials (actor → "
            "evaluator → reflector; the last trial ends at the evaluator); a step is a "
            "superstep (one node here); one untimed warm-up thread first"
        )
        tables.append(table)
        figures["loop"] = [
            {
                "checkpointer": t.checkpointer,
                "threads": t.tasks,
                "trials": t.trials,
                "supersteps": t.supersteps,
                "seconds": round(t.seconds, 4),
                "ms_per_trial": round(t.ms_per_trial, 3),
                "ms_per_superstep": round(t.ms_per_superstep, 3),
            }
            for t in timings
        ]
    if real_run is not None:
        fig = real_run_figures(real_run)
        tables.append(_real_run_table(fig))
        figures["real_run"] = fig
    settings = {
        "trials": trials,
        "trials_per_task": trials_per_task,
        "postgres": bool(postgres),
        "real_run": str(real_run) if real_run else None,
    }
    report("overhead", tables, figures, settings, json_path)


# ---- concurrency: a fake OpenAI-compatible server --------------------------------------------
