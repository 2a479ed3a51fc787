"""Crash-test kit: a loopback OpenAI-compatible server whose answers are a pure function of the
request, and helpers to run, kill and rerun ``reflexion bench hotpotqa`` as a real process.

The server plays every role of a Reflexion run on HotPotQA questions. Question ``i`` of the
plan is answered correctly at trial ``plan[i]`` (0: never); other trials answer
``wrong-<trial>``. The trial is read from the request itself (one ``lesson <n>`` per reflection
the actor sees), so a rerun asks exactly what the interrupted run would have asked. Every request
is logged as ``(role, question, trial)``; request number ``hold_at`` is held until
:meth:`LoopbackModel.release` (the process is then certainly inside that model call).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from reflexion.harness.bench.datasets import load_hotpotqa
from reflexion.harness.perf.concurrency import chat_completion

REPO = Path(__file__).resolve().parent.parent

Call = tuple[str, str, int]
"""(role, question, trial): ``actor`` or ``reflector``, the question text, the trial number."""


def _text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


class LoopbackModel(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` for the CoT actor and the reflector (see the module)."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, answers: dict[str, str], plan: dict[str, int], delay: float = 0.0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = answers
        self.plan = plan
        self.delay = delay
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self.hold_at: int | None = None
        self.arrived = threading.Event()
        self._release = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def release(self) -> None:
        self._release.set()

    def reset(self, hold_at: int | None = None) -> None:
        """Forget the log and (optionally) hold request number ``hold_at`` (1-based)."""
        with self.lock:
            self.calls = []
            self.hold_at = hold_at
            self.arrived.clear()
            self._release.clear()

    def question_of(self, text: str) -> str:
        found = [q for q in self.answers if q in text]
        assert len(found) == 1, f"request names {len(found)} known questions"
        return found[0]

    def reply(self, body: dict[str, Any]) -> str:
        text = _text(body)
        system = str(body["messages"][0].get("content", ""))
        question = self.question_of(text)
        if "reflecting on a failed attempt" in system:
            trial = int(re.findall(r"Finish\[wrong-(\d+)\]", text)[-1])
            role, answer = (
                "reflector",
                (
                    f"Reflection: lesson {trial}: I answered wrong-{trial}; I will reread the "
                    "context and name the entity it asks for."
                ),
            )
        else:
            trial = len(set(re.findall(r"lesson (\d+):", text))) + 1
            right = self.plan[question] == trial
            role = "actor"
            answer = (
                "Thought: I read the context.\nAction: Finish["
                + (self.answers[question] if right else f"wrong-{trial}")
                + "]"
            )
        with self.lock:
            self.calls.append((role, question, trial))
            held = len(self.calls) == self.hold_at
        if held:
            self.arrived.set()
            self._release.wait(30)
        elif self.delay:
            time.sleep(self.delay)
        return answer


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackModel

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        text = self.server.reply(body)
        completion = chat_completion(
            text,
            model=body.get("model", "fake"),
            prompt_tokens=20,
            completion_tokens=10,
            completion_id="chatcmpl-crash",
        )
        if body.get("stream"):
            # A graph run with stream_mode "messages" (on a LangGraph server) streams its model
            # calls: the same answer as server-sent chunks, usage in the last one.
            data, kind = _event_stream(completion), "text/event-stream"
        else:
            data, kind = json.dumps(completion).encode(), "application/json"
        try:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _event_stream(completion: dict[str, Any]) -> bytes:
    """A ``chat.completion`` as the ``chat.completion.chunk`` events of a streamed reply."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    text = completion["choices"][0]["message"]["content"]
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": completion["usage"]},
    ]
    events = [
        "data: " + json.dumps({**head, "object": "chat.completion.chunk", **c}) + "\n\n"
        for c in chunks
    ]
    return ("".join(events) + "data: [DONE]\n\n").encode()


PLAN = (1, 2, 3, 0)
"""The trial at which questions 1-4 of the bundled sample are answered right (0: never)."""


@contextmanager
def loopback_model(delay: float = 0.0) -> Iterator[LoopbackModel]:
    questions = load_hotpotqa(None, limit=len(PLAN))
    server = LoopbackModel(
        {q.question: q.answer for q in questions},
        {q.question: t for q, t in zip(questions, PLAN, strict=True)},
        delay,
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield server
    finally:
        server.release()
        server.shutdown()
        thread.join(5)
        server.server_close()


def bench_command(
    server: LoopbackModel,
    db: str,
    results: Path,
    *,
    concurrency: int = 1,
    langgraph_url: str | None = None,
    paired: bool = True,
) -> list[str]:
    """The benchmark command under test (one strategy, ``concurrency`` questions at a time;
    with ``langgraph_url``, every question runs on that LangGraph server; ``paired=False``
    runs each thread from its input, as a server does)."""
    return [
        sys.executable, "-m", "reflexion.harness", "bench", "hotpotqa",
        "--limit", str(len(PLAN)), "--trials", "3", "--strategy", "reflexion",
        "--retry", "informed",  # one actor call a trial: PLAN counts trials in calls
        "-c", str(concurrency),
        "--model", "openai:fake", "--base-url", server.base_url,
        "--db", db, "-o", str(results), "--plot", str(results.with_suffix(".png")),
        *(("--server", langgraph_url) if langgraph_url else ()),
        *(() if paired else ("--unpaired",)),
    ]  # fmt: skip


def environment() -> dict[str, str]:
    env = dict(os.environ, OPENAI_API_KEY="sk-crash-test", PYTHONPATH=str(REPO))
    return env


def run_to_end(command: list[str], cwd: Path, timeout: float = 120) -> None:
    done = subprocess.run(
        command, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def rows(results: Path) -> list[dict[str, Any]]:
    """Every well-formed line of a results file."""
    out = []
    if results.is_file():
        for line in results.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def reference_run(server: LoopbackModel, tmp: Path) -> dict[str, Any]:
    """The benchmark run once in ``tmp`` on SQLite, uninterrupted: its results lines
    (``rows``) and the model requests it made (``calls``)."""
    server.reset()
    results = tmp / "r.jsonl"
    run_to_end(bench_command(server, str(tmp / "t.sqlite"), results), tmp)
    return {"rows": rows(results), "calls": list(server.calls)}


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def kill_at(
    server: LoopbackModel,
    command: list[str],
    cwd: Path,
    request: int,
    while_held: Callable[[], Any] | None = None,
    settle: float = 1.0,
) -> list[dict[str, Any]]:
    """Start the command, hold its model request number ``request``; then either SIGKILL it
    there (``while_held`` None), or call ``while_held()`` (e.g. lock the checkpoint
    database), answer the request, give the process up to ``settle`` seconds to write the
    next results line, and SIGKILL it. Returns the results lines at the moment of the kill."""
    results = Path(command[command.index("-o") + 1]) if "-o" in command else cwd / "none"
    server.reset(hold_at=request)
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: server.arrived.is_set() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        if while_held is not None:
            before = len(rows(results))
            while_held()
            server.release()
            wait_for(lambda: len(rows(results)) > before, settle)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return rows(results)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
        server.release()


def kill_then_rerun(
    server: LoopbackModel,
    command: list[str],
    cwd: Path,
    request: int,
    reference: dict[str, Any],
    lock: Callable[[], Any] | None = None,
) -> None:
    """SIGKILL the command at model request ``request`` (:func:`kill_at`; ``lock()`` first
    blocks the checkpoint writes and returns the connection holding the lock, rolled back and
    closed after the kill), run the same command to the end, and check the results against
    the uninterrupted ``reference`` run (:func:`check_consistent`)."""
    results = Path(command[command.index("-o") + 1])
    holder: list[Any] = []
    hold = (lambda: holder.append(lock())) if lock is not None else None
    recorded = kill_at(server, command, cwd, request, hold, settle=0.6)
    for conn in holder:
        conn.rollback()
        conn.close()
    assert len(recorded) < len(reference["rows"]), "killed after the run had finished"
    server.reset()
    run_to_end(command, cwd)
    check_consistent(rows(results), reference, recorded, list(server.calls))


def comparable(final: dict[str, Any]) -> dict[str, Any]:
    """A final line without what legitimately differs between runs (time, usage, resumed)."""
    return {k: v for k, v in final.items() if k not in ("wall_s", "usage", "resumed")}


def check_consistent(
    lines: list[dict[str, Any]],
    reference: dict[str, Any],
    recorded: list[dict[str, Any]],
    rerun_calls: list[tuple[str, str, int]],
) -> None:
    trials = Counter((r["thread_id"], r["trial"]) for r in lines if r["type"] == "trial")
    assert trials and max(trials.values()) == 1, f"trials written twice: {trials}"
    expected = Counter(
        (r["thread_id"], r["trial"]) for r in reference["rows"] if r["type"] == "trial"
    )
    assert trials == expected, "a finished trial is missing from the results"
    finals = [r for r in lines if r["type"] == "final"]
    assert Counter(r["thread_id"] for r in finals) == Counter(
        r["thread_id"] for r in reference["rows"] if r["type"] == "final"
    )
    by_thread = {r["thread_id"]: comparable(r) for r in finals}
    assert by_thread == {
        r["thread_id"]: comparable(r) for r in reference["rows"] if r["type"] == "final"
    }
    reflections = Counter(
        (r["thread_id"], r.get("trial")) for r in lines if r["type"] == "reflection"
    )
    assert sum(reflections.values()) == sum(
        1 for r in reference["rows"] if r["type"] == "reflection"
    )
    assert max(reflections.values()) == 1
    # The actor is never asked again for a trial the results file already held.
    question_of = {r["thread_id"]: r["question"] for r in reference["rows"] if "question" in r}
    done = {(question_of[r["thread_id"]], r["trial"]) for r in recorded if r["type"] == "trial"}
    again = [c for c in rerun_calls if c[0] == "actor" and (c[1], c[2]) in done]
    assert not again, f"recorded trials were run again: {again}"
