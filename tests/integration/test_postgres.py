"""Threads on a real PostgreSQL server: threads outlive the process that started them, `run
--thread-id` resumes and `history` lists every trial with --db postgresql://…, a paired run's
note and fork work there, a concurrent benchmark shares one PostgresSaver, and a benchmark
killed with SIGKILL loses and repeats nothing.

Needs a server: ``eval "$(bash .ci/postgres.sh start)"`` exports ``REFLEXION_TEST_POSTGRES``.
Without it these tests skip, except under ``CI=1`` or ``REFLEXION_REQUIRE_POSTGRES=1`` (as
``.ci/run`` sets), where they fail. Each test gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflexion.core.context import Context
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.datasets import load_hotpotqa
from reflexion.harness.bench.driver import stream_thread
from reflexion.harness.checkpoints import annotate_head, fork_thread, thread_history
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.harness.persistence import open_checkpointer
from tests.conftest import answer
from tests.crashkit import (
    PLAN,
    bench_command,
    check_consistent,
    environment,
    kill_at,
    kill_then_rerun,
    rows,
    run_to_end,
)

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1", "::1"])]

HOW = 'start one with: eval "$(bash .ci/postgres.sh start)"'


def _required() -> bool:
    return any(os.environ.get(v, "") not in ("", "0") for v in ("CI", "REFLEXION_REQUIRE_POSTGRES"))


@pytest.fixture
def dsn() -> Iterator[str]:
    """A fresh database on the test server, dropped after the test."""
    base = os.environ.get("REFLEXION_TEST_POSTGRES")
    if not base:
        if _required():
            pytest.fail(f"REFLEXION_TEST_POSTGRES is not set under CI: {HOW}")
        pytest.skip(f"no PostgreSQL server (REFLEXION_TEST_POSTGRES unset): {HOW}")
    name = f"reflexion_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    head, _, _ = base.rpartition("/")
    try:
        yield f"{head}/{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_thread_outlives_its_connection(dsn):
    """A QA thread stopped before its reflector on one PostgresSaver connection is found by a
    second connection, resumed there to its end, and its history lists all three trials with
    the reflections between them."""
    ctx = Context(max_trials=3, memory_size=3)
    start = {
        "task": "Which river?",
        "passages": "Prague lies on the Vltava.",
        "reference": "Vltava",
    }
    with open_checkpointer(dsn) as saver:
        graph = qa_builder(actor_model=ScriptedChatModel(replies=[answer("x")])).compile(
            checkpointer=saver, interrupt_before=["reflector"]
        )
        state = stream_thread(graph, "pg-1", start, ctx, metadata={"agent": "cot-gt"})
        assert len(state["evaluations"]) == 1
    with open_checkpointer(dsn) as saver:
        graph = qa_builder(
            actor_model=ScriptedChatModel(replies=[answer("y"), answer("Vltava")]),
            reflector_model=ScriptedChatModel(replies=["Reflection: one.", "Reflection: two."]),
        ).compile(checkpointer=saver)
        state = stream_thread(graph, "pg-1", None, ctx)
        assert state["solved"] and state["trial"] == 3
        entries = thread_history(graph, "pg-1")
    assert [(e.trial, e.answer, e.reflection) for e in entries] == [
        (1, "x", "one."),
        (2, "y", "two."),
        (3, "Vltava", None),
    ]


def test_a_paired_run_s_note_and_fork_on_postgres(dsn):
    """What a paired run does to a shared first trial on PostgreSQL: the note of what it cost
    lands on its last checkpoint in place (no new step, the history unchanged), and a fork of
    it resumes to the end while the source stays stopped before its reflector."""
    ctx = Context(max_trials=3, memory_size=3)
    start = {
        "task": "Which river?",
        "passages": "Prague lies on the Vltava.",
        "reference": "Vltava",
    }
    with open_checkpointer(dsn) as saver:
        graph = qa_builder(
            actor_model=ScriptedChatModel(replies=[answer("x"), answer("Vltava")]),
            reflector_model=ScriptedChatModel(replies=["Reflection: one."]),
        ).compile(checkpointer=saver)
        stream_thread(graph, "first", start, ctx, interrupt_before=["reflector"])
        config: Any = {"configurable": {"thread_id": "first"}}
        steps = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]
        annotate_head(saver, "first", {"shared_usage": {"actor": {"calls": 1}}})
        assert graph.get_state(config).metadata["shared_usage"] == {"actor": {"calls": 1}}
        assert [
            s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)
        ] == steps
        fork_thread(saver, "first", "fork")
        state = stream_thread(graph, "fork", None, ctx)
        assert state["solved"] and state["trial"] == 2
        source = graph.get_state(config)
        assert source.next == ("reflector",) and source.values["trial"] == 1


def test_cli_run_killed_then_resumed_and_listed(dsn, loopback, tmp_path):
    """`reflexion run` on --db postgresql://… killed with SIGKILL inside its third model call,
    then `run --thread-id` in a new process finishes the thread without redoing trial 1 (its
    reflection is not asked for again), and `history --json` lists the three trials and two
    reflections."""
    question = load_hotpotqa(None, limit=3)[2]  # the plan solves it at trial 3
    base = [
        "--trials", "3", "--model", "openai:fake", "--base-url", loopback.base_url, "--db", dsn,
        "--thread-id", "cli-1", "--retry", "informed",  # every retry reads the lessons
    ]  # fmt: skip
    start = [
        sys.executable, "-m", "reflexion.harness", "run", question.question,
        "--passages", "See the passages.", "--reference", question.answer, *base,
    ]  # fmt: skip
    kill_at(loopback, start, tmp_path, 3)  # trial 1 and its reflection done, trial 2 in flight
    loopback.reset()
    run_to_end([start[0], "-m", "reflexion.harness", "run", *base], tmp_path)
    # trial 1 is not redone: its reflection is not asked for again
    assert ("reflector", question.question, 1) not in loopback.calls
    assert ("reflector", question.question, 2) in loopback.calls
    done = subprocess.run(
        [start[0], "-m", "reflexion.harness", "history", "cli-1", "--db", dsn, "--json"],
        cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["trial"], r["success"]) for r in listed] == [(1, False), (2, False), (3, True)]
    assert [r["reflection"] is not None for r in listed] == [True, True, False]
    assert listed[0]["reflection"].startswith("lesson 1:")


def test_concurrent_benchmark_on_postgres(dsn, loopback, reference, tmp_path):
    """`bench hotpotqa -c 4` on one PostgresSaver: every question finishes with the same
    finals as the sequential SQLite run, each trial is written once, and a rerun skips all."""
    results = tmp_path / "r.jsonl"
    command = bench_command(loopback, dsn, results)
    command[command.index("-c") + 1] = "4"
    loopback.reset()
    run_to_end(command, tmp_path)
    check_consistent(rows(results), reference, [], list(loopback.calls))
    assert Counter(c[0] for c in loopback.calls) == Counter(c[0] for c in reference["calls"])
    loopback.reset()
    run_to_end(command, tmp_path)
    assert loopback.calls == []


def lock_postgres(dsn: str) -> Any:
    """Block the checkpointer's writes: a transaction holding its tables in EXCLUSIVE mode
    (reads still go through)."""
    conn = psycopg.connect(dsn)
    conn.execute("LOCK TABLE checkpoints, checkpoint_writes, checkpoint_blobs IN EXCLUSIVE MODE")
    return conn


@pytest.mark.parametrize("request_no", [8, 12])
def test_sigkill_on_postgres_loses_nothing_and_repeats_nothing(
    dsn, loopback, reference, tmp_path: Path, request_no
):
    """The crash test on PostgreSQL: the benchmark is killed just after a model call returns
    while the checkpoint tables are locked, then rerun: every trial and reflection appears
    once, the finals equal the uninterrupted run's, and no recorded trial is asked again."""
    results = tmp_path / "r.jsonl"
    command = bench_command(loopback, dsn, results)
    kill_then_rerun(loopback, command, tmp_path, request_no, reference, lambda: lock_postgres(dsn))
    assert len(PLAN) == sum(r["type"] == "final" for r in rows(results))
