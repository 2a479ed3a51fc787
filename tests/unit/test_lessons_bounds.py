"""Lessons that are bounded and expire, and recalled by meaning where the store can: the
store's semantic search when it has a vector index (BM25 stays the fallback, and ranks what
the index did not score), ``lessons.ttl_minutes`` (the store's TTL where it supports one,
recall's own expiry everywhere, the store's ``default_ttl`` when unset, reads that refresh
nothing) and ``lessons.max_per_family`` (unvalidated lessons go first, the least recently
written first, never the one just saved). Defaults keep the earlier behaviour."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, TTLConfig
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from reflexion.core.context import Context, Lessons
from reflexion.core.errors import ReflexionError
from reflexion.core.steps import drive
from reflexion.graphs.qa import qa_builder
from reflexion.lessons import (
    INDEX_FIELDS,
    family_items,
    lifetime,
    namespace,
    prune,
    recall,
    save_lesson,
    validate_lessons,
)
from reflexion.testing import ScriptedChatModel
from tests.conftest import answer
from tests.unit.test_lessons import ALL, PRAGUE, config, qa_graph

CONCEPTS = (
    ("car", "automobile", "vehicle", "sedan"),
    ("river", "stream", "waterway"),
    ("city", "town", "capital"),
)
DIMS = len(CONCEPTS) + 1


def concept_embed(texts: Sequence[str]) -> list[list[float]]:
    """A small deterministic embedding: one dimension per group of synonyms (and a constant
    one, so that no vector is zero). Words of a group are close; BM25 sees them as unrelated."""
    vectors = []
    for text in texts:
        words = set(re.findall(r"[a-z]+", text.lower()))
        vectors.append([float(len(words & set(group))) for group in CONCEPTS] + [0.01])
    return vectors


def indexed() -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMS, "embed": concept_embed})


QUERY = "Which car did Ayrton Senna drive in 1988?"
BY_MEANING = ("Name the vehicle model, not the racing team.", "What automobile won Le Mans?")
BY_WORD = ("Senna is also a river: check which one is meant.", "Where does the Senna flow?")


def save(store: BaseStore, thread: str, lesson: tuple[str, str], **bounds: Any) -> str:
    text, task = lesson
    return drive(
        save_lesson(
            store, "qa", text=text, task=task, task_id=None, thread_id=thread, trial=1, **bounds
        )
    )


# ---- semantic search, BM25 fallback ---------------------------------------------------------


def test_an_indexed_store_recalls_by_meaning_and_a_plain_one_by_words():
    """The same two lessons: a store with an index ranks the one that means the query's
    subject first (no word in common), a store without one ranks the one sharing a word."""
    for store, first in ((indexed(), BY_MEANING[0]), (InMemoryStore(), BY_WORD[0])):
        save(store, "a", BY_MEANING)
        save(store, "b", BY_WORD)
        found = drive(recall(store, "qa", QUERY, 2, exclude_thread=None, lesson_filter="all"))
        assert found[0] == first and len(found) == 2
        assert drive(recall(store, "qa", QUERY, 1, exclude_thread=None, lesson_filter="all")) == [
            first
        ]


def test_a_saved_lesson_embeds_its_text_and_task():
    """A lesson is embedded by its text and its task (each its own vector): a query that
    matches only the task still scores it."""
    assert INDEX_FIELDS == ["text", "task"]
    store = indexed()
    save(store, "a", ("Read the question twice.", "Which town lies on the Vltava?"))
    hits = store.search(namespace("qa"), query="city", limit=5)
    assert [h.key for h in hits] == ["a:1"] and hits[0].score is not None
    assert hits[0].score > 0.9


def test_lessons_the_index_did_not_score_follow_by_bm25():
    """A lesson written without an embedding (before the store had an index) comes after
    the scored ones, ranked among the unscored by BM25."""
    store = indexed()
    save(store, "a", BY_MEANING)
    where = namespace("qa")
    for key, text in (("old:1", "Unrelated advice about spelling."), ("old:2", "Senna drove.")):
        store.put(where, key, {"text": text, "task": "x", "thread_id": key}, index=False)
    found = drive(recall(store, "qa", QUERY, 3, exclude_thread=None, lesson_filter="all"))
    assert found == [BY_MEANING[0], "Senna drove.", "Unrelated advice about spelling."]


def test_a_graph_on_an_indexed_store_saves_embedded_lessons_and_recalls_them():
    """Through the QA graph: the writer thread's reflection is saved with its embedding, and
    another task's thread recalls it by meaning (no word in common with the lesson's text)."""
    store = indexed()
    lesson = "The stream through the town is named on the map."
    writer = qa_graph([answer("Elbe")], [f"Reflection: {lesson}"], store)
    writer.invoke(PRAGUE, config("writer"), context=Context(max_trials=2, lessons=ALL))
    assert store.search(namespace("qa"), query="waterway", limit=1)[0].score is not None
    actor = ScriptedChatModel(replies=[answer("Danube")])
    reader = qa_builder(actor_model=actor).compile(checkpointer=InMemorySaver(), store=store)
    task = {"task": "Which waterway crosses Budapest?", "passages": "", "reference": "Danube"}
    reader.invoke(task, config("reader"), context=Context(lessons=ALL))
    assert reader.get_state(config("reader")).values["lessons"] == [lesson]
    assert lesson in actor.prompt_text(0)


# ---- expiry ---------------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[SqliteStore, sqlite3.Connection]]:
    conn = sqlite3.connect(tmp_path / "s.sqlite", check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn, ttl=TTLConfig(refresh_on_read=True))
        store.setup()
        yield store, conn
    finally:
        conn.close()


def ttl_column(conn: sqlite3.Connection) -> dict[str, Any]:
    return dict(conn.execute("SELECT key, ttl_minutes FROM store").fetchall())


def expiries(conn: sqlite3.Connection) -> dict[str, Any]:
    return dict(conn.execute("SELECT key, expires_at FROM store").fetchall())


def test_a_store_with_ttl_gets_the_lessons_ttl_and_reads_refresh_nothing(sqlite_store):
    """On a store that supports TTL (SQLite here, Postgres in the integration tests) a lesson
    is written with lessons.ttl_minutes; neither a recall nor a validation's read refreshes
    it, though the store refreshes on read by default; the validation's write does."""
    store, conn = sqlite_store
    assert store.supports_ttl
    save(store, "t", ("Check the map.", PRAGUE["task"]), ttl_minutes=90)
    assert ttl_column(conn) == {"t:1": 90.0}
    conn.execute("UPDATE store SET expires_at = '2000-01-01 00:00:00'")  # a mark to watch
    assert drive(recall(store, "qa", "river", 3, exclude_thread=None, lesson_filter="all"))
    assert drive(validate_lessons(store, "qa", thread_id="t", trial=2, window=["no such"])) == []
    assert expiries(conn) == {"t:1": "2000-01-01 00:00:00"}
    window = ["Check the map."]
    marked = drive(
        validate_lessons(store, "qa", thread_id="t", trial=2, window=window, ttl_minutes=90)
    )
    assert marked == ["t:1"] and ttl_column(conn) == {"t:1": 90.0}
    assert expiries(conn)["t:1"] != "2000-01-01 00:00:00"


def test_recall_skips_and_a_save_deletes_expired_lessons_on_a_store_without_ttl():
    """InMemoryStore has no TTL support: the lesson is written without one (no error), and
    the lifetime is kept by recall (an expired lesson is skipped) and by the next save (the
    family's expired lessons are deleted)."""
    store = InMemoryStore()
    assert not store.supports_ttl
    save(store, "old", BY_WORD, ttl_minutes=60)
    later = datetime.now(UTC) + timedelta(minutes=61)
    kwargs: dict[str, Any] = {"exclude_thread": None, "lesson_filter": "all", "ttl_minutes": 60}
    assert drive(recall(store, "qa", QUERY, 3, **kwargs)) == [BY_WORD[0]]
    assert drive(recall(store, "qa", QUERY, 3, now=later, **kwargs)) == []
    assert drive(recall(store, "qa", QUERY, 3, now=later, exclude_thread=None, lesson_filter="all"))
    assert drive(prune(store, "qa", most=None, ttl_minutes=60, now=later)) == ["old:1"]
    assert drive(family_items(store, "qa")) == []


def test_an_unset_ttl_falls_back_on_the_stores_default_ttl(tmp_path: Path):
    """Without lessons.ttl_minutes the store's own default_ttl (langgraph.json store.ttl)
    is the lifetime: the store stamps it, and recall honours it before any sweep."""
    conn = sqlite3.connect(tmp_path / "d.sqlite", check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn, ttl=TTLConfig(default_ttl=30))
        store.setup()
        assert lifetime(store, None) == 30 and lifetime(store, 5) == 5
        assert lifetime(InMemoryStore(), None) is None
        save(store, "t", BY_WORD)
        assert ttl_column(conn) == {"t:1": 30.0}
        later = datetime.now(UTC) + timedelta(minutes=31)
        kwargs: dict[str, Any] = {"exclude_thread": None, "lesson_filter": "all"}
        assert drive(recall(store, "qa", QUERY, 3, **kwargs)) == [BY_WORD[0]]
        assert drive(recall(store, "qa", QUERY, 3, now=later, **kwargs)) == []
    finally:
        conn.close()


# ---- the limit per family -------------------------------------------------------------------


def test_past_the_limit_unvalidated_then_least_recently_written_lessons_go():
    """With max_per_family=3, each save past it deletes the surplus: unvalidated lessons
    before validated ones, the least recently written first; a lesson validated later was
    rewritten then, so it counts as recent; the lesson just saved always stays."""
    store = InMemoryStore()
    for thread in ("t1", "t2", "t3"):
        save(store, thread, (f"Lesson of {thread}.", f"Task {thread}?"), max_per_family=3)
    where = namespace("qa")
    for key in ("t1:1", "t2:1"):  # validated: kept before any unvalidated one
        found = store.get(where, key)
        assert found is not None
        store.put(where, key, {**found.value, "validated": True})
    save(store, "t4", ("Lesson of t4.", "Task t4?"), max_per_family=3)
    assert sorted(i.key for i in drive(family_items(store, "qa"))) == ["t1:1", "t2:1", "t4:1"]
    save(store, "t5", ("Lesson of t5.", "Task t5?"), max_per_family=3)
    assert sorted(i.key for i in drive(family_items(store, "qa"))) == ["t1:1", "t2:1", "t5:1"]
    save(store, "t6", ("Lesson of t6.", "Task t6?"), max_per_family=1)
    assert [i.key for i in drive(family_items(store, "qa"))] == ["t6:1"]


def test_a_graph_keeps_at_most_max_per_family_lessons():
    """Through the QA graph: three threads' reflections under max_per_family=2 leave two."""
    store = InMemoryStore()
    ctx = Context(max_trials=2, lessons={**ALL, "max_per_family": 2})
    for n in range(3):
        graph = qa_graph([answer("Elbe")], [f"Reflection: Lesson {n}."], store)
        graph.invoke({**PRAGUE, "task": f"Question {n}?"}, config(f"t{n}"), context=ctx)
    kept = sorted(i.value["text"] for i in drive(family_items(store, "qa")))
    assert kept == ["Lesson 1.", "Lesson 2."]


# ---- settings and defaults ------------------------------------------------------------------


def test_bad_bounds_are_one_line_errors():
    for given, message in (
        ({"ttl_minutes": 0}, "lessons.ttl_minutes is 0: use a positive number"),
        ({"ttl_minutes": "soon"}, "lessons.ttl_minutes is 'soon': give a number"),
        ({"max_per_family": 0}, "lessons.max_per_family is 0: use 1 or more"),
        ({"max_per_family": 2.5}, "lessons.max_per_family is 2.5: give a whole number"),
    ):
        with pytest.raises(ReflexionError, match=f"^{re.escape(message)}$"):
            Context(lessons=given)


def test_by_default_a_save_neither_scans_nor_deletes():
    """Unset bounds keep the earlier behaviour: a save is one put, with no TTL and no scan of
    the family (nor any deletion), and nothing expires."""
    assert Lessons().ttl_minutes is None and Lessons().max_per_family is None
    calls: list[str] = []

    class Watching(InMemoryStore):
        def search(self, *args: Any, **kwargs: Any) -> Any:
            calls.append("search")
            return super().search(*args, **kwargs)

        def delete(self, *args: Any, **kwargs: Any) -> None:
            calls.append("delete")
            super().delete(*args, **kwargs)

    store = Watching()
    for n in range(5):
        save(store, f"t{n}", BY_WORD)
    assert calls == [] and len(drive(family_items(store, "qa"))) == 5
    far = datetime.now(UTC) + timedelta(days=3650)
    found = drive(recall(store, "qa", QUERY, 5, exclude_thread=None, lesson_filter="all", now=far))
    assert len(found) == 5
