"""`reflexion run --thread-id`: a thread resumes with the settings it started with, an option
that would change them is refused, a finished thread is shown, and a provider failure stops
the run with the command that resumes it. Against a real OpenAI-compatible server on
loopback."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from tests.unit.test_faults import server as server  # a fixture
from tests.unit.test_persistence import cli


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_run_resumes_a_thread_with_the_settings_it_started_with(
    server, tmp_path, monkeypatch, capsys
):
    """A thread started with a hosted model and 3 trials, cut short by a provider error,
    resumes on that model with 3 trials when `run --thread-id` names nothing else; an option
    that would change what it computes is refused with the reason."""
    db = str(tmp_path / "t.sqlite")
    # trial 1 answers wrong, then the reflector's call gets a 400 (not retried): the run stops
    server.script(["ok:Thought: hmm.\nAction: Finish[wrong]", "400"])
    code, out, err = cli(
        monkeypatch, capsys, "run", "What is item 1?", "--reference", "x", "--thread-id", "t",
        "--db", db, "--model", "openai:any-name", "--base-url", server.base_url, "--trials", "3",
    )  # fmt: skip
    assert code == 2 and len(server.requests) == 2
    assert "thread 't' stopped: 400 Bad Request" in err
    assert "resume it with reflexion run --thread-id t" in err
    code, out, err = cli(monkeypatch, capsys, "run", "--thread-id", "t", "--db", db, "-t", "5")
    assert code == 2 and "started with another --trials" in err
    code, out, err = cli(monkeypatch, capsys, "run", "--thread-id", "t", "--db", db)
    assert code == 0, err
    assert "resuming thread" in out and "solved after 2 trial(s)" in out
    assert len(server.requests) == 4  # the reflection and trial 2, on the recorded model


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_resuming_accepts_the_options_a_thread_started_with_and_shows_a_finished_one(
    server, tmp_path, monkeypatch, capsys
):
    db = str(tmp_path / "t.sqlite")
    server.script(["ok:Thought: hmm.\nAction: Finish[wrong]", "400"])
    start = ["run", "What is item 1?", "--reference", "x", "--thread-id", "t", "--db", db]
    hosted = ["--model", "openai:any-name", "--base-url", server.base_url]
    code, _, _ = cli(monkeypatch, capsys, *start, *hosted, "-t", "6", "--memory", "5")
    assert code == 2
    # the same options again: no clash, and --memory 5 fits the thread's 6 trials
    code, out, err = cli(
        monkeypatch, capsys, "run", "--thread-id", "t", "--db", db, "-t", "6", "--memory", "5"
    )
    assert code == 0, err
    assert "solved after 2 trial(s)" in out
    # a finished thread is shown, whatever options come with it
    code, out, err = cli(monkeypatch, capsys, "run", "--thread-id", "t", "--db", db, "-t", "2")
    assert code == 0, err
    assert "solved" in out


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_run_takes_the_retry_and_a_resume_keeps_it(server, tmp_path, monkeypatch, capsys):
    """`run --retry informed` draws trial 2 with the reflection in its prompt (the
    paper's retry; the default first draws it as trial 1 was), and a resume that asks for
    the other retry is refused."""
    db = str(tmp_path / "t.sqlite")
    lesson = "I should name the item itself."
    server.script(["ok:Thought: hmm.\nAction: Finish[wrong]", f"ok:{lesson}", "400"])
    code, _, err = cli(
        monkeypatch, capsys, "run", "What is item 1?", "--reference", "x", "--thread-id", "t",
        "--db", db, "--model", "openai:any-name", "--base-url", server.base_url,
        "--retry", "informed",
    )  # fmt: skip
    assert code == 2 and len(server.requests) == 3, err
    retry = json.dumps(server.requests[2]["messages"])
    assert lesson in retry
    code, _, err = cli(
        monkeypatch, capsys, "run", "--thread-id", "t", "--db", db, "--retry", "informed_once"
    )
    assert code == 2 and "started with another --retry" in err


def _record_lessons(db: str, enabled: bool) -> None:
    """Give thread 't' the ``lessons`` settings an older version recorded with every thread
    (the long-term lesson store, since removed)."""
    from reflexion.harness.checkpoints import annotate_head
    from reflexion.harness.persistence import open_checkpointer

    with open_checkpointer(db) as saver:
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        head = saver.get_tuple(config)
        assert head is not None
        settings = json.loads(head.metadata["settings"])  # type: ignore[typeddict-item]
        settings["lessons"] = {"enabled": enabled, "recall_k": 3, "filter": "validated"}
        annotate_head(saver, "t", {"settings": json.dumps(settings)})


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_thread_recorded_with_the_removed_lessons_resumes_only_where_they_were_off(
    server, tmp_path, monkeypatch, capsys
):
    """A thread an older version started records ``lessons``: off (every thread's default),
    it resumes with no warning; on, the resume is refused with a one-line reason, since the
    store it recalled from is gone."""
    db = str(tmp_path / "t.sqlite")
    server.script(["ok:Thought: hmm.\nAction: Finish[wrong]", "400"])
    code, _, _ = cli(
        monkeypatch, capsys, "run", "What is item 1?", "--reference", "x", "--thread-id", "t",
        "--db", db, "--model", "openai:any-name", "--base-url", server.base_url,
    )  # fmt: skip
    assert code == 2
    _record_lessons(db, enabled=True)
    code, _, err = cli(monkeypatch, capsys, "run", "--thread-id", "t", "--db", db)
    assert code == 2 and "thread 't' was started with --lessons, which was removed" in err
    _record_lessons(db, enabled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # none about the recorded key
        code, out, err = cli(monkeypatch, capsys, "run", "--thread-id", "t", "--db", db)
    assert code == 0, err
    assert "resuming thread" in out


@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("guard", [None, "0"])
def test_run_takes_the_repeat_guard(server, tmp_path, monkeypatch, capsys, guard):
    """`run` draws again, hotter, a retry that repeats the rejected answer even with the memory
    in its prompt (CoT's first retry is drawn without it, then with it), and not with
    `--repeat-guard 0`; a resume of the unfinished thread that asks for another guard is
    refused."""
    db = str(tmp_path / "t.sqlite")
    wrong = "ok:Thought: hmm.\nAction: Finish[wrong]"
    server.script([wrong, "ok:I should name the item itself.", wrong, wrong, "400"])
    guard_option = [] if guard is None else ["--repeat-guard", guard]
    code, _, err = cli(
        monkeypatch, capsys, "run", "What is item 1?", "--reference", "x", "--thread-id", "t",
        "--db", db, "--model", "openai:any-name", "--base-url", server.base_url, *guard_option,
    )  # fmt: skip
    if guard is None:  # the repeat is drawn again by the actor, hotter (and the server fails)
        assert code == 2 and len(server.requests) == 5, err
        with_memory, fifth = server.requests[3], server.requests[4]
        assert fifth["messages"] == with_memory["messages"]
        assert fifth["temperature"] > with_memory.get("temperature", 0)
        code, _, err = cli(
            monkeypatch, capsys, "run", "--thread-id", "t", "--db", db, "--repeat-guard", "1"
        )
        assert code == 2 and "started with another --repeat-guard" in err
    else:  # the repeat stands: trial 2, the last, is judged and the run ends
        assert code == 0 and len(server.requests) == 4, err
