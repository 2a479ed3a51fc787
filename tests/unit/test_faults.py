"""Provider faults against a real OpenAI-compatible HTTP server on loopback: a 429, a 500, a
reply slower than the client's timeout and an empty message are retried with backoff; when the
tries run out the task is an ``error`` line with the reason and the benchmark goes on."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage

from reflexion.core.context import Context
from reflexion.core.errors import ProviderError
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink, finished_tasks
from reflexion.harness.cli.app import main
from reflexion.harness.perf.concurrency import chat_completion
from reflexion.models.providers import load_chat_model
from reflexion.models.retries import RetryingChatModel, RetryPolicy
from reflexion.models.transport import Transport, using_transport
from reflexion.nodes import common as node_common
from tests.conftest import hotpotqa_line

pytestmark = [
    pytest.mark.allow_hosts(["127.0.0.1"]),
    # The tiny test backoff goes through LangChain's ``initial``, which tenacity 9.2 deprecates.
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
]

FAST = RetryPolicy(max_retries=2, timeout=0.5, backoff=0.01)
"""Three attempts, half a second per request, about 10 ms of backoff."""

Decide = Callable[[dict[str, Any]], str]
"""Given a request body, the answer: ``429``, ``500``, ``400``, ``slow``, ``empty`` or
``ok:<text>``."""


class FakeOpenAI(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` answered by ``decide`` (or by a script of answers, one per
    request, then ``ok``), counting the requests it received."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, decide: Decide) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.decide = decide
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.released = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, answers: list[str], then: str = "ok:Thought: ok.\nAction: Finish[x]") -> None:
        queue = list(answers)

        def decide(_body: dict[str, Any]) -> str:
            with self.lock:
                return queue.pop(0) if queue else then

        self.decide = decide


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        with self.server.lock:
            self.server.requests.append(body)
        answer = self.server.decide(body)
        try:
            if answer == "429":
                error = {"message": "Rate limit reached", "type": "rate_limit_error"}
                self._json(429, {"error": error}, {"Retry-After": "1"})
            elif answer in ("500", "400"):
                self._json(int(answer), {"error": {"message": "boom", "type": "server_error"}})
            elif answer == "slow":
                # Longer than the client's timeout; the client hangs up before this returns.
                self.server.released.wait(3.0)
                self._json(200, _completion(body, "too late"))
            elif answer == "empty":
                self._json(200, _completion(body, ""))
            else:
                self._json(200, _completion(body, answer.removeprefix("ok:")))
        except (BrokenPipeError, ConnectionResetError):
            pass


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    model = body.get("model", "any-name")
    return chat_completion(
        text, model=model, prompt_tokens=10, completion_tokens=5, completion_id="chatcmpl-test"
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    srv = FakeOpenAI(lambda _body: "ok:hello")
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield srv
    srv.released.set()
    srv.shutdown()
    thread.join(5)
    srv.server_close()


def model(server: FakeOpenAI, policy: RetryPolicy = FAST) -> RetryingChatModel:
    chat = load_chat_model("openai:any-name", base_url=server.base_url, retry=policy)
    assert isinstance(chat, RetryingChatModel)
    return chat


@pytest.mark.parametrize("fault", ["429", "500", "slow", "empty"])
def test_each_fault_is_retried_then_the_call_succeeds(server, fault):
    server.script([fault])
    started = time.perf_counter()
    reply = model(server).invoke("Say something.", stop=["\nObservation"])
    assert reply.text == "Thought: ok.\nAction: Finish[x]"
    assert len(server.requests) == 2
    assert server.requests[-1]["stop"] == ["\nObservation"]  # call options reach the server
    assert reply.usage_metadata is not None and reply.usage_metadata["input_tokens"] == 10
    assert time.perf_counter() - started < 3


def test_faults_in_a_row_are_retried_up_to_the_bound(server):
    server.script(["429", "500", "slow", "empty"])
    reply = model(server, RetryPolicy(max_retries=4, timeout=0.5, backoff=0.01)).invoke("Hi")
    assert reply.text.startswith("Thought: ok.")
    assert len(server.requests) == 5


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("429", "429 Too Many Requests"),
        ("500", "500 Internal Server Error"),
        ("slow", r"request timed out \(limit 0\.5 s\)"),
        ("empty", "empty reply"),
    ],
)
def test_exhausted_retries_name_the_reason_and_the_attempts(server, fault, reason):
    server.script([], then=fault)
    with pytest.raises(
        ProviderError, match=rf"^{reason}.* after 3 attempts calling openai:any-name"
    ):
        model(server).invoke("Hi")
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried(server):
    server.script([], then="400")
    with pytest.raises(openai.BadRequestError):
        model(server).invoke("Hi")
    assert len(server.requests) == 1


def test_no_retry_when_turned_off(server):
    server.script([], then="500")
    with pytest.raises(ProviderError, match="after 1 attempt calling"):
        model(server, RetryPolicy(max_retries=0, timeout=0.5, backoff=0.01)).invoke("Hi")
    assert len(server.requests) == 1


def test_structured_output_is_retried_too(server):
    server.script(["500"], then='ok:{"correct": true, "score": 1, "feedback": "fine"}')
    from reflexion.nodes.evaluator import JudgeOutput

    out = model(server).with_structured_output(JudgeOutput, method="json_mode").invoke("Judge.")
    assert isinstance(out, JudgeOutput) and out.correct
    assert len(server.requests) == 2


# ---- through the benchmark runner ---------------------------------------------------------------

QUESTIONS = {f"q{i}": (f"What is item {i}?", f"answer {i}") for i in range(3)}


def answer_or_fail(bad: str, fault: str) -> Decide:
    """Answer every question right, except ``bad``'s, which always gets ``fault``."""

    def decide(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        match = re.search(r"What is item (\d+)\?", text)
        assert match, text
        if f"item {bad[1:]}?" in text:
            return fault
        return f"ok:Thought: easy.\nAction: Finish[answer {match.group(1)}]"

    return decide


def test_exhausted_retries_become_an_error_line_and_the_run_goes_on(server, saver, tmp_path):
    server.decide = answer_or_fail("q1", "429")
    ctx = Context(
        actor_model="openai:any-name",
        evaluator_model="openai:any-name",
        reflector_model="openai:any-name",
        max_trials=2,
    )
    transport = Transport(
        base_url=server.base_url, max_retries=2, request_timeout=0.5, retry_backoff=0.01
    )
    graph = qa_builder(with_passages=False).compile(checkpointer=saver)
    tasks = [
        BenchTask(
            thread_id=f"t-{i}",
            input={"task": q, "passages": "", "reference": a},
            label=i,
            meta={"task_id": i},
        )
        for i, (q, a) in QUESTIONS.items()
    ]
    out = tmp_path / "r.jsonl"
    started = time.perf_counter()
    with using_transport(transport), out.open("a", encoding="utf-8") as handle:
        finals, errors = run_benchmark(
            graph, tasks, ctx, Sink(handle), settings={}, done=finished_tasks(out)
        )
    assert time.perf_counter() - started < 10
    assert [f["task_id"] for f in finals] == ["q0", "q2"]  # the run went on after q1
    assert all(f["solved"] for f in finals)
    assert len(errors) == 1 and errors[0]["task_id"] == "q1"
    assert errors[0]["error"] == (
        "ProviderError: 429 Too Many Requests after 3 attempts calling openai:any-name"
    )
    q1_requests = [r for r in server.requests if "item 1?" in r["messages"][-1]["content"]]
    assert len(q1_requests) == 3  # bounded: one trial's first call, three attempts, no more
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["type"] for r in rows if r["thread_id"] == "t-q1"] == ["error"]
    # The served model's token counts reach the accounting.
    assert finals[0]["usage"]["actor"]["prompt_tokens"] == 10
    assert finals[0]["usage"]["actor"]["calls"] == 1


def write_questions(path: Path) -> Path:
    lines = [
        hotpotqa_line(i, q, a, [["Item", [f"Item {i[1:]} is {a}."]]])
        for i, (q, a) in QUESTIONS.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bench_summary_counts_errors_apart_from_failures(server, tmp_path, monkeypatch, capsys):
    server.decide = answer_or_fail("q1", "500")
    # The CLI reads the transport from the environment (and --base-url): shrink its waits.
    monkeypatch.setenv("REFLEXION_REQUEST_TIMEOUT", "0.5")
    monkeypatch.setenv("REFLEXION_RETRY_BACKOFF", "0.01")
    dataset = write_questions(tmp_path / "q.jsonl")
    out = tmp_path / "r.jsonl"
    argv = ["reflexion", "bench", "hotpotqa", "--dataset", str(dataset), "--limit", "3"]
    argv += ["--agent", "cot", "--strategy", "none", "--trials", "1"]
    argv += ["--model", "openai:any-name", "--base-url", server.base_url]
    argv += ["--db", str(tmp_path / "t.sqlite"), "--output", str(out)]
    argv += ["--plot", str(tmp_path / "c.png")]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exc:
        main()
    text = capsys.readouterr().out
    assert exc.value.code in (0, None), text
    assert "500 Internal Server Error after 4 attempts" in text
    assert re.search(r"cot none\s+2/2\s+1\s", text), text
    assert "1 question(s) failed with an error" in text
    assert "solved 2/2" in text


def test_a_named_seed_reaches_a_wrapped_hosted_model_on_every_attempt(server):
    chat = model(server)
    seed = node_common.named_seed(chat, "game", 2, 7)
    assert seed and seed == node_common.named_seed(chat, "game", 2, 7)
    assert seed != node_common.named_seed(chat, "game", 2, 8)
    server.script(["429"])
    assert chat.invoke("Hi", **seed).text.startswith("Thought: ok.")
    assert [body.get("seed") for body in server.requests] == [seed["seed"]] * 2


def test_the_judge_reports_a_provider_failure_once_instead_of_calling_again(server):
    from reflexion.core.steps import drive
    from reflexion.nodes.evaluator import ask_judge

    server.script([], then="429")
    with pytest.raises(ProviderError, match=r"429.*after 3 attempts"):
        drive(ask_judge(model(server), [HumanMessage("Judge.")]))
    assert len(server.requests) == 3  # one structured call and its retries, no second call
