"""Crash safety on a LangGraph server: ``reflexion bench hotpotqa --server URL`` killed with
SIGKILL mid-run, then rerun with the same command, loses no finished trial and runs none twice.

A real ``langgraph dev`` (two jobs at a time) runs the questions; its models are the loopback
OpenAI-compatible server of :mod:`tests.crashkit`, whose answers depend only on the request.
The client is killed while a model request of one of its runs is held on that server, or just
after it wrote a results line; the server then cancels the client's runs
(``on_disconnect="cancel"``) and the rerun resumes those threads from their saved states. The
reference is the same benchmark run locally (SQLite), uninterrupted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from reflexion.harness.bench.remote import server_thread_id
from tests.crashkit import (
    LoopbackModel,
    bench_command,
    check_consistent,
    kill_at,
    loopback_model,
    rows,
    run_to_end,
)
from tests.langgraph_server import langgraph_dev

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

CONCURRENCY = 2


@pytest.fixture(scope="module")
def model() -> Iterator[LoopbackModel]:
    """The loopback model; each answer takes 50 ms, so the other run is mid-call at a kill."""
    with loopback_model(delay=0.05) as srv:
        yield srv


@pytest.fixture
def langgraph(tmp_path_factory: pytest.TempPathFactory, model: LoopbackModel) -> Iterator[str]:
    """A fresh ``langgraph dev`` per test (the threads of a test would otherwise be found
    finished by the next one: their ids depend only on the settings), reaching the loopback
    model as its environment says."""
    workdir = tmp_path_factory.mktemp("server")
    env = {"OPENAI_API_KEY": "dummy", "REFLEXION_BASE_URL": model.base_url}
    with langgraph_dev(workdir, jobs_per_worker=CONCURRENCY, env=env) as url:
        yield url


@pytest.fixture(scope="module")
def reference(model: LoopbackModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same benchmark run once locally on SQLite, uninterrupted."""
    tmp = tmp_path_factory.mktemp("reference")
    results = tmp / "r.jsonl"
    model.reset()
    command = bench_command(
        model, str(tmp / "t.sqlite"), results, concurrency=CONCURRENCY, paired=False
    )
    run_to_end(command, tmp)
    return {"rows": rows(results), "calls": list(model.calls)}


def server_bench(model: LoopbackModel, results: Path, langgraph: str) -> list[str]:
    """The benchmark command on the server, writing ``results`` (its ``--db`` is not used)."""
    return bench_command(
        model,
        str(results.with_name("unused.sqlite")),
        results,
        concurrency=CONCURRENCY,
        langgraph_url=langgraph,
        paired=False,
    )


# 14 model requests in all (questions solved at trials 1, 2, 3, never; two questions at once).
KILL_POINTS = [
    pytest.param(4, False, id="inside-a-model-call"),
    pytest.param(9, True, id="just-after-a-results-line"),
]


@pytest.mark.parametrize(("request_no", "after_line"), KILL_POINTS)
def test_sigkill_then_rerun_on_the_server_loses_nothing_and_repeats_nothing(
    model: LoopbackModel,
    reference: dict[str, Any],
    langgraph: str,
    tmp_path: Path,
    request_no: int,
    after_line: bool,
) -> None:
    """SIGKILL the client at the given model request (held on the model server while the run
    waits for it; or released, and the kill comes as soon as the next results line is written),
    then the same command again: the server cancelled the killed client's runs (status
    interrupted) and the rerun resumed them from their saved states (final lines say resumed;
    one cancelled before it saved anything starts afresh), each thread has one successful
    run (or, cancelled after its last checkpoint, is read back as finished), every
    (thread, trial) appears exactly once, each reflection once, every question has one final
    line equal to the local uninterrupted run's, and no trial already in the results file was
    asked of the model again."""
    results = tmp_path / "r.jsonl"
    command = server_bench(model, results, langgraph)
    recorded = kill_at(
        model, command, tmp_path, request_no, (lambda: None) if after_line else None, settle=3.0
    )
    assert len(recorded) < len(reference["rows"]), "killed after the run had finished"
    finished = {r["thread_id"] for r in recorded if r["type"] == "final"}
    model.reset()
    run_to_end(command, tmp_path)
    lines = rows(results)
    check_consistent(lines, reference, recorded, list(model.calls))

    finals = {r["thread_id"]: r for r in lines if r["type"] == "final"}
    cancelled = []
    with get_sync_client(url=langgraph, api_key=None) as client:
        for thread_id, final in finals.items():
            runs = client.runs.list(server_thread_id(thread_id), limit=20)
            statuses = sorted(str(run["status"]) for run in runs)
            if thread_id in finished:
                assert statuses == ["success"], (thread_id, statuses)
                continue
            if statuses == ["interrupted"]:
                # Cancelled after its last checkpoint was saved: the thread had ended, and
                # the rerun read its final line back without a run.
                state = client.threads.get_state(server_thread_id(thread_id))
                assert final["resumed"] and not state["next"] and not state["tasks"]
            else:
                assert statuses.count("success") == 1, (thread_id, statuses)
            if "interrupted" in statuses:
                cancelled.append(thread_id)
                if not final["resumed"]:  # cancelled before it saved anything: run afresh
                    assert not [r for r in recorded if r["thread_id"] == thread_id]
    assert cancelled, "no run was going when the client was killed"
    assert any(finals[t]["resumed"] for t in cancelled), "no cancelled thread was resumed"


def test_lines_saved_on_the_server_but_not_written_are_recovered_once(
    model: LoopbackModel,
    reference: dict[str, Any],
    langgraph: str,
    tmp_path: Path,
) -> None:
    """A client killed after the server saved a step but before it wrote the step's line
    (made here by killing inside a model call, then deleting each unfinished thread's last
    line): the rerun writes each missing trial or reflection line once, marked recovered and
    equal to the deleted one, from the server thread's saved states, asks the model for none
    of them, and ends with the uninterrupted run's final lines."""
    results = tmp_path / "r.jsonl"
    command = server_bench(model, results, langgraph)
    recorded = kill_at(model, command, tmp_path, 9)
    finished = {r["thread_id"] for r in recorded if r["type"] == "final"}
    dropped = []
    for thread_id in {r["thread_id"] for r in recorded} - finished:
        own = [r for r in recorded if r["thread_id"] == thread_id]
        if own and own[-1]["type"] in ("trial", "reflection"):
            dropped.append(own[-1])
    assert dropped, "no unfinished thread had a line at the kill"
    kept = [r for r in recorded if not any(r is d for d in dropped)]
    results.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    model.reset()
    run_to_end(command, tmp_path)
    lines = rows(results)
    check_consistent(lines, reference, recorded, list(model.calls))
    for line in dropped:
        again = [r for r in lines[len(kept) :] if r["type"] == line["type"]]
        again = [r for r in again if r["thread_id"] == line["thread_id"]]
        again = [r for r in again if r.get("trial") == line.get("trial")]
        assert len(again) == 1 and again[0].get("recovered") is True, (line, again)
        strip = ("usage", "recovered")
        assert {k: v for k, v in again[0].items() if k not in strip} == {
            k: v for k, v in line.items() if k not in strip
        }
