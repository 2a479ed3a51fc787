"""The long-term lesson store: reflections saved to a LangGraph store by task family, recalled
by other threads (BM25, never their own), shown to the actor apart from the Ω window; off by
default with no store access; a SQLite store survives its process; the bench's --lessons.
Validation and the "validated" recall filter: ``test_lessons_validation.py``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, Item, Op, Result
from langgraph.store.memory import InMemoryStore

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.sessions import EnvSessions
from reflexion.core.context import Context, Lessons
from reflexion.core.errors import ReflexionError
from reflexion.core.steps import drive
from reflexion.graphs.alfworld import alfworld_builder
from reflexion.graphs.custom import create_reflexion_graph
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.cli.app import main
from reflexion.harness.persistence import open_store
from reflexion.lessons import MAX_CANDIDATES, namespace, rank, recall, save_lesson, tokenize
from reflexion.qa.context import QAContext
from reflexion.testing import ScriptedChatModel, ScriptedGame
from tests.conftest import answer, hotpotqa_line
from tests.unit.test_alfworld import GAME, WIN
from tests.unit.test_alfworld import games as games  # a fixture
from tests.unit.test_faults import server as server  # a fixture
from tests.unit.test_react import corpus as corpus  # a fixture

PRAGUE = {"task": "Which river flows through Prague?", "passages": "", "reference": "Vltava"}
HEADER = "Lessons from earlier, similar tasks"
ALL: dict[str, Any] = {"enabled": True, "filter": "all"}
"""Recall every lesson: for tests about something else than validation."""


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 100}


def qa_graph(actor: list[str], reflector: list[str], store: BaseStore | None) -> Any:
    return qa_builder(
        with_passages=False,
        actor_model=ScriptedChatModel(replies=actor),
        reflector_model=ScriptedChatModel(replies=reflector),
    ).compile(checkpointer=InMemorySaver(), store=store)


def right_on_trial_3(store: BaseStore, *reflections: str) -> Any:
    """A QA graph that answers PRAGUE wrong twice, reflecting ``reflections``, then right."""
    replies = [f"Reflection: {text}" for text in reflections]
    return qa_graph([answer("Elbe"), answer("Oder"), answer("Vltava")], replies, store)


def item(key: str, text: str, task: str, minutes: int) -> Item:
    stamp = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    value = {"text": text, "task": task, "thread_id": key.split(":")[0]}
    return Item(value=value, key=key, namespace=namespace("qa"), created_at=stamp, updated_at=stamp)


def test_tokenize_lowercases_and_drops_stop_words():
    """Tokens are lower-case words without stop words (what BM25 ranks on)."""
    assert tokenize("Which RIVER flows through the city of Prague?") == [
        "river",
        "flows",
        "through",
        "city",
        "prague",
    ]


def test_rank_puts_matching_lessons_first_and_breaks_ties_by_recency_then_key():
    """BM25 picks the lessons sharing the query's words; equal scores go to the newer item,
    then to the smaller key; lessons sharing no word only fill the remaining places."""
    items = [
        item("a:1", "Check which river crosses the city.", "Which river flows through Paris?", 0),
        item("b:1", "Count the albums before answering.", "How many albums did X release?", 5),
        item("c:1", "Check which river crosses the city.", "Which river flows through Paris?", 9),
        item("d:1", "Check which river crosses the city.", "Which river flows through Paris?", 9),
    ]
    top = rank(items, "Which river flows through Prague?", 3)
    assert [i.key for i in top] == ["c:1", "d:1", "a:1"]
    assert [i.key for i in rank(items, "Which river flows through Prague?", 4)][-1] == "b:1"
    assert rank(items, "anything", 0) == []
    assert rank(list(reversed(items)), "Which river flows through Prague?", 3) == top


def test_reflections_are_saved_under_the_family_namespace_with_their_origin():
    """With lessons on, each reflection is put into ("reflexion", "lessons", "qa") under the
    key thread:trial, with its text, task, task id, thread, trial and creation time."""
    store = InMemoryStore()
    graph = qa_graph([answer("Elbe")], ["Reflection: I named the wrong river."], store)
    graph.invoke(
        {**PRAGUE, "task_id": "q-prague"},
        config("t-1"),
        context=Context(max_trials=3, lessons=True),
    )
    items = store.search(("reflexion", "lessons", "qa"))
    assert sorted(i.key for i in items) == ["t-1:1", "t-1:2"]
    value = store.get(("reflexion", "lessons", "qa"), "t-1:1").value  # type: ignore[union-attr]
    assert value["text"] == "I named the wrong river."
    assert value["task"] == PRAGUE["task"] and value["task_id"] == "q-prague"
    assert value["thread_id"] == "t-1" and value["trial"] == 1
    assert datetime.fromisoformat(value["created"]).tzinfo is not None
    assert store.list_namespaces() == [("reflexion", "lessons", "qa")]


def test_recall_picks_the_most_relevant_lessons_of_other_threads_never_its_own():
    """A new thread sees the k lessons most relevant to its task from other threads, in a
    section of its own, on every trial; its own earlier lessons are never recalled."""
    store = InMemoryStore()
    lesson = {
        "river": (
            "old-1",
            "Rivers: name the river that crosses the city, not a tributary.",
            "Which river flows through Vienna?",
        ),
        "album": (
            "old-2",
            "Albums: count studio albums only.",
            "How many albums did Adele release?",
        ),
        "bridge": (
            "old-3",
            "Bridges: give the bridge's full name.",
            "Which bridge spans the Vltava in Prague?",
        ),
    }
    for thread, text, task in lesson.values():
        drive(
            save_lesson(store, "qa", text=text, task=task, task_id=None, thread_id=thread, trial=1)
        )
    # the thread's own lesson, the most relevant of all, must not come back
    drive(
        save_lesson(
            store,
            "qa",
            text="Prague river: it is the Vltava.",
            task=PRAGUE["task"],
            task_id=None,
            thread_id="me",
            trial=1,
        )
    )
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
    graph = qa_builder(
        with_passages=False,
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: wrong river."]),
    ).compile(checkpointer=InMemorySaver(), store=store)
    ctx = QAContext(max_trials=2, lessons={**ALL, "recall_k": 2}, retry="informed")
    graph.invoke(PRAGUE, config("me"), context=ctx)
    state = graph.get_state(config("me")).values
    assert state["lessons"] == [lesson["river"][1], lesson["bridge"][1]]
    first, second = actor.prompt_text(0), actor.prompt_text(1)
    for prompt in (first, second):
        assert HEADER in prompt and lesson["river"][1] in prompt and lesson["bridge"][1] in prompt
        assert "Albums" not in prompt and "it is the Vltava" not in prompt
    # in the system message (a stable prefix; next to the question they misled the 0.5B
    # model), separate from the Ω window, which follows the question
    for call in (0, 1):
        assert lesson["river"][1] in actor.prompts[call][0].text
        assert lesson["river"][1] not in actor.prompts[call][-1].text
    assert "reflections are lessons you wrote" in second
    assert second.index(HEADER) < second.index("wrong river.")
    assert "wrong river." not in second[: second.index("You have attempted")]


def test_the_generic_graphs_default_actor_keeps_lessons_in_the_system_message():
    """The generic graph's own chat actor (``create_reflexion_graph`` with a chat model and no
    prompt) places recalled lessons as the built-in actors do: in the system message, not
    next to the task."""
    store = InMemoryStore()
    drive(
        save_lesson(
            store,
            "reflexion",
            text="Rivers: read the question twice.",
            task="Which river crosses Brno?",
            task_id=None,
            thread_id="other",
            trial=1,
        )
    )
    actor = ScriptedChatModel(replies=[answer("Vltava")])
    # A scripted reflector too: a unit test never loads the embedded model.
    reflector = ScriptedChatModel(replies=["Check the river's name against the context."])
    graph = create_reflexion_graph(
        actor,
        "exact_match",
        reflector_model=reflector,
        checkpointer=InMemorySaver(),
        store=store,
    )
    graph.invoke(PRAGUE, config("g1"), context=Context(lessons=ALL))
    assert (
        HEADER in actor.prompts[0][0].text and "read the question twice" in actor.prompts[0][0].text
    )
    assert "read the question twice" not in actor.prompts[0][-1].text


def test_recall_runs_once_so_the_prompt_prefix_stays_the_same_across_trials():
    """Lessons written by another thread while this one runs do not change its later trials:
    recall happens on the first trial only."""
    store = InMemoryStore()
    drive(
        save_lesson(
            store,
            "qa",
            text="Rivers: read the question twice.",
            task="Which river?",
            task_id=None,
            thread_id="other",
            trial=1,
        )
    )

    class Writer(ScriptedChatModel):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            drive(
                save_lesson(
                    store,
                    "qa",
                    text=f"River late lesson {len(self.prompts)}.",
                    task="Which river flows?",
                    task_id=None,
                    thread_id="late",
                    trial=1,
                )
            )
            return super()._generate(messages, *args, **kwargs)

    actor = Writer(replies=[answer("Elbe")])
    graph = qa_builder(
        with_passages=False,
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: wrong."]),
    ).compile(checkpointer=InMemorySaver(), store=store)
    ctx = Context(max_trials=3, lessons=ALL)
    graph.invoke(PRAGUE, config("t"), context=ctx)
    prefixes = [actor.prompts[i][0].text for i in range(3)]  # the system message
    assert prefixes[0] == prefixes[1] == prefixes[2]
    assert "late lesson" not in prefixes[0] and "read the question twice" in prefixes[0]


class RefusingStore(BaseStore):
    """A store that fails the test on any access."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        raise AssertionError(f"the store was used: {list(ops)}")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        raise AssertionError(f"the store was used: {list(ops)}")


def test_lessons_off_touches_no_store_and_leaves_prompts_byte_identical():
    """By default (lessons off) a graph with a store never reads or writes it, and every
    actor and reflector prompt equals that of a graph compiled without a store."""
    prompts = []
    for store in (None, RefusingStore()):
        actor = ScriptedChatModel(replies=[answer("Elbe"), answer("Vltava")])
        reflector = ScriptedChatModel(replies=["Reflection: wrong river."])
        graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
            checkpointer=InMemorySaver(), store=store
        )
        out = graph.invoke(PRAGUE, config("t"), context=Context(max_trials=3))
        assert out["solved"]
        prompts.append([[m.content for m in p] for p in actor.prompts + reflector.prompts])
        assert HEADER not in actor.prompt_text(1)
    assert prompts[0] == prompts[1]


def test_lessons_on_without_a_store_is_a_one_line_error():
    """Lessons on and no store: a one-line ReflexionError saying how to give one."""
    graph = qa_graph([answer("Elbe")], ["Reflection: x."], None)
    with pytest.raises(ReflexionError) as exc:
        graph.invoke(PRAGUE, config("t"), context=Context(lessons=True))
    message = str(exc.value)
    assert "\n" not in message
    assert "no store" in message and "compile(store=" in message and "lessons off" in message


def test_context_rejects_bad_lesson_settings():
    """recall_k out of range, a task family with a dot (a store namespace cannot hold
    one) and an unknown lesson filter are one-line errors."""
    with pytest.raises(
        ReflexionError, match=r"^lessons\.recall_k is -1: use a value in \[0, 50\]$"
    ):
        Context(lessons={"recall_k": -1})
    with pytest.raises(ReflexionError, match=r"^lessons\.family is 'qa\.v2'"):
        Context(lessons={"family": "qa.v2"})
    with pytest.raises(
        ReflexionError, match=r"lessons\.filter is 'some': use one of validated, all"
    ):
        Context(lessons={"filter": "some"})


def test_flat_lesson_keys_are_unknown_keys_warned_about_and_ignored():
    """Nothing was released, so no old spelling is kept: a flat key is a typo like any other."""
    with pytest.warns(UserWarning, match="recall_k, task_family are not fields of Context"):
        ctx = Context(lessons=True, recall_k=5, task_family="shared")
    assert ctx.lessons == Lessons(enabled=True)


def test_task_family_override_and_per_graph_families(games: str, corpus: Any):
    """Families keep lessons apart: ReAct saves under "react", programming under
    "programming-py", ALFWorld under "alfworld-<kind>"; Context.task_family overrides them,
    and each actor shows the lessons of its family in its first prompt."""
    store = InMemoryStore()
    for family in ("react", "programming-py", "alfworld-put", "shared"):
        drive(
            save_lesson(
                store,
                family,
                text=f"Lesson for {family}: mug river add.",
                task="mug river add",
                task_id=None,
                thread_id="old",
                trial=1,
            )
        )
    # ReAct (the subgraph reaches the store through the runtime)
    actor = ScriptedChatModel(
        replies=["Thought: t.\nAction: Search[Prague]", "Thought: t.\nAction: Finish[Elbe]"]
    )
    react = react_builder(
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: r."]),
        backend=corpus,
    ).compile(checkpointer=InMemorySaver(), store=store)
    react.invoke(PRAGUE, config("r1"), context=Context(max_trials=2, lessons=ALL))
    assert "Lesson for react" in actor.prompt_text(
        0
    ) and "Lesson for shared" not in actor.prompt_text(0)
    assert any(i.key == "r1:1" for i in store.search(("reflexion", "lessons", "react")))
    # programming
    coder = ScriptedChatModel(replies=["```python\ndef add(a, b):\n    return a - b\n```"])
    prog = programming_builder(
        actor_model=coder, reflector_model=ScriptedChatModel(replies=["Reflection: p."])
    ).compile(checkpointer=InMemorySaver(), store=store)
    task = {
        "task": 'def add(a, b):\n    """Add two numbers (mug river add)."""\n',
        "entry_point": "add",
        "tests": ["assert add(1, 2) == 3"],
    }
    prog.invoke(task, config("p1"), context=Context(max_trials=2, lessons=ALL))
    assert "Lesson for programming-py" in coder.prompt_text(0)
    assert HEADER in coder.prompts[1][0].text  # kept in the stable system message
    assert any(i.key == "p1:1" for i in store.search(("reflexion", "lessons", "programming-py")))
    # ALFWorld: the family needs the game's kind, known once the game is reset
    player = ScriptedChatModel(replies=["go to cabinet 1"] * 4 + WIN)
    alf = alfworld_builder(
        actor_model=player,
        reflector_model=ScriptedChatModel(replies=["Reflection: take the mug first."]),
        sessions=EnvSessions(ScriptedGame),
    ).compile(checkpointer=InMemorySaver(), store=store)
    ctx = AlfworldContext(games=games, lessons=ALL, alfworld_memory="reflection")
    alf.invoke({"game": GAME}, config("a1"), context=ctx)
    assert "Lesson for alfworld-put" in player.prompt_text(0)
    assert store.get(("reflexion", "lessons", "alfworld-put"), "a1:1") is not None
    # an explicit family is shared by any graph
    actor2 = ScriptedChatModel(replies=[answer("Vltava")])
    qa = qa_builder(actor_model=actor2).compile(checkpointer=InMemorySaver(), store=store)
    qa.invoke(PRAGUE, config("q1"), context=Context(lessons={**ALL, "family": "shared"}))
    assert "Lesson for shared" in actor2.prompt_text(0)


SQLITE_WRITER = textwrap.dedent(
    """
    import sys
    from langgraph.checkpoint.memory import InMemorySaver
    from reflexion.graphs.qa import qa_builder
    from reflexion.core.context import Context
    from reflexion.harness.persistence import open_store
    from reflexion.testing import ScriptedChatModel

    actor = ScriptedChatModel(
        replies=["Thought: t.\\nAction: Finish[Elbe]", "Thought: t.\\nAction: Finish[Vltava]"]
    )
    reflector = ScriptedChatModel(replies=["Reflection: Prague sits on the Vltava, not the Elbe."])
    with open_store(sys.argv[1]) as store:
        graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
            checkpointer=InMemorySaver(), store=store
        )
        graph.invoke(
            {"task": "Which river flows through Prague?", "reference": "Vltava"},
            {"configurable": {"thread_id": "writer"}},
            context=Context(max_trials=2, lessons=True),
        )
    """
)


def test_a_sqlite_store_keeps_lessons_for_another_process(tmp_path: Path):
    """Lessons written by one process into a SQLite store (and validated there: the writer's
    second trial succeeds) are recalled by a thread in another process that reopens the file,
    under the default "validated" filter."""
    db = tmp_path / "threads.sqlite"
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_WRITER, str(db)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    actor = ScriptedChatModel(replies=[answer("Vltava")])
    with open_store(db) as store:
        graph = qa_builder(actor_model=actor).compile(checkpointer=InMemorySaver(), store=store)
        other = {**PRAGUE, "task": "Which river crosses the old town of Prague?"}
        graph.invoke(other, config("reader"), context=Context(lessons=True))
        assert drive(recall(store, "qa", "Prague", 3, exclude_thread="writer")) == []
    assert "Prague sits on the Vltava, not the Elbe." in actor.prompt_text(0)


def test_recall_scans_at_most_the_candidate_cap():
    """A recall reads at most MAX_CANDIDATES items from the store."""
    seen: list[int] = []

    class Counting(InMemoryStore):
        def search(self, namespace_prefix: tuple[str, ...], /, **kwargs: Any) -> Any:
            seen.append(kwargs["limit"])
            return super().search(namespace_prefix, **kwargs)

    drive(recall(Counting(), "qa", "anything", 3, exclude_thread=None))
    assert seen == [MAX_CANDIDATES]


# ---- the benchmark ----------------------------------------------------------------------------

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


def test_bench_lessons_carry_task_one_reflection_into_task_two(
    server, tmp_path, monkeypatch, capsys
):
    """`bench hotpotqa --lessons`, two questions in turn on a served fake model: question 1
    fails once, reflects and then succeeds (so its lesson is validated); question 2's first
    prompt holds that reflection; the setting is part of the results file's key (a run
    without --lessons writes another file, and so does one with --lesson-filter all, whose
    context carries the filter into the file's settings); a bad --lesson-filter is a one-line
    error."""
    questions = [
        ("q1", "Which river flows through Prague?", "Vltava"),
        ("q2", "Which river flows through Dresden?", "Elbe"),
    ]
    dataset = tmp_path / "q.jsonl"
    dataset.write_text(
        "".join(hotpotqa_line(i, q, a, [["Note", [f"{a}."]]]) + "\n" for i, q, a in questions)
    )
    actor_prompts: list[str] = []

    def decide(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        last = body["messages"][-1]["content"]
        if "reflecting on a failed attempt" in system:
            return "ok:Reflection: LESSON-ONE: name the river in the city itself."
        actor_prompts.append(system + "\n" + last)
        if "Prague" in last and "LESSON-ONE" not in system + last:
            return "ok:Thought: guess.\nAction: Finish[Danube]"
        return "ok:Thought: ok.\nAction: Finish[" + ("Vltava" if "Prague" in last else "Elbe") + "]"

    server.decide = decide
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    base = [
        "reflexion",
        "bench",
        "hotpotqa",
        "--dataset",
        str(dataset),
        "--limit",
        "2",
        "--agent",
        "cot",
        "--trials",
        "2",
        "--model",
        "openai:any-name",
        "--base-url",
        server.base_url,
        "--db",
        str(tmp_path / "t.sqlite"),
        "--retry",  # one actor call a trial, answering from the memory it reads
        "informed",
    ]
    for argv in (
        [*base, "--lessons", "--recall-k", "2"],
        base,
        [*base, "--lessons", "--recall-k", "2", "--lesson-filter", "all"],
    ):
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exc:
            main()
        assert exc.value.code in (0, None), capsys.readouterr().out
    # run 1 (--lessons): q1 trial 1, q1 trial 2 (own reflection), q2 trial 1 (recalled lesson)
    q2_first = next(p for p in actor_prompts[:4] if "Dresden" in p)
    assert HEADER in q2_first and "LESSON-ONE" in q2_first
    q1_first = next(p for p in actor_prompts if "Prague" in p)
    assert HEADER not in q1_first
    files = sorted((tmp_path / "runs").glob("hotpotqa-cot-reflexion__*.jsonl"))
    assert len(files) == 3
    settings = [
        next(json.loads(line) for line in f.read_text().splitlines() if '"final"' in line)[
            "settings"
        ]
        for f in files
    ]
    lessons = [s["lessons"] for s in settings if "lessons" in s]  # only where they are on
    assert len(lessons) == 2 and all(entry["enabled"] for entry in lessons)
    assert sorted(entry["filter"] for entry in lessons) == ["all", "validated"]
    assert {entry["recall_k"] for entry in lessons} == {2}
    assert all("review_reflections" not in s for s in settings)
    assert sum("lessons=" in f.name for f in files) == 2  # the name shows them too
    # run 2 (no --lessons; q1's two trials and q2's one): no lesson section at all
    assert len(actor_prompts) == 9
    assert all(HEADER not in p for p in actor_prompts[3:6])
    assert re.search(r"solved 2/2", capsys.readouterr().out)
    # a filter that does not exist: one stderr line, a non-zero exit
    monkeypatch.setattr(sys, "argv", [*base, "--lessons", "--lesson-filter", "good"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--lesson-filter 'good' is not one of: validated, all" in err


def test_recall_skips_lessons_about_the_same_task_from_other_threads():
    """A lesson written in another thread about the same task (same task_id, or the same task
    text) is not recalled: lessons carry over to *other* tasks, and a benchmark rerun or a
    second strategy must not recall what was learnt on the very question it answers."""
    store = InMemoryStore()
    drive(
        save_lesson(
            store, "qa", text="Same id.", task="Other wording", task_id="q1", thread_id="a", trial=1
        )
    )
    drive(
        save_lesson(
            store,
            "qa",
            text="Same text.",
            task="Which river?",
            task_id="q9",
            thread_id="b",
            trial=1,
        )
    )
    drive(
        save_lesson(
            store,
            "qa",
            text="Other task.",
            task="Which lake?",
            task_id="q2",
            thread_id="c",
            trial=1,
        )
    )
    found = drive(
        recall(
            store,
            "qa",
            "Which river?",
            5,
            exclude_thread="me",
            exclude_task_id="q1",
            lesson_filter="all",
        )
    )
    assert found == ["Other task."]
    # without a task id only the identical text is excluded
    found = drive(recall(store, "qa", "Which river?", 5, exclude_thread="me", lesson_filter="all"))
    assert sorted(found) == ["Other task.", "Same id."]
