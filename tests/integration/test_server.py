"""A real `langgraph dev` server driven through langgraph-sdk: every graph served with its
description and context schema, a run streamed as it happens, interrupted before the reflector
and resumed, and `reflexion bench … --server URL` with several runs in flight on the server."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, get_args

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context, Strategy
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.driver import ServerGraph, run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink
from reflexion.harness.bench.remote import server_thread_id
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from tests.clikit import reflexion
from tests.integration.test_embedded import TEST_MODEL
from tests.langgraph_server import ROOT, free_port, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

MODELS = {"actor_model": TEST_MODEL, "evaluator_model": TEST_MODEL, "reflector_model": TEST_MODEL}
FINAL_KEYS = {
    "type",
    "thread_id",
    "task_id",
    "question",
    "reference",
    "answer",
    "solved",
    "trials",
    "evaluations",
    "reflections",
    "wall_s",
    "usage",
    "resumed",
    "settings",
}
"""The keys of a local run's final line (bench.run_benchmark) for a HotPotQA question."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev` on a free loopback port with 4 jobs per worker; stopped at the end. It
    runs in a fresh directory (the in-memory server keeps its threads in `.langgraph_api/`
    under its working directory), so every session starts with no threads."""
    with langgraph_dev(tmp_path_factory.mktemp("server"), jobs_per_worker=4) as url:
        yield url


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=server, api_key=None) as sdk:
        yield sdk


SCHEMAS: dict[str, type[Context]] = {
    "reflexion": Context,
    "reflexion_qa": QAContext,
    "reflexion_qa_cot": QAContext,
    "reflexion_react": ReActContext,
    "reflexion_programming": CodeContext,
    "reflexion_alfworld": AlfworldContext,
}
"""Each graph of langgraph.json and the context class its nodes read."""


def served_schemas(client: SyncLangGraphClient) -> dict[str, dict[str, Any]]:
    """Each served graph's context schema, as ``GET /assistants/{id}/schemas`` gives it."""
    assistants = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    return {
        graph_id: client.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
        for graph_id, assistant in assistants.items()
    }


def test_every_graph_is_served_with_its_description_and_described_context(client):
    """Every graph of langgraph.json is served under its id with its description, and each
    one's context schema (what Studio shows) lists its context class's fields, each with its
    description; the model fields are plain strings, so the CLI's model strings work there."""
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert set(graphs) == set(SCHEMAS)
    assistants = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    schemas = served_schemas(client)
    for graph_id, spec in graphs.items():
        assert assistants[graph_id]["description"] == spec["description"], graph_id
        properties = schemas[graph_id]["properties"]
        for field in fields(SCHEMAS[graph_id]):
            assert properties[field.name]["description"] == field.metadata["description"]
            assert properties[field.name]["description"].strip(), (graph_id, field.name)
        # Studio's form opens on the defaults the family's figures were measured with
        defaults = SCHEMAS[graph_id]()
        for name in ("max_trials", "memory_size", "temperature", "max_tokens", "evaluator"):
            assert properties[name]["default"] == getattr(defaults, name), (graph_id, name)
        for name in MODELS:
            assert properties[name]["type"] == "string" and "enum" not in properties[name]


def test_each_graph_lists_only_the_fields_its_nodes_read_with_their_ranges(client):
    """The generic graph shows at most 16 settings and no graph more than 22 (``budget``'s six
    limits are one object); no graph shows
    another family's field or a transport setting; every range and choice is in the schema
    (Studio draws it as a form)."""
    schemas = served_schemas(client)
    counts = {graph_id: len(schemas[graph_id]["properties"]) for graph_id in SCHEMAS}
    print("context fields per graph:", counts)
    assert counts["reflexion"] <= 16 and max(counts.values()) <= 22, counts
    for graph_id, cls in SCHEMAS.items():
        properties = schemas[graph_id]["properties"]
        assert set(properties) == {f.name for f in fields(cls)} | {"preset"}, graph_id
        assert not {"max_retries", "request_timeout", "retry_backoff", "base_url"} & set(properties)
        assert properties["max_trials"]["minimum"] == 1 and properties["max_trials"]["maximum"]
        assert properties["temperature"]["maximum"] == 2
        assert properties["strategy"]["enum"] == list(get_args(Strategy))
        assert properties["preset"]["anyOf"][0]["enum"] == ["default", "paper"]
    code = schemas["reflexion_programming"]["properties"]
    assert code["max_tests"]["maximum"] == 100 and code["test_timeout"]["exclusiveMinimum"] == 0
    assert "max_tests" not in schemas["reflexion_qa"]["properties"]
    assert "internal_tests" not in schemas["reflexion_react"]["properties"]


def test_a_bad_json_context_on_a_server_run_is_one_line(client):
    """A server run's JSON context is built into the graph's class there: a value out of its
    range fails the run with the same one line the CLI and invoke() give."""
    thread = client.threads.create()
    result = client.runs.wait(
        thread["thread_id"],
        "reflexion_programming",
        input={"task": "def f(x):\n    return x\n", "task_id": "t"},
        context={"max_trials": 0},
        raise_error=False,
    )
    error = result["__error__"] if isinstance(result, dict) else None
    assert error is not None, result
    assert error["message"] == "max_trials is 0: use a value in [1, 100]", error


def test_a_client_streaming_custom_sees_the_progress_and_the_chosen_answer(client):
    """Through the SDK, ``stream_mode=["updates", "custom"]``: every trial's start, its
    verdict with the evidence (a rejected answer is marked so), the lesson, and the answer the
    thread returns, in order, from the real server."""
    thread = client.threads.create()
    names: list[str] = []
    scored: list[dict[str, Any]] = []
    chosen: dict[str, Any] = {}
    for part in client.runs.stream(
        thread["thread_id"],
        "reflexion_qa",
        input={
            "task": "Which river flows through Prague?",
            "passages": "Prague lies on the Vltava river.",
            "reference": "Zzyzx Creek",  # never the answer: every trial fails
        },
        context={**MODELS, "max_trials": 2, "max_tokens": 96},
        stream_mode=["updates", "custom"],
    ):
        if part.event == "custom" and isinstance(part.data, dict) and "reflexion" in part.data:
            names.append(part.data["reflexion"])
            if part.data["reflexion"] == "attempt_scored":
                scored.append(part.data["record"])
            if part.data["reflexion"] == "answer_chosen":
                chosen = part.data
    assert names[:2] == ["trial_started", "attempt_scored"], names
    assert names.count("trial_started") == 2 and names[-1] == "answer_chosen", names
    assert [r["success"] for r in scored] == [False, False]
    assert chosen["solved"] is False and chosen["why"] == "best"


def test_a_run_streams_stops_before_the_reflector_and_a_second_run_resumes_it(client, server):
    """A run of reflexion_qa streams its node updates (actor, then evaluator); started with
    interrupt_before=["reflector"] it leaves the thread interrupted after a failed trial 1
    (next == reflector), its state holding that evaluation and no reflection. A second run with
    input None (submitted by run_benchmark on the server, which finds the thread unfinished) goes on
    from there: its reflection arrives while the run is still running, and the thread ends
    with the reflection and trial 2's evaluation."""
    task = BenchTask(
        thread_id="server-test-interrupt",
        input={
            "task": "Which river flows through Prague?",
            "passages": "Prague lies on the Vltava river.",
            "reference": "Zzyzx Creek",  # never the answer: trial 1 fails
        },
        label="",
        meta={"task_id": "prague"},
    )
    ctx = Context(**MODELS, max_trials=2, max_tokens=96)
    thread_id = server_thread_id(task.thread_id)
    client.threads.create(thread_id=thread_id, if_exists="do_nothing", graph_id="reflexion_qa")
    seen: list[str] = []
    for part in client.runs.stream(
        thread_id,
        "reflexion_qa",
        input=task.input,
        context=asdict(ctx),
        stream_mode="updates",
        interrupt_before=["reflector"],
    ):
        if part.event == "updates":
            seen.extend(part.data)
    assert seen[:2] == ["actor", "evaluator"], seen
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["reflector"]
    assert client.threads.get(thread_id)["status"] == "interrupted"
    [first] = state["values"]["evaluations"]
    assert first["trial"] == 1 and first["success"] is False
    assert state["values"].get("reflections", []) == []

    events: list[tuple[str, str]] = []

    def emit(event: str, _task: BenchTask, payload: dict[str, Any]) -> None:
        running = client.runs.list(thread_id, status="running")
        events.append((event, "running" if running else "not running"))

    out = io.StringIO()
    finals, errors = run_benchmark(
        ServerGraph(server, "reflexion_qa"), [task], ctx, Sink(out), settings={}, emit=emit
    )
    assert errors == []
    # trial 1 ran outside the results file (the SDK stream above): it is recovered from the
    # server's checkpoints first; the reflection then arrives while the second run is running
    assert events[:2] == [("trial", "not running"), ("reflection", "running")], events
    assert [e for e, _ in events] == ["trial", "reflection", "trial", "final"]
    state = client.threads.get_state(thread_id)
    assert state["next"] == []
    values = state["values"]
    assert [e["trial"] for e in values["evaluations"]] == [1, 2]
    assert len(values["reflections"]) == 1 and values["reflections"][0].strip()
    assert finals[0]["resumed"] is True and finals[0]["reflections"] == values["reflections"]
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [row["type"] for row in lines] == ["trial", "reflection", "trial", "final"]
    assert lines[0]["recovered"] is True and lines[0]["trial"] == 1
    assert lines[1]["usage"]["reflector"]["calls"] == 1


def test_unreachable_server_and_unknown_graph_are_one_line_errors(server):
    """A URL where no server listens, and a graph the server does not serve, each stop the
    benchmark with one line: how to start a server, or which graphs the server has."""
    task = BenchTask(thread_id="never-run", input={"task": "x"}, label="", meta={})
    args = ([task], Context(), Sink(io.StringIO()))
    with pytest.raises(ReflexionError) as unreachable:
        unreachable_server = ServerGraph(f"http://127.0.0.1:{free_port()}", "reflexion_qa")
        run_benchmark(unreachable_server, *args, settings={})
    assert "cannot reach the LangGraph server" in str(unreachable.value)
    assert "langgraph dev" in str(unreachable.value) and "\n" not in str(unreachable.value)
    with pytest.raises(ReflexionError) as unknown:
        run_benchmark(ServerGraph(server, "no_such_graph"), *args, settings={})
    message = str(unknown.value)
    assert "no_such_graph" in message and "reflexion_qa" in message and "\n" not in message


def test_bench_on_a_server_does_not_open_the_db(tmp_path):
    """With --server the threads live on the server: a --db that could not be opened (a
    PostgreSQL nobody listens on) is not touched, and the one error line is about the server."""
    done = subprocess.run(
        [
            sys.executable, "-m", "reflexion.harness", "bench", "hotpotqa", "--limit", "1",
            "--server", f"http://127.0.0.1:{free_port()}",
            "--db", f"postgresql://nobody@127.0.0.1:{free_port()}/none",
            "-o", str(tmp_path / "r.jsonl"),
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "cannot reach the LangGraph server" in done.stderr
    assert "PostgreSQL" not in done.stderr


def watch_runs(client: SyncLangGraphClient, out: Path, stop: threading.Event) -> dict[str, Any]:
    """Poll the server while a bench runs: the most runs running at once, and whether a
    trial line was in the results file while its thread's run was still running."""
    seen: dict[str, Any] = {"most_running": 0, "trial_while_running": False}
    while not stop.is_set():
        running = []
        for thread in client.threads.search(status="busy", limit=50):
            if client.runs.list(thread["thread_id"], status="running"):
                running.append(thread["metadata"].get("reflexion_thread_id"))
        seen["most_running"] = max(seen["most_running"], len(running))
        if running and out.is_file():
            written = [json.loads(line) for line in out.read_text().splitlines() if line]
            trials = {row["thread_id"] for row in written if row["type"] == "trial"}
            finals = {row["thread_id"] for row in written if row["type"] == "final"}
            if any(t in trials and t not in finals for t in running):
                seen["trial_while_running"] = True
        time.sleep(0.3)
    return seen


def test_cli_bench_on_the_server_runs_tasks_in_parallel_and_resumes(client, server, tmp_path):
    """`reflexion bench hotpotqa --server URL -n 3 -c 3 --trials 2` has the server run
    several questions at once, writes trial lines while runs are still going, the same
    results lines as a local run (trial, reflection, final), the table and the PNG; a rerun
    runs nothing, and a thread that finished without a final line gets one from its server
    state without running again."""
    out, png = tmp_path / "r.jsonl", tmp_path / "curve.png"
    cmd = (
        *("bench", "hotpotqa"),
        *("--server", server, "-n", "3", "-c", "3", "--trials", "2", "-m", TEST_MODEL),
        *("--output", str(out), "--plot", str(png), "--db", str(tmp_path / "unused.sqlite")),
    )
    stop, seen = threading.Event(), {}
    watcher = threading.Thread(target=lambda: seen.update(watch_runs(client, out, stop)))
    watcher.start()
    try:
        first = reflexion(*cmd, timeout=420)
    finally:
        stop.set()
        watcher.join()
    assert seen["most_running"] > 1, seen
    assert seen["trial_while_running"], seen
    assert "trial 1:" in first.stdout and "cumulative accuracy" in first.stdout
    assert "outcomes and model usage" in first.stdout
    assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    finals = [row for row in lines if row["type"] == "final"]
    assert len(finals) == 3 and not [row for row in lines if row["type"] == "error"]
    for final in finals:
        assert set(final) == FINAL_KEYS
        own = [row["type"] for row in lines if row["thread_id"] == final["thread_id"]]
        assert own[-1] == "final" and own.count("trial") == len(final["evaluations"])
        assert own.count("reflection") == len(final["reflections"])
        # one actor call a trial, more where a retry repeating a rejected answer was redrawn
        assert final["usage"]["actor"]["calls"] >= len(final["evaluations"])
        assert final["usage"]["actor"]["prompt_tokens"] > 0
    # Same command again: every question is skipped, nothing appended.
    again = reflexion(*cmd, timeout=120)
    assert "trial 1:" not in again.stdout
    assert [json.loads(line) for line in out.read_text().splitlines()] == lines
    # A finished thread whose final line was lost: the final line comes from the server state.
    lost = finals[0]["thread_id"]
    out.write_text("".join(json.dumps(row) + "\n" for row in lines if row is not finals[0]))
    third = reflexion(*cmd, timeout=120)
    assert "trial 1:" not in third.stdout
    redone = [json.loads(line) for line in out.read_text().splitlines()][len(lines) - 1 :]
    assert [(row["type"], row["thread_id"]) for row in redone] == [("final", lost)]
    assert redone[0]["resumed"] is True
    for key in ("answer", "solved", "evaluations", "reflections"):
        assert redone[0][key] == finals[0][key], key
    for node, counters in finals[0]["usage"].items():  # tokens from the lines already written
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            assert redone[0]["usage"][node][key] == counters[key], (node, key)
