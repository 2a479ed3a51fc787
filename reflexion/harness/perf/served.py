"""``reflexion perf served``: many runs at once of the QA graph on a real ``langgraph dev``
server, through the langgraph SDK, against the fake OpenAI-compatible model server of
:mod:`reflexion.harness.perf.concurrency`: their throughput as a share of the latency-only
ideal, whether any was lost, and whether each result equals the same run made alone.

What it measures is the server's event loop: a node that holds a worker thread for each
model call caps how many calls wait at once, an async node (``graph.ainvoke``'s path,
:mod:`reflexion.core.steps`) does not. ``--server-python`` serves the graph from another
environment (e.g. a checkout from before the nodes had an async path) for comparison.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph_sdk import get_client
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.harness.perf.concurrency import FakeOpenAIServer
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.harness.processes import free_port, serving

GRAPH_ID = "reflexion_qa"
SOLVE_AT = 2
"""The fake model answers right at trial 2: 2 actor calls and 1 reflector call a run."""
CALLS = 2 * SOLVE_AT - 1

CONTEXT: dict[str, Any] = {
    "actor_model": "openai:fake",
    "evaluator_model": "openai:fake",
    "reflector_model": "openai:fake",
    "max_trials": SOLVE_AT,
    "strategy": "reflexion",
    "evaluator": "exact_match",
    "retry": "informed",  # one actor call a trial, as the fake server scripts it
}


LANGGRAPH_CLI = "import sys; from langgraph_cli.cli import cli; sys.argv[0] = 'langgraph'; cli()"
"""The ``langgraph`` command, run by an interpreter (an environment's scripts may be absent)."""


def _graph_file(python: str) -> str:
    """Where ``python``'s installed ``reflexion`` keeps the QA graph's module."""
    code = "import reflexion.graphs.qa as m; print(m.__file__)"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    except OSError:
        out = None
    if out is None or out.returncode != 0:
        raise ReflexionError(
            f"--server-python {python} cannot import reflexion.graphs.qa: give an interpreter "
            "whose environment has reflexion-langgraph and langgraph-cli[inmem] installed"
        )
    return out.stdout.strip()


@contextlib.contextmanager
def served(python: str, graph_file: str, jobs: int, base_url: str, work: Path) -> Iterator[str]:
    """``langgraph dev`` (from ``python``'s environment) serving the QA graph of ``graph_file``
    with ``jobs``
    runs at once, its models reached at ``base_url``; yields its URL."""
    config = work / "langgraph.json"
    graphs = {GRAPH_ID: f"{graph_file}:graph"}
    config.write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
    port = free_port()
    env = {
        **os.environ,
        "REFLEXION_BASE_URL": base_url,
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "not-needed"),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_NO_BROWSER": "1",
    }
    argv = [python, "-c", LANGGRAPH_CLI, "dev", "--no-browser", "--no-reload"]
    argv += ["--host", "127.0.0.1"]
    argv += ["--port", str(port), "--n-jobs-per-worker", str(jobs), "--config", str(config)]
    url = f"http://127.0.0.1:{port}"
    log_path = work / "langgraph-dev.log"
    with serving(argv, f"{url}/ok", log_path, name="langgraph dev", timeout=180, cwd=work, env=env):
        yield url


def _inputs(runs: int) -> list[dict[str, Any]]:
    questions = load_hotpotqa()
    picked = [questions[i % len(questions)] for i in range(runs)]
    return [
        {"task": q.question, "passages": gold_passages(q), "reference": q.answer, "task_id": q.id}
        for q in picked
    ]


def _outcome(values: Any) -> dict[str, Any]:
    """What a run's result is compared by: the answer, whether it was solved, its trials'
    answers and verdicts, and its reflections."""
    values = values if isinstance(values, dict) else {}
    return {
        "answer": values.get("answer"),
        "solved": values.get("solved"),
        "trials": [(e.get("answer"), e.get("success")) for e in values.get("evaluations", [])],
        "reflections": values.get("reflections"),
    }


async def _batch(url: str, inputs: list[dict[str, Any]], at_once: bool) -> tuple[float, list[Any]]:
    """The runs of ``inputs`` (each on a new thread), all at once or one after another: the
    wall time and each run's outcome (or its error, as text)."""
    async with get_client(url=url, api_key=None) as client:

        async def one(task: dict[str, Any]) -> Any:
            try:
                thread = await client.threads.create()
                values = await client.runs.wait(
                    thread["thread_id"], GRAPH_ID, input=task, context=CONTEXT
                )
            except Exception as exc:  # a lost run is reported, not raised
                return f"{type(exc).__name__}: {exc}"
            return _outcome(values)

        started = time.perf_counter()
        if at_once:
            outcomes = list(await asyncio.gather(*(one(t) for t in inputs)))
        else:
            outcomes = [await one(t) for t in inputs]
        return time.perf_counter() - started, outcomes


def served_figures(runs: int, latency: float, python: str) -> dict[str, Any]:
    """Start the fake model server and ``langgraph dev``; one untimed warm-up run, then the
    ``runs`` at once, then the same runs one at a time (with no latency: only their results
    are compared)."""
    graph_file = _graph_file(python)  # a wrong interpreter is a one-line error, first
    inputs = _inputs(runs)
    answers = {t["task"]: t["reference"] for t in inputs}
    with (
        FakeOpenAIServer(latency, answers, SOLVE_AT) as model,
        tempfile.TemporaryDirectory(prefix="reflexion-served-") as tmp,
        served(python, graph_file, runs, model.base_url, Path(tmp)) as url,
    ):
        asyncio.run(_batch(url, inputs[:1], at_once=False))
        before = model.requests
        wall, together = asyncio.run(_batch(url, inputs, at_once=True))
        calls = model.requests - before
        model.latency = 0.0  # a run's result does not depend on it; its wall time would
        alone_wall, alone = asyncio.run(_batch(url, inputs, at_once=False))
    lost = [o for o in together if not isinstance(o, dict)]
    ideal = CALLS * latency  # every run's calls overlap with every other's
    return {
        "runs": runs,
        "latency": latency,
        "wall_s": round(wall, 4),
        "model_calls": calls,
        "ideal_wall_s": round(ideal, 4),
        "share_of_ideal": round(ideal / wall, 4) if wall else 0.0,
        "runs_per_s": round(runs / wall, 4) if wall else 0.0,
        "ideal_runs_per_s": round(runs / ideal, 4) if ideal else 0.0,
        "lost": len(lost),
        "first_error": lost[0] if lost else "",
        "solved": sum(1 for o in together if isinstance(o, dict) and o["solved"]),
        "equal_to_alone": sum(1 for a, b in zip(together, alone, strict=True) if a == b),
        "alone_wall_s": round(alone_wall, 4),
    }


def served_perf(
    runs: Annotated[
        int, typer.Option("--runs", "-k", metavar="N", min=1, help="Runs at once.")
    ] = 64,
    latency: Annotated[
        float,
        typer.Option("--latency", metavar="X", min=0.0, help="Seconds a model call takes."),
    ] = 2.0,
    server_python: Annotated[
        str | None,
        typer.Option(
            "--server-python",
            metavar="PATH",
            help="The interpreter whose environment serves the graph (default: this one).",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """Runs at once of the QA graph on a real `langgraph dev` server (through the langgraph
    SDK) against a fake OpenAI-compatible model with a fixed latency: their throughput as a
    share of the latency-only ideal, runs lost, and results against the same runs alone."""
    python = server_python or sys.executable
    f = served_figures(runs, latency, python)
    table = Table(
        "runs",
        "model calls",
        "time s",
        "runs/s",
        "ideal runs/s",
        "share of ideal",
        "lost",
        "solved",
        "equal to alone",
        title=f"langgraph dev, {runs} runs at once, {latency:g} s per model call",
    )
    table.add_row(
        str(f["runs"]),
        str(f["model_calls"]),
        f"{f['wall_s']:.2f}",
        f"{f['runs_per_s']:.2f}",
        f"{f['ideal_runs_per_s']:.2f}",
        f"{f['share_of_ideal']:.2f}",
        str(f["lost"]) + (f" ({f['first_error'][:80]})" if f["lost"] else ""),
        str(f["solved"]),
        f"{f['equal_to_alone']}/{f['runs']}",
    )
    table.caption = (
        f"HotPotQA CoT (GT) on the server ({GRAPH_ID}), each run {CALLS} model calls (solved "
        f"at trial {SOLVE_AT}); ideal = every run's calls overlapping: runs / ({CALLS} × "
        f"latency); the same runs one at a time, without latency, took {f['alone_wall_s']:.1f} s"
    )
    settings = {"runs": runs, "latency": latency, "server_python": python}
    report("served", [table], f, settings, json_path)
