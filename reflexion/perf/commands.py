"""``reflexion perf``: the performance suite. Each command measures one thing and prints its
figures (a Rich table, plus the machine they were taken on); none of them is a pass/fail test.

- ``overhead``: what the Reflexion loop itself costs per trial and per superstep, with an
  instant fake model, under no checkpointer, ``InMemorySaver``, ``SqliteSaver`` and (given a
  DSN) ``PostgresSaver``; with ``--real-run``, the share of a finished benchmark's wall time
  spent outside model calls.
- ``concurrency``: benchmark throughput against a fake OpenAI-compatible server with a fixed
  latency, at several ``--concurrency`` levels, and the speed-up over one task at a time.
- ``inference``: tokens per second of the embedded path (``EmbeddedChatModel``) against
  llama-cpp-python called directly, and how much prompt processing llama.cpp's prefix cache
  saves on a trial-2 actor prompt.
- ``learning-cost``: tokens per solved task, baseline against Reflexion, from results files.

``--json PATH`` saves the figures with the machine and the settings.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any

import typer
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from reflexion.bench.driver import BenchTask, Sink, finished_tasks, run_benchmark, thread_config
from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.models import DEFAULT_MODEL, LOCAL_PREFIX, EmbeddedChatModel, embedded_model
from reflexion.core.persistence import open_checkpointer, parse_target
from reflexion.core.usage import UsageRecorder, merge, totals
from reflexion.graphs.builder import qa_builder
from reflexion.hotpotqa.questions import load_hotpotqa

perf_app = typer.Typer(
    help="Performance figures (printed, optionally saved as JSON); not timed tests.",
    no_args_is_help=True,
)
console = Console(highlight=False)

JsonOpt = Annotated[
    Path | None, typer.Option("--json", help="Also save the figures (and the machine) here.")
]

# ---- the machine and the report -------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "llama_cpp_python": _version("llama-cpp-python"),
        "langgraph": _version("langgraph"),
    }


def _machine_table(info: dict[str, Any]) -> Table:
    table = Table("machine", "", title="machine")
    for key, value in info.items():
        table.add_row(key.replace("_", " "), escape(str(value)))
    return table


def report(
    command: str,
    tables: list[Table],
    figures: dict[str, Any],
    settings: dict[str, Any],
    json_path: Path | None,
) -> dict[str, Any]:
    """Print the figure tables and the machine; save everything as JSON when asked."""
    info = machine()
    for table in tables:
        console.print(table)
    console.print(_machine_table(info))
    doc = {"command": command, "settings": settings, "machine": info, "figures": figures}
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            json_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ReflexionError(f"cannot write {json_path}: {exc.strerror}") from None
        console.print(f"figures saved to {json_path}")
    return doc


# ---- overhead: the loop with an instant model ------------------------------------------------


class InstantChatModel(BaseChatModel):
    """A chat model that answers at once with a fixed reply (no I/O, deterministic) and
    reports a fixed token count, so a run measures the graph and not a model."""

    reply: str
    prompt_tokens: int = 100
    completion_tokens: int = 20

    @property
    def _llm_type(self) -> str:
        return "perf-instant"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        usage = UsageMetadata(
            input_tokens=self.prompt_tokens,
            output_tokens=self.completion_tokens,
            total_tokens=self.prompt_tokens + self.completion_tokens,
        )
        message = AIMessage(content=self.reply, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


WRONG_ACTOR = "Thought: The first name in the context looks right.\nAction: Finish[not the answer]"
REFLECTION = (
    "Reflection: I answered with the first name I saw instead of reading the whole context. "
    "Next time I will find the sentence that answers the question before I finish."
)
LOOP_TASK = {
    "task": "Which river flows through Prague?",
    "context": "Prague lies on the Vltava, the longest river in the Czech Republic.",
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
    actor = InstantChatModel(reply=WRONG_ACTOR)
    reflector = InstantChatModel(reply=REFLECTION)
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=checkpointer
    )
    ctx = Context(max_trials=trials_per_task, memory_size=3, strategy="reflexion")
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


@perf_app.command("overhead")
def overhead(
    trials: Annotated[
        int,
        typer.Option(
            "--trials", "-t", min=0, help="Trials timed per checkpointer (0: skip the loop)."
        ),
    ] = 300,
    trials_per_task: Annotated[
        int, typer.Option("--trials-per-task", min=1, help="Trials per thread (all fail).")
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

REFLECTION_MARK = "(perf-lesson)"
"""In every reflection the fake server writes; the actor's trial is 1 + how many it sees."""


class FakeOpenAIServer(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` on 127.0.0.1, answered after ``latency`` seconds, many
    requests at once (a thread each). The actor's answer is wrong until trial ``solve_at``
    and right from then on (looked up in ``answers`` by question), so every task does the same
    work: ``solve_at`` actor calls and ``solve_at - 1`` reflector calls."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, latency: float, answers: dict[str, str], solve_at: int = 1) -> None:
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        self.latency = latency
        self.answers = answers
        self.solve_at = solve_at
        self.requests = 0
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply_to(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        last = str(messages[-1].get("content") or "") if messages else ""
        if "Previous attempt:" in last:  # the reflector's task
            return (
                f"Reflection: I gave a wrong answer {REFLECTION_MARK}. Next time I will "
                "read the context sentence by sentence."
            )
        question = next(
            (
                ln[len("Question: ") :].strip()
                for ln in last.splitlines()
                if ln.startswith("Question: ")
            ),
            "",
        )
        trial = 1 + last.count(REFLECTION_MARK)
        answer = self.answers.get(question) if trial >= self.solve_at else None
        return f"Thought: I read the context.\nAction: Finish[{answer or 'not the answer'}]"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        if self._thread is not None:
            self._thread.join(5)
        self.server_close()


def chat_completion(
    text: str, *, model: str, prompt_tokens: int, completion_tokens: int, completion_id: str
) -> dict[str, Any]:
    """The body of an OpenAI ``chat.completion`` response that answers ``text`` (what the fake
    servers send)."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class _FakeHandler(BaseHTTPRequestHandler):
    server: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = {}
        if self.path.rstrip("/") != "/v1/chat/completions" or not isinstance(body, dict):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with self.server.lock:
            self.server.requests += 1
        time.sleep(self.server.latency)
        text = self.server.reply_to(body)
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
        completion = len(text) // 4
        self._send(
            200,
            chat_completion(
                text,
                model=body.get("model", "fake"),
                prompt_tokens=prompt,
                completion_tokens=completion,
                completion_id=f"chatcmpl-{uuid.uuid4().hex[:12]}",
            ),
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)


@dataclass(frozen=True)
class LevelTiming:
    """One concurrency level of the throughput run."""

    concurrency: int
    tasks: int
    calls: int
    seconds: float
    errors: int
    uneven: int
    """Tasks whose work differed from the fixed amount (not solved at ``solve_at``)."""
    first_error: str = ""

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.seconds if self.seconds else 0.0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0


def concurrency_figures(
    tasks: int, latency: float, levels: list[int], solve_at: int = 2
) -> list[LevelTiming]:
    """Run ``tasks`` HotPotQA CoT (GT) tasks through ``run_benchmark`` against the fake server
    at each concurrency level (a fresh SQLite checkpointer each), after an untimed warm-up."""
    questions = load_hotpotqa()
    answers = {q.question: q.answer for q in questions}
    timings: list[LevelTiming] = []
    with (
        FakeOpenAIServer(latency, answers, solve_at) as server,
        tempfile.TemporaryDirectory(prefix="reflexion-perf-") as tmp,
    ):
        ctx = Context(
            actor_model="openai:fake",
            evaluator_model="openai:fake",
            reflector_model="openai:fake",
            base_url=server.base_url,
            max_trials=solve_at,
            memory_size=max(3, solve_at - 1),
            strategy="reflexion",
            evaluator="exact_match",
        )

        def level(c: int, label: str, count: int) -> LevelTiming:
            work = Path(tmp) / label
            work.mkdir()
            batch = [
                BenchTask(
                    thread_id=f"perf-{label}-{i}",
                    input={
                        "task": q.question,
                        "context": q.gold_context,
                        "reference": q.answer,
                        "task_id": q.id,
                    },
                    label="",
                    meta={"task_id": q.id},
                )
                for i, q in ((i, questions[i % len(questions)]) for i in range(count))
            ]
            with (
                sqlite_saver(work / "threads.sqlite") as saver,
                (work / "results.jsonl").open("a", encoding="utf-8") as handle,
            ):
                graph = qa_builder(with_context=True).compile(checkpointer=saver)
                before = server.requests
                started = time.perf_counter()
                finals, errors = run_benchmark(
                    graph,
                    batch,
                    ctx,
                    Sink(handle),
                    settings={"bench": "perf-concurrency"},
                    concurrency=c,
                    metadata={"agent": "cot-gt"},
                )
                seconds = time.perf_counter() - started
            uneven = sum(1 for f in finals if not f["solved"] or f["trials"] != solve_at)
            first = str(errors[0].get("error", "")) if errors else ""
            return LevelTiming(
                c, count, server.requests - before, seconds, len(errors), uneven, first
            )

        warm = level(1, "warm", 1)
        if warm.errors:
            raise ReflexionError(
                f"the warm-up task against the fake server on {server.base_url} failed: "
                f"{warm.first_error}"
            )
        for c in levels:
            timings.append(level(c, f"c{c}", tasks))
    return timings


def _levels(value: str) -> list[int]:
    try:
        levels = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise ReflexionError(
            f"--levels '{value}' is not a comma-separated list of integers"
        ) from None
    if not levels or any(c < 1 for c in levels):
        raise ReflexionError("--levels needs one or more concurrency levels ≥ 1, e.g. 1,2,4,8")
    return list(dict.fromkeys(levels))


@perf_app.command("concurrency")
def concurrency(
    tasks: Annotated[int, typer.Option("--tasks", "-k", min=1, help="Tasks per level.")] = 32,
    latency: Annotated[
        float, typer.Option("--latency", min=0.0, help="Seconds the fake server takes per call.")
    ] = 0.2,
    levels: Annotated[
        str, typer.Option("--levels", help="Concurrency levels, comma-separated.")
    ] = "1,2,4,8,16",
    solve_at: Annotated[
        int,
        typer.Option(
            "--solve-at",
            min=1,
            max=10,
            help="The fake model answers right at this trial (so each task makes this many "
            "actor calls and one reflector call fewer).",
        ),
    ] = 2,
    json_path: JsonOpt = None,
) -> None:
    """Benchmark throughput against a fake OpenAI-compatible server on 127.0.0.1 with a fixed
    latency: tasks/s and model calls/s per --concurrency level, and the speed-up over c=1."""
    chosen = _levels(levels)
    timings = concurrency_figures(tasks, latency, chosen, solve_at)
    base = timings[0]
    calls_per_task = 2 * solve_at - 1
    table = Table(
        "c",
        "tasks",
        "calls",
        "time s",
        "tasks/s",
        "calls/s",
        "speed-up",
        "ideal tasks/s",
        "errors",
        title=f"run_benchmark against a fake server, {latency:g} s per call",
    )
    figures = []
    for t in timings:
        speedup = t.tasks_per_s / base.tasks_per_s if base.tasks_per_s else 0.0
        waves = math.ceil(t.tasks / t.concurrency)
        ideal = t.tasks / (waves * calls_per_task * latency) if latency else math.inf
        table.add_row(
            str(t.concurrency),
            str(t.tasks),
            str(t.calls),
            f"{t.seconds:.2f}",
            f"{t.tasks_per_s:.2f}",
            f"{t.calls_per_s:.1f}",
            f"{speedup:.2f}x",
            f"{ideal:.2f}" if math.isfinite(ideal) else "-",
            str(t.errors) + (f" ({t.uneven} uneven)" if t.uneven else ""),
        )
        figures.append(
            {
                "concurrency": t.concurrency,
                "tasks": t.tasks,
                "model_calls": t.calls,
                "seconds": round(t.seconds, 4),
                "tasks_per_s": round(t.tasks_per_s, 4),
                "calls_per_s": round(t.calls_per_s, 4),
                "speedup": round(speedup, 4),
                "errors": t.errors,
                "uneven": t.uneven,
            }
        )
    table.caption = (
        f"HotPotQA CoT (GT), bundled sample, exact match; every task is solved at trial "
        f"{solve_at} ({solve_at} actor + {solve_at - 1} reflector calls = {calls_per_task}); "
        f"SQLite checkpointer; speed-up = tasks/s over tasks/s at c={base.concurrency}; ideal = "
        "latency only: tasks / (⌈tasks / c⌉ × calls per task × latency)"
    )
    settings = {"tasks": tasks, "latency": latency, "levels": chosen, "solve_at": solve_at}
    report("concurrency", [table], {"levels": figures}, settings, json_path)


# ---- inference: the embedded path against llama-cpp-python -----------------------------------

GENERATION_PROMPT = [
    SystemMessage("You are a helpful programming assistant."),
    HumanMessage(
        "Write a complete Python module implementing a binary search tree class with insert, "
        "delete, search, minimum, maximum, height and in-order, pre-order and post-order "
        "traversal methods. Give every method a docstring, then write unit tests for each."
    ),
]
"""A request whose answer runs far past ``--tokens``, so every call generates that many."""


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant", "system": "system"}.get(message.type, "user")


def _dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """Messages as ``EmbeddedChatModel`` hands them to llama.cpp."""
    return [{"role": _role(m), "content": m.text} for m in messages]


def _perf(llm: Any) -> dict[str, float]:
    """llama.cpp's timings of a context since its last reset (prompt and generation)."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(llm.ctx)
    return {
        "prompt_ms": float(data.t_p_eval_ms),
        "prompt_tokens_evaluated": int(data.n_p_eval),
        "gen_ms": float(data.t_eval_ms),
        "gen_tokens": int(data.n_eval),
    }


def _reset_perf(llm: Any) -> None:
    import llama_cpp

    llama_cpp.llama_perf_context_reset(llm.ctx)


def _timed(llm: Any, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one call, returning its wall time, token usage and llama.cpp timings."""
    _reset_perf(llm)
    started = time.perf_counter()
    usage = call()
    wall = time.perf_counter() - started
    return {"wall_s": wall, **usage, **_perf(llm)}


def _usage_of(message: AIMessage) -> dict[str, Any]:
    meta: dict[str, Any] = dict(message.usage_metadata or {})
    return {
        "prompt_tokens": int(meta.get("input_tokens", 0)),
        "completion_tokens": int(meta.get("output_tokens", 0)),
    }


def inference_figures(spec: str, tokens: int, reps: int) -> dict[str, Any]:
    """Generation speed of both paths (alternating, ``reps`` calls each) and the prompt
    processing of a trial-1 and a trial-2 actor prompt (prefix cache warm and cold)."""
    if not spec.startswith(LOCAL_PREFIX):
        raise ReflexionError(
            f"perf inference measures the embedded llama.cpp model; '{spec}' is not local:… "
            f"(e.g. {DEFAULT_MODEL})"
        )
    from reflexion.core.models import _load_llama

    chat = embedded_model(
        spec[len(LOCAL_PREFIX) :], temperature=0.0, max_tokens=tokens, seed=0, slot="perf"
    )
    embedded_llm, _ = _load_llama(chat.model_path, chat.n_ctx, chat.slot)
    from llama_cpp import Llama

    # The same settings _load_llama gives the embedded contexts.
    direct: Any = Llama(
        model_path=chat.model_path, n_ctx=chat.n_ctx, n_threads=os.cpu_count(), verbose=False
    )
    try:
        dicts = _dicts(GENERATION_PROMPT)

        def via_embedded() -> dict[str, Any]:
            return _usage_of(chat.invoke(GENERATION_PROMPT))

        def via_direct() -> dict[str, Any]:
            out = direct.create_chat_completion(
                messages=dicts, temperature=0.0, max_tokens=tokens, seed=0
            )
            usage = out.get("usage") or {}
            return {
                "prompt_tokens": int(usage.get("prompt_tokens", 0)),
                "completion_tokens": int(usage.get("completion_tokens", 0)),
            }

        runs: dict[str, list[dict[str, Any]]] = {"embedded": [], "direct": []}
        for rep in range(reps):
            order = [("embedded", embedded_llm, via_embedded), ("direct", direct, via_direct)]
            if rep % 2:
                order.reverse()
            for name, llm, call in order:
                runs[name].append(_timed(llm, call))
        generation = {name: _summarise(calls) for name, calls in runs.items()}
        prefix = _prefix_cache(chat, reps)
    finally:
        direct.close()
    return {"model": spec, "generation": generation, "prefix_cache": prefix}


def _summarise(calls: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [c["wall_s"] for c in calls]
    e2e = [c["completion_tokens"] / c["wall_s"] for c in calls if c["wall_s"] > 0]
    decode = [1000 * c["gen_tokens"] / c["gen_ms"] for c in calls if c["gen_ms"] > 0]
    return {
        "calls": len(calls),
        "completion_tokens": statistics.median(c["completion_tokens"] for c in calls),
        "wall_s_median": round(statistics.median(walls), 4),
        "tokens_per_s_median": round(statistics.median(e2e), 2) if e2e else None,
        "tokens_per_s_min": round(min(e2e), 2) if e2e else None,
        "tokens_per_s_max": round(max(e2e), 2) if e2e else None,
        "decode_tokens_per_s_median": round(statistics.median(decode), 2) if decode else None,
        "calls_detail": [
            {k: round(v, 4) if isinstance(v, float) else v for k, v in c.items()} for c in calls
        ],
    }


TRIAL2_REFLECTION = (
    "I answered with the first title in the context instead of the one the question asks "
    "about. Next time I will match the question's entity to its paragraph before finishing."
)


def _prefix_cache(chat: EmbeddedChatModel, reps: int) -> dict[str, Any]:
    """Prompt processing of the CoT (GT) actor's trial-1 prompt, then of its trial-2 prompt
    (a reflection appended after the stable prefix) right after it in the same context, and
    of the trial-2 prompt in a context whose cache was cleared. One token generated each."""
    from reflexion.core.models import _load_llama
    from reflexion.core.state import State
    from reflexion.nodes.actor import cot_messages

    question = load_hotpotqa(limit=1)[0]
    ctx = Context(strategy="reflexion", memory_size=3)
    first = State(task=question.question, context=question.gold_context)
    second = State(
        task=question.question, context=question.gold_context, reflections=[TRIAL2_REFLECTION]
    )
    trial1 = cot_messages(first, ctx, with_context=True)
    trial2 = cot_messages(second, ctx, with_context=True)
    probe = chat.model_copy(update={"max_tokens": 1, "slot": "perf-prefix"})
    llm, _ = _load_llama(probe.model_path, probe.n_ctx, probe.slot)

    def call(messages: list[BaseMessage]) -> Callable[[], dict[str, Any]]:
        return lambda: _usage_of(probe.invoke(messages))

    rows: dict[str, list[dict[str, Any]]] = {"trial 1 (cold)": [], "trial 2 after trial 1": []}
    rows["trial 2 (cold)"] = []
    for _ in range(reps):
        llm.reset()
        rows["trial 1 (cold)"].append(_timed(llm, call(trial1)))
        rows["trial 2 after trial 1"].append(_timed(llm, call(trial2)))
        llm.reset()
        rows["trial 2 (cold)"].append(_timed(llm, call(trial2)))
    out: dict[str, Any] = {}
    for name, calls in rows.items():
        out[name] = {
            "prompt_tokens": calls[0]["prompt_tokens"],
            "tokens_evaluated": statistics.median(
                c["prompt_tokens_evaluated"] + c["gen_tokens"] for c in calls
            ),
            "prompt_ms_median": round(
                statistics.median(c["prompt_ms"] + c["gen_ms"] for c in calls), 2
            ),
            "wall_ms_median": round(1000 * statistics.median(c["wall_s"] for c in calls), 2),
        }
    return out


@perf_app.command("inference")
def inference(
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="An embedded model: local:<preset> or local:/path.gguf."
        ),
    ] = DEFAULT_MODEL,
    tokens: Annotated[
        int, typer.Option("--tokens", min=1, help="max_tokens of each generation.")
    ] = 128,
    reps: Annotated[int, typer.Option("--reps", min=1, help="Calls per path.")] = 3,
    json_path: JsonOpt = None,
) -> None:
    """Tokens/s of the embedded path (EmbeddedChatModel.invoke) against llama-cpp-python's
    create_chat_completion with the same model, context size, threads, temperature 0 and
    max_tokens; and prompt processing of trial 2 vs trial 1 (llama.cpp's prefix cache)."""
    fig = inference_figures(model, tokens, reps)
    gen = Table(
        Column("path", no_wrap=True),
        "calls",
        "tokens",
        "wall s",
        "tok/s (min–max)",
        "decode tok/s",
        title=f"generation, {model}, max_tokens={tokens}, temperature 0",
    )
    labels = {
        "embedded": "EmbeddedChatModel.invoke",
        "direct": "Llama.create_chat_completion",
    }
    for name, g in fig["generation"].items():
        gen.add_row(
            labels[name],
            str(g["calls"]),
            f"{g['completion_tokens']:g}",
            f"{g['wall_s_median']:.3f}",
            f"{g['tokens_per_s_median']} ({g['tokens_per_s_min']}–{g['tokens_per_s_max']})",
            str(g["decode_tokens_per_s_median"]),
        )
    e, d = fig["generation"]["embedded"], fig["generation"]["direct"]
    if e["wall_s_median"] and d["wall_s_median"]:
        gen.caption = (
            f"embedded path / direct wall time: {e['wall_s_median'] / d['wall_s_median']:.3f}; "
            "medians; tok/s = completion tokens / wall time of the call; decode tok/s = "
            "llama.cpp's own generation timing; calls alternate between the paths"
        )
    prefix = Table(
        Column("actor prompt", no_wrap=True),
        "prompt tokens",
        "evaluated",
        "prompt ms",
        "wall ms",
        title="CoT (GT) actor: prefix-cache reuse between trials (medians)",
    )
    for name, p in fig["prefix_cache"].items():
        prefix.add_row(
            name,
            str(p["prompt_tokens"]),
            f"{p['tokens_evaluated']:g}",
            f"{p['prompt_ms_median']:.1f}",
            f"{p['wall_ms_median']:.1f}",
        )
    prefix.caption = (
        "medians; trial 2 = trial 1's prompt with one reflection appended after the task "
        "(nodes/actor.py memory_block); 'after trial 1' runs in the same llama.cpp context, "
        "'cold' after a reset; evaluated = tokens llama.cpp processed (the rest came from its "
        "cache); prompt ms = llama.cpp's prompt timing; wall ms = the call, one token generated"
    )
    settings = {"model": model, "tokens": tokens, "reps": reps}
    report("inference", [gen, prefix], fig, settings, json_path)


# ---- learning cost: tokens per solved task -----------------------------------------------------

BASELINES = ("none", "simple")
"""Strategy labels of the baselines (HotPotQA and ALFWorld: none; programming: simple)."""


def _solved(bench: str, final: dict[str, Any]) -> bool:
    if bench == "programming":
        return bool(final.get("hidden_pass"))
    if bench == "alfworld":
        return bool(final.get("won_at"))
    return bool(final.get("solved"))


def cost_of(path: Path) -> dict[str, Any]:
    """Tokens, calls and solved tasks of one results file's finished tasks. The token figures
    count only tasks whose ``final`` line has ``usage`` (older runs recorded none)."""
    if not path.is_file():
        raise ReflexionError(f"results file {path} does not exist: check the path")
    finals = list(finished_tasks(path).values())
    if not finals:
        raise ReflexionError(f"{path} holds no finished tasks: run the benchmark first")
    settings = finals[0].get("settings") or {}
    bench = str(settings.get("bench") or "hotpotqa")
    strategy = str(settings.get("strategy_name") or settings.get("strategy") or "?")
    run = " ".join(str(settings[k]) for k in ("bench", "agent", "language") if settings.get(k))
    model = str(settings.get("actor_model") or "?")
    counted = [f for f in finals if isinstance(f.get("usage"), dict)]
    used = totals(merge(*(f["usage"] for f in counted)))
    solved_counted = sum(_solved(bench, f) for f in counted)
    tokens = used["prompt_tokens"] + used["completion_tokens"]
    return {
        "file": str(path),
        "bench": bench,
        "run": run or bench,
        "model": model,
        "evaluator": settings.get("evaluator"),
        "strategy": strategy,
        "baseline": strategy in BASELINES,
        "tasks": len(finals),
        "solved": sum(_solved(bench, f) for f in finals),
        "with_usage": len(counted),
        "calls": used["calls"],
        "prompt_tokens": used["prompt_tokens"],
        "completion_tokens": used["completion_tokens"],
        "tokens": tokens,
        "tokens_per_task": round(tokens / len(counted), 1) if counted else None,
        "tokens_per_solved": round(tokens / solved_counted, 1) if solved_counted else None,
    }


def learning_cost_figures(files: list[Path]) -> list[dict[str, Any]]:
    """One row per file, with tokens per solved task relative to the baseline of its group
    (same benchmark, agent or language, evaluator and model)."""
    rows = [cost_of(p) for p in files]

    def group(r: dict[str, Any]) -> tuple[str, str, str]:
        return r["run"], r["model"], str(r["evaluator"])

    base = {group(r): r for r in rows if r["baseline"]}
    for r in rows:
        b = base.get(group(r))
        ours, theirs = r["tokens_per_solved"], b["tokens_per_solved"] if b else None
        r["vs_baseline"] = (
            round(ours / theirs, 3) if ours and theirs and not r["baseline"] else None
        )
    return rows


RUN_SLICE: dict[str, str] = {
    "hotpotqa-none": "hotpotqa --agent cot-gt --limit 10 --trials 3 --strategy none",
    "hotpotqa-reflexion": "hotpotqa --agent cot-gt --limit 10 --trials 3 --strategy reflexion",
    "programming-simple": "programming --dataset humaneval --limit 10 --strategy simple",
    "programming-reflexion": (
        "programming --dataset humaneval --limit 10 --strategy reflexion --max-iters 3"
    ),
    "alfworld-none": "alfworld --limit 2 --trials 3 --strategy none",
    "alfworld-reflexion": "alfworld --limit 2 --trials 3 --strategy reflexion",
}
"""The fixed slice ``learning-cost --run`` runs: name → ``reflexion bench`` arguments."""


def run_slice(out_dir: Path, model: str) -> list[Path]:
    """Run the fixed slice with ``reflexion bench`` (each strategy in a file of its own under
    ``out_dir``; a rerun resumes); ALFWorld only when its engine is installed."""
    from reflexion.alfworld.env import engine_available

    files = []
    for name, args in RUN_SLICE.items():
        if name.startswith("alfworld") and not engine_available():
            console.print(f"[dim]skipping {name}: the alfworld extra is not installed[/]")
            continue
        out = out_dir / f"{name}.jsonl"
        command = [
            sys.executable,
            "-m",
            "reflexion",
            "bench",
            *shlex.split(args),
            "--model",
            model,
            "--output",
            str(out),
            "--plot",
            str(out.with_suffix(".png")),
            "--db",
            str(out_dir / "checkpoints.sqlite"),
        ]
        console.print("[bold]$[/] " + escape(shlex.join(["reflexion", *command[3:]])))
        if subprocess.run(command, check=False).returncode != 0:
            raise ReflexionError(f"the benchmark {name} failed (see above); rerun to resume it")
        files.append(out)
    return files


@perf_app.command("learning-cost")
def learning_cost(
    results: Annotated[
        list[Path] | None,
        typer.Argument(help="Results JSONL files of finished `reflexion bench` runs."),
    ] = None,
    run: Annotated[
        bool,
        typer.Option(
            "--run",
            help="First run a fixed small slice: HotPotQA CoT (GT) 10 questions none vs "
            "reflexion (3 trials), HumanEval 10 problems simple vs reflexion (3 iterations), "
            "ALFWorld 2 games none vs reflexion (3 trials, if the engine is installed).",
        ),
    ] = False,
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model of the --run slice.")
    ] = DEFAULT_MODEL,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Where --run writes its results files.")
    ] = Path("runs") / "perf",
    json_path: JsonOpt = None,
) -> None:
    """Tokens per solved task, baseline against Reflexion, from the usage recorded on the
    results lines of finished benchmark runs."""
    files = list(results or [])
    if run:
        files += run_slice(out_dir, model)
    if not files:
        raise ReflexionError("give results files of `reflexion bench`, or --run to make them")
    rows = learning_cost_figures(files)
    table = Table(
        Column("run", no_wrap=True),
        "strategy",
        "tasks",
        "solved",
        "calls",
        "tokens",
        "tok/task",
        "tok/solved",
        "vs base",
        title="learning cost: tokens per solved task",
    )
    for r in rows:
        table.add_row(
            escape(r["run"]),
            r["strategy"],
            str(r["tasks"]),
            str(r["solved"]),
            f"{r['calls']:,}",
            f"{r['tokens']:,}" if r["with_usage"] else "-",
            f"{r['tokens_per_task']:,.0f}" if r["tokens_per_task"] is not None else "-",
            f"{r['tokens_per_solved']:,.0f}" if r["tokens_per_solved"] else "-",
            f"{r['vs_baseline']:.2f}x" if r["vs_baseline"] else "-",
        )
    missing = sum(r["tasks"] - r["with_usage"] for r in rows)
    models = sorted({r["model"] for r in rows})
    table.caption = (
        f"model {', '.join(models)}; tokens = prompt + completion tokens the models reported, "
        "over all tasks, solved or not; vs base = tokens per solved task over the baseline's "
        "(none; simple for programming) with the same benchmark, agent, model and evaluator"
        + (
            f"; {missing} task(s) have no usage recorded (older runs), not counted"
            if missing
            else ""
        )
    )
    settings = {"files": [str(f) for f in files], "run": run, "model": model if run else None}
    report("learning-cost", [table], {"runs": rows}, settings, json_path)


__all__ = [
    "FakeOpenAIServer",
    "InstantChatModel",
    "concurrency_figures",
    "learning_cost_figures",
    "machine",
    "overhead_figures",
    "perf_app",
    "real_run_figures",
]
