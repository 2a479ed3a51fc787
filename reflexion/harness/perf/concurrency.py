"""``reflexion perf concurrency``: runs at several concurrency levels against a local fake
OpenAI-compatible server with a fixed latency, to show that the runner overlaps model calls."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.harness.bench.driver import run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.harness.perf.overhead import sqlite_saver
from reflexion.models.transport import Transport, using_transport
from reflexion.qa.context import QAContext

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
        self.in_flight = 0
        self.peak = 0
        """The most requests answered at once since ``peak`` was last set to 0."""
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
            self.server.in_flight += 1
            self.server.peak = max(self.server.peak, self.server.in_flight)
        try:
            time.sleep(self.server.latency)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
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
    peak: int = 0
    """The most model calls the server answered at once: overlap shown without a clock."""
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
        using_transport(Transport(base_url=server.base_url)),
    ):
        ctx = QAContext(
            actor_model="openai:fake",
            evaluator_model="openai:fake",
            reflector_model="openai:fake",
            max_trials=solve_at,
            memory_size=max(3, solve_at - 1),
            strategy="reflexion",
            evaluator="exact_match",
            retry="informed",  # one actor call a trial, as the fake server scripts it
        )

        def level(c: int, label: str, count: int) -> LevelTiming:
            work = Path(tmp) / label
            work.mkdir()
            batch = [
                BenchTask(
                    thread_id=f"perf-{label}-{i}",
                    input={
                        "task": q.question,
                        "passages": gold_passages(q),
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
                graph = qa_builder(with_passages=True).compile(checkpointer=saver)
                before, server.peak = server.requests, 0
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
                c, count, server.requests - before, seconds, len(errors), uneven, server.peak, first
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


def concurrency(
    tasks: Annotated[
        int, typer.Option("--tasks", "-k", metavar="N", min=1, help="Tasks per level.")
    ] = 32,
    latency: Annotated[
        float,
        typer.Option(
            "--latency", metavar="X", min=0.0, help="Seconds the fake server takes per call."
        ),
    ] = 0.2,
    levels: Annotated[
        str, typer.Option("--levels", help="Concurrency levels, comma-separated.")
    ] = "1,2,4,8,16",
    solve_at: Annotated[
        int,
        typer.Option(
            "--solve-at",
            metavar="N",
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
        "peak",
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
            str(t.peak),
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
                "peak_in_flight": t.peak,
            }
        )
    table.caption = (
        f"HotPotQA CoT (GT), bundled sample, exact match; every task is solved at trial "
        f"{solve_at} ({solve_at} actor + {solve_at - 1} reflector calls = {calls_per_task}); "
        f"SQLite checkpointer; speed-up = tasks/s over tasks/s at c={base.concurrency}; ideal = "
        "latency only: tasks / (⌈tasks / c⌉ × calls per task × latency); peak = the most "
        "calls the server answered at once"
    )
    settings = {"tasks": tasks, "latency": latency, "levels": chosen, "solve_at": solve_at}
    report("concurrency", [table], {"levels": figures}, settings, json_path)


# ---- inference: the embedded path against llama-cpp-python -----------------------------------
