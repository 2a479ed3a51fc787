"""Crash safety: ``reflexion bench hotpotqa`` killed with SIGKILL mid-run, then rerun with the
same command, loses no finished trial and runs none twice.

The benchmark runs as a real process against a loopback OpenAI-compatible server
(:mod:`tests.crashkit`) whose answers depend only on the request. Kill points: inside a model
call, and just after a model call returns while the test holds a write lock on the SQLite
checkpoint file, so the step's checkpoint cannot be saved: the window in which a results line
could get ahead of its checkpoint.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.crashkit import (
    PLAN,
    bench_command,
    check_consistent,
    environment,
    kill_then_rerun,
    rows,
    run_to_end,
    wait_for,
)

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


def test_reference_run_follows_the_plan(reference):
    """The loopback model drives the benchmark as planned: question i solved at trial PLAN[i]
    (or never), every trial recorded once, a reflection after each failed non-final trial."""
    finals = [r for r in reference["rows"] if r["type"] == "final"]
    assert [len(f["evaluations"]) for f in finals] == [t or 3 for t in PLAN]
    assert [f["solved"] for f in finals] == [bool(t) for t in PLAN]
    assert sum(r["type"] == "reflection" for r in reference["rows"]) == sum(
        (t or 3) - 1 for t in PLAN
    )
    assert len(reference["calls"]) == sum(2 * (t or 3) - 1 for t in PLAN)


def lock_sqlite(path: Path) -> sqlite3.Connection:
    """Take the SQLite write lock (the checkpointer's next write waits on it)."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
    conn.execute("BEGIN IMMEDIATE")
    return conn


# Requests in order (one question at a time): Q1 a1 · Q2 a1 r1 a2 · Q3 a1 r1 a2 r2 a3 ·
# Q4 a1 r1 a2 r2 a3.
# The first kill point is the fast unit check; the others run with the integration tests.
KILL_POINTS = [
    pytest.param(12, True, id="after-an-actor-call-checkpoint-locked"),
    pytest.param(3, False, id="inside-a-reflector-call", marks=pytest.mark.integration),
    pytest.param(
        4,
        True,
        id="after-the-solving-actor-call-checkpoint-locked",
        marks=pytest.mark.integration,
    ),
    pytest.param(
        8, True, id="after-a-reflector-call-checkpoint-locked", marks=pytest.mark.integration
    ),
]


@pytest.mark.parametrize(("request_no", "lock"), KILL_POINTS)
def test_sigkill_then_rerun_loses_nothing_and_repeats_nothing(
    loopback, reference, tmp_path, request_no, lock
):
    """SIGKILL at the given model request (with the checkpoint database locked, the step
    that request belongs to cannot be saved before the kill), then the same command again:
    every (thread, trial) appears exactly once, every question has one final line equal to the
    uninterrupted run's, each reflection is written once, and no trial already in the results
    file is asked of the model again."""
    db = tmp_path / "t.sqlite"
    results = tmp_path / "r.jsonl"
    command = bench_command(loopback, str(db), results)
    locked = (lambda: lock_sqlite(db)) if lock else None
    kill_then_rerun(loopback, command, tmp_path, request_no, reference, locked)


def test_ctrl_c_says_how_to_resume_and_the_rerun_finishes(loopback, reference, tmp_path):
    """Ctrl-C (SIGINT) in the middle of a model call stops the benchmark with exit code 130
    and one line saying that rerunning the same command resumes it; the rerun then finishes
    with the uninterrupted run's finals, every trial once."""
    db = tmp_path / "t.sqlite"
    results = tmp_path / "r.jsonl"
    command = bench_command(loopback, str(db), results)
    loopback.reset(hold_at=5)
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=environment(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        # a job started in the background by a non-interactive shell (as CI may be) inherits
        # SIGINT ignored; give the benchmark the default a terminal's Ctrl-C meets
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        assert wait_for(lambda: loopback.arrived.is_set() or proc.poll() is not None, 60)
        os.kill(proc.pid, signal.SIGINT)
        loopback.release()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        loopback.release()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        "interrupted: rerun the same command to resume where it stopped"
    )
    recorded = rows(results)
    loopback.reset()
    run_to_end(command, tmp_path)
    check_consistent(rows(results), reference, recorded, list(loopback.calls))
