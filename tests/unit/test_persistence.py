"""Checkpointers chosen by a connection string, their one-line errors, thread history
from checkpoints (every agent), the ``history`` command, and results lines recovered from
checkpoints after a crash."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import run_benchmark, stream_thread
from reflexion.harness.bench.ledger import BenchTask, Sink, recorded_lines
from reflexion.harness.checkpoints import cut_short, thread_history, unfinished
from reflexion.harness.cli.app import main
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.harness.persistence import Target, open_checkpointer, parse_target
from tests.conftest import answer
from tests.unit.test_faults import server as server  # a fixture
from tests.unit.test_programming import PROMPT, RIGHT, TESTS_REPLY, WRONG

ERROR = "__error__"
"""The channel LangGraph saves a failed (or cancelled) task's error under (not public)."""


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


# ---- connection strings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("runs/t.sqlite", Target("sqlite", path=Path("runs/t.sqlite"))),
        ("sqlite:///runs/t.sqlite", Target("sqlite", path=Path("runs/t.sqlite"))),
        ("sqlite:////tmp/t.sqlite", Target("sqlite", path=Path("/tmp/t.sqlite"))),
        (":memory:", Target("memory")),
        ("postgresql://u@h:5433/db", Target("postgres", dsn="postgresql://u@h:5433/db")),
        (
            "postgres://u:pw@h/db?sslmode=off",
            Target("postgres", dsn="postgres://u:pw@h/db?sslmode=off"),
        ),
    ],
)
def test_parse_target_recognises_each_form(text, expected):
    """Plain paths and sqlite:/// URLs are SQLite files (four slashes: absolute), postgres and
    postgresql URLs are kept whole for libpq, :memory: is in-process."""
    assert parse_target(text) == expected


def test_messages_never_show_a_password():
    """A target names itself without the password of its connection string."""
    assert str(parse_target("postgresql://alice:s3cret@db:5432/x")) == (
        "postgresql://alice:***@db:5432/x"
    )


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("mysql://u@h/db", ["'mysql://' is not supported", "postgresql://", ":memory:"]),
        ("sqlite://", ["has no file", "sqlite:///"]),
        ("  ", ["--db is empty"]),
    ],
)
def test_bad_targets_are_one_line_errors(text, needles):
    """Unknown schemes, an empty sqlite URL and an empty value say what to write instead."""
    with pytest.raises(ReflexionError) as exc:
        parse_target(text)
    assert "\n" not in str(exc.value)
    for needle in needles:
        assert needle in str(exc.value)


def test_sqlite_checkpointer_makes_its_file(tmp_path):
    """A path, or a ``sqlite:///`` URL, gives a SqliteSaver on that file (created with its
    directory, tables set up); a second opener reads what the first wrote."""
    db = tmp_path / "sub" / "t.sqlite"
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    with open_checkpointer(str(db)) as saver:
        assert isinstance(saver, SqliteSaver)
        saver.put(config, empty_checkpoint(), {}, {})
    with open_checkpointer(f"sqlite:///{db}") as saver:
        assert saver.get_tuple(config) is not None
    tables = {r[0] for r in sqlite3.connect(db).execute("select name from sqlite_master")}
    assert {"checkpoints", "writes"} <= tables


def test_memory_target_is_in_process():
    """:memory: gives an InMemorySaver."""
    with open_checkpointer(":memory:") as saver:
        assert isinstance(saver, InMemorySaver)


def test_a_file_that_is_not_sqlite_is_refused_and_kept(tmp_path):
    """The opener does not touch a file that is not a database: one line naming it and --db."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes\n" * 500)
    with (
        pytest.raises(ReflexionError, match=r"cannot open the thread database .*--db PATH"),
        open_checkpointer(str(notes)),
    ):
        pass
    assert notes.read_bytes() == b"my notes\n" * 500


def test_unreachable_postgres_is_one_line_naming_the_server():
    """A server that refuses the connection: the first line of libpq's error and 'check --db'."""
    pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")
    pytest.importorskip("langgraph.checkpoint.postgres", reason="needs the postgres extra")
    with (
        pytest.raises(ReflexionError) as exc,
        open_checkpointer("postgresql://nobody@127.0.0.1:1/none?connect_timeout=3"),
    ):
        pass
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith("cannot connect to PostgreSQL at postgresql://nobody@127.0.0.1:1")
    assert "refused" in message.lower() and message.endswith("check --db")


@pytest.mark.parametrize("module", ["psycopg", "langgraph.checkpoint.postgres"])
def test_postgres_without_the_extra_says_how_to_install_it(monkeypatch, module):
    """Without the postgres extra a postgresql:// target names the pip command."""
    monkeypatch.setitem(sys.modules, module, None)
    with (
        pytest.raises(ReflexionError, match=r"pip install 'reflexion-langgraph\[postgres\]'"),
        open_checkpointer("postgresql://u@127.0.0.1:1/db"),
    ):
        pass


def test_cli_reports_a_bad_scheme_before_any_work(monkeypatch, capsys, tmp_path):
    """`run` with --db mysql://… exits 2 with the one-line message; nothing is created."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(monkeypatch, capsys, "run", "Q?", "--reference", "a", "--db", "mysql://x/y")
    assert code == 2 and err.count("\n") == 1 and "'mysql://' is not supported" in err
    assert list(tmp_path.iterdir()) == []


# ---- thread history ---------------------------------------------------------------------------


def qa_thread(
    saver: Any, thread: str, ctx: Context, reflection: str = "Reflection: I misread."
) -> Any:
    """Run a QA thread (wrong, wrong, right) with scripted models; return the graph."""
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("x"), answer("y"), answer("Vltava")]),
        reflector_model=ScriptedChatModel(replies=[reflection]),
    ).compile(checkpointer=saver)
    stream_thread(
        graph,
        thread,
        {"task": "Which river?", "passages": "Prague lies on the Vltava.", "reference": "Vltava"},
        ctx,
        metadata={"agent": "cot-gt"},
    )
    return graph


def test_history_lists_every_trial_with_the_reflection_after_it():
    """Three trials: answers, verdicts and feedback in order, the reflection written after
    each failed trial (even when Ω = 1 and the lesson repeats word for word, so the window
    does not change), none after the solving trial; checkpoint ids distinct, times set."""
    graph = qa_thread(InMemorySaver(), "h1", Context(max_trials=3, memory_size=1))
    entries = thread_history(graph, "h1")
    assert [(e.trial, e.answer, e.success) for e in entries] == [
        (1, "x", False),
        (2, "y", False),
        (3, "Vltava", True),
    ]
    assert [e.reflection for e in entries] == ["I misread.", "I misread.", None]
    assert all("CORRECT" in e.feedback for e in entries)
    assert len({e.checkpoint_id for e in entries}) == 3
    assert all(e.created_at and e.created_at[:2] == "20" for e in entries)


def test_history_follows_the_current_branch_of_a_forked_thread():
    """Replaying a thread from trial 1's checkpoint (time travel) forks it: the reflector writes
    another lesson and trial 2 now succeeds. The history is the lineage of the latest
    checkpoint: trial 1 with the new lesson, then the new trial 2; the abandoned trials 2 and
    3 are not listed."""
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("x"), answer("y"), answer("Vltava")]),
        reflector_model=ScriptedChatModel(
            replies=["Reflection: I misread.", "Reflection: I misread.", "Reflection: Fork."]
        ),
    ).compile(checkpointer=InMemorySaver())
    ctx = Context(max_trials=3, memory_size=3)
    start = {"task": "Which river?", "passages": "c", "reference": "Vltava"}
    graph.invoke(start, {"configurable": {"thread_id": "h2"}}, context=ctx)
    first = thread_history(graph, "h2")[0]
    config = {"configurable": {"thread_id": "h2", "checkpoint_id": first.checkpoint_id}}
    graph.invoke(None, config, context=ctx)
    entries = thread_history(graph, "h2")
    assert [(e.trial, e.answer, e.reflection) for e in entries] == [
        (1, "x", "Fork."),
        (2, "Vltava", None),
    ]
    assert entries[0].checkpoint_id == first.checkpoint_id


def test_history_of_a_programming_thread(tmp_path, monkeypatch, capsys):
    """`reflexion history` on a programming thread (agent from its checkpoint metadata) lists
    its iterations: the failing implementation with the test feedback and the reflection,
    then the passing one; --json gives one object per trial."""
    db = tmp_path / "t.sqlite"
    with open_checkpointer(str(db)) as saver:
        graph = programming_builder(
            actor_model=ScriptedChatModel(replies=[WRONG, RIGHT]),
            evaluator_model=ScriptedChatModel(replies=[TESTS_REPLY]),
            reflector_model=ScriptedChatModel(replies=["Reflection: I subtracted."]),
        ).compile(checkpointer=saver)
        start = {"task": PROMPT, "entry_point": "add", "language": "py", "task_id": "t/0"}
        stream_thread(
            graph, "code-1", start, Context(max_trials=3, memory_size=1),
            metadata={"agent": "programming"},
        )  # fmt: skip
    code, out, err = cli(monkeypatch, capsys, "history", "code-1", "--db", str(db), "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["trial"], r["success"]) for r in rows] == [(1, False), (2, True)]
    assert "return a - b" in rows[0]["answer"] and "Tests failed" in rows[0]["feedback"]
    assert rows[0]["reflection"] == "I subtracted." and rows[1]["reflection"] is None
    code, out, err = cli(monkeypatch, capsys, "history", "code-1", "--db", str(db))
    assert code == 0, err
    assert "(programming): 2 trial(s), finished" in out
    assert "trial 1: ✗" in out and "reflection: I subtracted." in out and "trial 2: ✓" in out
    # `run --thread-id` resumes QA threads only: a programming thread is a one-line error
    code, out, err = cli(monkeypatch, capsys, "run", "--thread-id", "code-1", "--db", str(db))
    assert code == 2 and err.count("\n") == 1, err
    assert "is a programming thread" in err and "reflexion bench programming" in err


def test_history_command_on_an_interrupted_thread_says_how_to_resume(tmp_path, monkeypatch, capsys):
    """A thread stopped before its reflector (interrupt_before) is listed as interrupted,
    with its one finished trial and the resume command."""
    db = tmp_path / "t.sqlite"
    with open_checkpointer(str(db)) as saver:
        graph = qa_builder(
            actor_model=ScriptedChatModel(replies=[answer("x")]),
        ).compile(checkpointer=saver, interrupt_before=["reflector"])
        stream_thread(
            graph, "qa-1", {"task": "Q?", "passages": "c", "reference": "a"},
            Context(max_trials=3), metadata={"agent": "cot-gt"},
        )  # fmt: skip
    code, out, err = cli(monkeypatch, capsys, "history", "qa-1", "--db", str(db))
    assert code == 0, err
    assert "(cot-gt): 1 trial(s), interrupted before reflector" in out
    assert "reflexion run --thread-id qa-1" in out


def test_history_of_an_unknown_thread_or_missing_file(tmp_path, monkeypatch, capsys):
    """Unknown thread and missing database file: one line each, exit 2, no file created."""
    missing = tmp_path / "none.sqlite"
    code, _, err = cli(monkeypatch, capsys, "history", "x", "--db", str(missing))
    assert code == 2 and "does not exist" in err and not missing.exists()
    db = tmp_path / "t.sqlite"
    sqlite3.connect(db).close()
    code, _, err = cli(monkeypatch, capsys, "history", "nope", "--db", str(db))
    assert code == 2 and err.count("\n") == 1 and "thread 'nope' is not in" in err


# ---- results lines recovered from checkpoints --------------------------------------------------


def test_lines_missing_after_a_crash_are_recovered_from_checkpoints_once(tmp_path):
    """A thread whose checkpoints hold trials 1-2 and reflection 1 but whose results file holds
    only trial 1 (the process died between saving and writing) gets trial 2 and reflection 1
    written, marked recovered, before it resumes; nothing already written is repeated."""
    saver = InMemorySaver()
    graph = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("x"), answer("y")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: one."]),
    ).compile(checkpointer=saver, interrupt_before=["reflector"])
    ctx = Context(max_trials=3, memory_size=3)
    task = BenchTask(
        "b1", {"task": "Q?", "passages": "c", "reference": "Vltava"}, "", {"task_id": "q"}
    )
    stream_thread(graph, "b1", task.input, ctx)  # trial 1, stops before the reflector
    stream_thread(graph, "b1", None, ctx)  # reflection 1, trial 2, stops again
    results = tmp_path / "r.jsonl"
    first = {"type": "trial", "thread_id": "b1", "trial": 1, "usage": {}}
    results.write_text(json.dumps(first) + "\n")
    resumed = qa_builder(
        actor_model=ScriptedChatModel(replies=[answer("Vltava")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: two."]),
    ).compile(checkpointer=saver)
    with results.open("a", encoding="utf-8") as handle:
        finals, errors = run_benchmark(resumed, [task], ctx, Sink(handle), settings={})
    assert not errors and finals[0]["solved"]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert recorded_lines(rows)["b1"] == ({1, 2, 3}, {1, 2})
    kinds = [(r["type"], r.get("trial"), r.get("recovered", False)) for r in rows]
    assert kinds == [
        ("trial", 1, False),
        ("reflection", 1, True),
        ("trial", 2, True),
        ("reflection", 2, False),
        ("trial", 3, False),
        ("final", None, False),
    ]
    assert rows[1]["text"] == "one." and rows[3]["text"] == "two."


def test_a_line_cut_by_a_kill_does_not_swallow_the_next(tmp_path):
    """A results file ending mid-line (a process killed while writing) gets the next line on
    a line of its own, so it is read back."""
    results = tmp_path / "r.jsonl"
    results.write_text('{"type": "trial", "thread_id": "a", "tri')
    with results.open("a", encoding="utf-8") as handle:
        Sink(handle).write({"type": "final", "thread_id": "a"})
    lines = results.read_text().splitlines()
    assert json.loads(lines[-1]) == {"type": "final", "thread_id": "a"}


# ---- a step's writes saved, its checkpoint not ------------------------------------------------


class Killed(BaseException):
    """Stands for the SIGKILL that ends a process between saving a step's writes and saving
    the step's checkpoint (a BaseException, so nothing on the way catches it)."""


class SaverKilledAtStep(SqliteSaver):
    """LangGraph's SQLite saver, in a process that dies when asked to save the checkpoint of
    step ``kill_step``: the writes of that step's tasks are saved already (LangGraph saves a
    task's writes as it finishes), the checkpoint never is."""

    kill_step: int | None = None

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata.get("step") == self.kill_step:
            raise Killed
        return super().put(config, checkpoint, metadata, new_versions)


PRAGUE = {"task": "Which river flows through Prague?", "passages": "", "reference": "Vltava"}


def killed_after_the_second_actor(db: Path) -> None:
    """Trial 1 answers Elbe (wrong), the reflector writes a lesson, trial 2's actor answers
    Vltava; the process dies before the step after that actor call is checkpointed (steps:
    0 start, 1 actor, 2 evaluator, 3 reflector, 4 actor)."""
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SaverKilledAtStep(conn)
    saver.kill_step = 4
    graph = qa_builder(
        with_passages=False,
        actor_model=ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: it is not the Elbe."]),
    ).compile(checkpointer=saver)
    with pytest.raises(Killed):
        stream_thread(graph, "qa-k", PRAGUE, Context(max_trials=3), metadata={"agent": "cot"})
    conn.close()


def test_a_thread_killed_between_a_nodes_writes_and_its_checkpoint_is_unfinished(tmp_path):
    """get_state applies the saved writes of the actor (answer Vltava) and names no next node,
    yet trial 2 was never evaluated: ``unfinished`` says "after actor", and resuming with
    input None evaluates trial 2 (solved) without asking the actor again."""
    db = tmp_path / "t.sqlite"
    killed_after_the_second_actor(db)
    with open_checkpointer(str(db)) as saver:
        actor = ScriptedChatModel(replies=[answer("never asked")])
        graph = qa_builder(with_passages=False, actor_model=actor).compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "qa-k"}})
        assert state.next == () and state.values["answer"] == "Vltava"
        assert [e["trial"] for e in state.values["evaluations"]] == [1]
        assert unfinished(state) == "after actor"
        final = stream_thread(graph, "qa-k", None, Context(max_trials=3))
        assert actor.prompts == []
        assert [(e["trial"], e["success"]) for e in final["evaluations"]] == [
            (1, False),
            (2, True),
        ]
        assert unfinished(graph.get_state({"configurable": {"thread_id": "qa-k"}})) is None


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_history_and_run_resume_a_thread_killed_after_a_nodes_writes(
    server, tmp_path, monkeypatch, capsys
):
    """`history` lists such a thread as interrupted after the actor with the resume command
    (not as finished), and `run --thread-id` resumes it: trial 2 is evaluated from the saved
    answer and no model is asked anything."""
    db = tmp_path / "t.sqlite"
    killed_after_the_second_actor(db)
    code, out, err = cli(monkeypatch, capsys, "history", "qa-k", "--db", str(db))
    assert code == 0, err
    assert "(cot): 1 trial(s), interrupted after actor" in out
    assert "reflexion run --thread-id qa-k" in out
    code, out, err = cli(
        monkeypatch, capsys, "run", "--thread-id", "qa-k", "--db", str(db),
        "--model", "openai:any-name", "--base-url", server.base_url, "--trials", "3",
    )  # fmt: skip
    assert code == 0, err
    assert "resuming thread" in out and "solved" in out
    assert server.requests == []
    code, out, err = cli(monkeypatch, capsys, "history", "qa-k", "--db", str(db))
    assert "(cot): 2 trial(s), finished" in out


def resume_bench(db: Path, results: Path, replies: list[str]) -> list[dict[str, Any]]:
    """Resume thread ``qa-k`` with ``run_benchmark`` (as a rerun of the benchmark does), the
    actor answering ``replies``; returns the results lines."""
    with open_checkpointer(str(db)) as saver:
        graph = qa_builder(
            with_passages=False,
            actor_model=ScriptedChatModel(replies=replies),
            reflector_model=ScriptedChatModel(replies=["Reflection: read the question again."]),
        ).compile(checkpointer=saver)
        task = BenchTask("qa-k", PRAGUE, "", {"task_id": "prague"})
        with results.open("a", encoding="utf-8") as handle:
            _, errors = run_benchmark(
                graph, [task], Context(max_trials=3), Sink(handle), settings={}
            )
    assert not errors
    return [json.loads(line) for line in results.read_text().splitlines()]


def test_a_line_recovered_before_a_resume_is_not_written_again_when_the_resume_replays_it(
    tmp_path,
):
    """Killed after trial 2's evaluation was saved as the step's writes, before the step's
    checkpoint, with trial 2 not yet in the results file: the rerun recovers trial 2 from
    the checkpoints, and the resume (which hands the saved writes back to the evaluator and
    streams its update again) does not write it a second time."""
    db = tmp_path / "t.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SaverKilledAtStep(conn)
    saver.kill_step = 5  # after trial 2's evaluator
    graph = qa_builder(
        with_passages=False,
        actor_model=ScriptedChatModel(replies=[answer("Elbe"), answer("Elbe")]),
        reflector_model=ScriptedChatModel(replies=["Reflection: it is not the Elbe."]),
    ).compile(checkpointer=saver)
    results = tmp_path / "r.jsonl"
    with results.open("a", encoding="utf-8") as handle, pytest.raises(Killed):
        task = BenchTask("qa-k", PRAGUE, "", {"task_id": "prague"})
        run_benchmark(graph, [task], Context(max_trials=3), Sink(handle), settings={})
    conn.close()
    assert [(r["type"], r.get("trial")) for r in rows_of(results)] == [
        ("trial", 1),
        ("reflection", 1),
    ]
    lines = resume_bench(db, results, [answer("Vltava")])
    kinds = [(r["type"], r.get("trial"), r.get("recovered", False)) for r in lines]
    assert kinds == [
        ("trial", 1, False),
        ("reflection", 1, False),
        ("trial", 2, True),
        ("reflection", 2, False),
        ("trial", 3, False),
        ("final", None, False),
    ]
    assert lines[-1]["solved"]


def rows_of(results: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in results.read_text().splitlines()]


def cut_short_in_the_second_evaluator(db: Path, results: Path) -> None:
    """Trial 1 answers Elbe (wrong), a lesson, trial 2 answers Elbe again; then trial 2's
    evaluator is cut short: the step's checkpoint holds the writes LangGraph's runner saves
    for a task cancelled between its state update and the edge after it (part of the update,
    an evaluation made up here so that it can be told apart, and the CancelledError) and
    no edge. The results file has trial 1 and its reflection."""
    with open_checkpointer(str(db)) as saver:
        graph = qa_builder(
            with_passages=False,
            actor_model=ScriptedChatModel(replies=[answer("Elbe"), answer("Elbe")]),
            reflector_model=ScriptedChatModel(replies=["Reflection: it is not the Elbe."]),
        ).compile(checkpointer=saver, interrupt_before=["evaluator"])
        with results.open("a", encoding="utf-8") as handle:
            sink = Sink(handle)

            def write(event: str, payload: dict[str, Any]) -> None:
                sink.write({"type": event, "thread_id": "qa-k", **payload})

            stream_thread(graph, "qa-k", PRAGUE, Context(max_trials=3), write)
            stream_thread(graph, "qa-k", None, Context(max_trials=3), write)
        config: Any = {"configurable": {"thread_id": "qa-k"}}
        state = graph.get_state(config)
        assert state.next == ("evaluator",) and state.values["trial"] == 2
        made_up = {"trial": 2, "answer": "Elbe", "score": 0.0, "success": False}
        saver.put_writes(
            state.config,
            [
                ("evaluations", [{**made_up, "feedback": "FROM THE CANCELLED STEP"}]),
                ("solved", False),
                (ERROR, asyncio.CancelledError()),
            ],
            state.tasks[0].id,
        )
    # only the two interrupted runs' lines: no final line yet
    assert [r["type"] for r in rows_of(results)] == ["trial", "reflection"]


def test_a_step_cut_short_is_replayed_not_taken_as_finished(tmp_path, monkeypatch, capsys):
    """A node cancelled halfway through its writes (its update saved, not the edge after it):
    LangGraph would resume past it as if it had finished, and the loop would end at trial 2.
    `history` says "interrupted during evaluator"; the rerun writes no line from the partial
    writes, replays the evaluator from its checkpoint, reflects, and solves the question at
    trial 3, each line once."""
    db, results = tmp_path / "t.sqlite", tmp_path / "r.jsonl"
    cut_short_in_the_second_evaluator(db, results)
    with open_checkpointer(str(db)) as saver:
        state = (
            qa_builder(with_passages=False)
            .compile(checkpointer=saver)
            .get_state({"configurable": {"thread_id": "qa-k"}})
        )
        assert cut_short(state) == ["evaluator"] and unfinished(state) == "during evaluator"
    code, out, err = cli(monkeypatch, capsys, "history", "qa-k", "--db", str(db))
    assert code == 0, err
    assert "1 trial(s), interrupted during evaluator" in out
    lines = resume_bench(db, results, [answer("Vltava")])
    assert "FROM THE CANCELLED STEP" not in results.read_text()
    kinds = [(r["type"], r.get("trial"), r.get("recovered", False)) for r in lines]
    assert kinds == [
        ("trial", 1, False),
        ("reflection", 1, False),
        ("trial", 2, False),
        ("reflection", 2, False),
        ("trial", 3, False),
        ("final", None, False),
    ]
    assert lines[2]["feedback"] == "Answer is INCORRECT"
    assert lines[-1]["solved"] and lines[-1]["trials"] == 3
    code, out, err = cli(monkeypatch, capsys, "history", "qa-k", "--db", str(db))
    assert "3 trial(s), finished" in out and "FROM THE CANCELLED STEP" not in out
