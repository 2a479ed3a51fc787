"""The long-term lesson store: reflections kept across threads in a LangGraph ``BaseStore``.

The paper's memory ends with the thread (the Ω window); its "future work" keeps lessons for
later tasks. With ``Context.lessons`` on, every reflection a thread writes is also ``put`` into
the store under ``("reflexion", "lessons", <task family>)``, and a new thread recalls the
``Context.lessons.recall_k`` most relevant lessons of *other* threads of its family once, on its
first trial, into the state's ``lessons`` (shown to the actor apart from the Ω reflections, and kept
for every trial so the prompt prefix stays the same).

A lesson is a reflection on a failed attempt, and a small model's reflections often restate
wrong specifics (a made-up date, a wrong name) that mislead the actor of another task. So a
lesson is saved with ``validated: False`` and marked ``validated: True`` when a later trial of
its own thread that saw it in the Ω window succeeds (:func:`validate_lessons`, run after the
evaluator); with ``Context.lessons.filter`` at its default, ``"validated"``, only such lessons
are recalled (``"all"`` recalls every reflection).

Retrieval is the store's own semantic search where the store has a vector index (``index=``
on ``InMemoryStore``/``PostgresStore``/``SqliteStore``, or ``store.index`` in ``langgraph.json``):
a lesson is saved with its ``text`` and ``task`` embedded (:data:`INDEX_FIELDS`) and recalled by
``store.search(namespace, query=task)`` in the store's order. Whether the store has an index is
read from what the search returns, not from the store's class (a server hands graphs a wrapper
around its store): scored items mean an index ranked them. Without one (every store by
default: offline there is no embedding model) retrieval is lexical: BM25 (the ``rank-bm25``
package's BM25+ variant, whose idf stays positive on the tiny corpora a store starts with,
where plain Okapi BM25 scores a word found in half the documents as zero) over lower-cased word
tokens without a small list of stop words; a lesson's document is its text plus the task it was
written for. It needs no model, no download and no network, and it is deterministic: ties go to
the more recent lesson, then to the smaller key. Lessons an index did not score (saved before
it existed) follow the scored ones, by BM25. At most :data:`MAX_CANDIDATES` items are scanned
per recall (SQLite and Postgres stores return the most recently updated first; LangGraph's
``InMemoryStore`` returns them in insertion order; with an index, the most similar first).

Bounds (``Context.lessons``): ``ttl_minutes`` ends a lesson that many minutes after it was last
written (saved, or validated: validation rewrites it), falling back on the store's own
``default_ttl`` (``TTLConfig``, ``store.ttl`` in ``langgraph.json``). A store that supports TTL
(``supports_ttl``: SQLite, Postgres) gets it as the item's ``ttl`` and deletes the item at its
sweep; since stores delete only at a sweep, recall itself skips an expired lesson, and every
save deletes the family's expired lessons, on every store. Reads never extend a lesson's life
(searches and gets pass ``refresh_ttl=False``): a recall scans the whole family, and a refresh
on every scan would keep every lesson alive. ``max_per_family`` caps a family: a save past it
deletes the surplus, unvalidated lessons before validated ones, the least recently written
first, never the lesson just saved (:func:`prune`).

The store comes from LangGraph's runtime (``runtime.store``): ``compile(store=...)``, or the
store a LangGraph server provides. Each operation that reads or writes it is node steps
(:mod:`reflexion.core.steps`): a node ``yield from``-s it, and
:func:`~reflexion.core.steps.drive` runs it to its end outside one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, Item, SearchItem
from rank_bm25 import BM25Plus

from reflexion.core.context import Context, LessonFilter, get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import Steps, stored

NAMESPACE = ("reflexion", "lessons")
"""Prefix of every lesson's namespace; the task family follows."""

MAX_CANDIDATES = 1000
"""Most store items scanned by one recall."""

INDEX_FIELDS = ["text", "task"]
"""What a store with a vector index embeds of a lesson, one vector each (a search scores a
lesson by its closer one); a store without an index ignores it."""

Family = str | Callable[[Any], str]
"""A task family, or a function of the state that gives it (e.g. per language): each graph
names its own (``reflexion.programming.state.lesson_family`` and the others)."""

_STOP_TEXT = """
a an the and or but if then than of to in on at by for with from into onto about as is are was
were be been being it its this that these those i me my we our you your he she they them their
his her what which who whom whose when where why how do does did done not no so too very can
could should would will shall may might must have has had there here all any some such only
own same other also just
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""Words too common to tell lessons apart."""

_WORD = re.compile(r"[a-z0-9]+")


def family_of(family: Family, state: Any, ctx: Context) -> str:
    """The family lessons go to and come from: ``Context.lessons.family`` when set, else the
    graph's own."""
    if ctx.lessons.family:
        return ctx.lessons.family
    return family(state) if callable(family) else family


def namespace(family: str) -> tuple[str, ...]:
    """The store namespace of a task family's lessons."""
    return (*NAMESPACE, family)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` without stop words."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def lesson_key(thread_id: str | None, trial: int) -> str:
    """The key of the lesson a thread wrote after ``trial`` (one per thread and trial)."""
    return f"{thread_id or 'no-thread'}:{trial}"


def current_thread_id() -> str | None:
    """The thread the running node belongs to (``None`` outside a thread)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a graph run
        return None
    thread_id = configurable.get("thread_id")
    return str(thread_id) if thread_id is not None else None


def store_of(runtime: Runtime[Any] | None) -> BaseStore:
    """The run's store; a one-line error when lessons are on and there is none."""
    store = runtime.store if runtime is not None else None
    if store is None:
        raise ReflexionError(
            "lessons are on but the graph has no store: compile it with "
            "compile(store=InMemoryStore()) (or a SqliteStore/PostgresStore), or turn "
            "Context.lessons off"
        )
    return store


def lifetime(store: BaseStore, ttl_minutes: float | None) -> float | None:
    """Minutes a lesson lives after its last write: ``Context.lessons.ttl_minutes``, else the
    store's ``default_ttl`` (its ``TTLConfig``), else ``None`` (forever)."""
    if ttl_minutes is not None:
        return ttl_minutes
    config = getattr(store, "ttl_config", None) or {}
    default = config.get("default_ttl")
    return float(default) if default is not None else None


def expired(item: Item, minutes: float | None, now: datetime) -> bool:
    """Whether ``item`` was last written more than ``minutes`` before ``now``."""
    if minutes is None:
        return False
    written = item.updated_at
    if written.tzinfo is None:  # SQLite's timestamps are UTC without a zone
        written = written.replace(tzinfo=UTC)
    return written < now - timedelta(minutes=minutes)


def put_lesson(
    store: BaseStore, family: str, key: str, value: dict[str, Any], ttl: float | None
) -> Steps[None]:
    """Write a lesson, embedded where the store has an index, with ``ttl`` where it is set and
    the store supports TTL (elsewhere the store's own default applies, and recall's expiry)."""
    extra: dict[str, Any] = {}
    if ttl is not None and getattr(store, "supports_ttl", False):
        extra["ttl"] = ttl
    yield from stored(store, "put", namespace(family), key, value, index=INDEX_FIELDS, **extra)


def save_lesson(
    store: BaseStore,
    family: str,
    *,
    text: str,
    task: str,
    task_id: str | None,
    thread_id: str | None,
    trial: int,
    ttl_minutes: float | None = None,
    max_per_family: int | None = None,
) -> Steps[str]:
    """Put one reflection into the family's namespace; return its key. With a lifetime
    (:func:`lifetime`) or ``max_per_family``, the family is pruned after (:func:`prune`)."""
    key = lesson_key(thread_id or f"anonymous-{uuid.uuid4().hex}", trial)
    value = {
        "text": text,
        "task": task,
        "task_id": task_id,
        "thread_id": thread_id,
        "trial": trial,
        "created": datetime.now(UTC).isoformat(),
        "validated": False,
    }
    yield from put_lesson(store, family, key, value, ttl_minutes)
    if max_per_family is not None or lifetime(store, ttl_minutes) is not None:
        yield from prune(store, family, most=max_per_family, ttl_minutes=ttl_minutes, keep=key)
    return key


def family_items(store: BaseStore, family: str) -> Steps[list[Item]]:
    """Every lesson of ``family``, page by page, without refreshing any TTL."""
    found: list[Item] = []
    while True:
        page = yield from stored(
            store,
            "search",
            namespace(family),
            limit=MAX_CANDIDATES,
            offset=len(found),
            refresh_ttl=False,
        )
        found += page
        if len(page) < MAX_CANDIDATES:
            return found


def prune(
    store: BaseStore,
    family: str,
    *,
    most: int | None,
    ttl_minutes: float | None = None,
    keep: str | None = None,
    now: datetime | None = None,
) -> Steps[list[str]]:
    """Delete the family's expired lessons (:func:`lifetime`), then, while more than ``most``
    remain, the least useful: unvalidated before validated (no evidence it ever helped), then
    the least recently written (validation rewrites a lesson), then the smaller key. The
    lesson ``keep`` (the one just saved) is never deleted. Returns the deleted keys."""
    minutes = lifetime(store, ttl_minutes)
    when = now or datetime.now(UTC)
    items = yield from family_items(store, family)
    gone = [i for i in items if i.key != keep and expired(i, minutes, when)]
    dropped = {i.key for i in gone}
    live = [i for i in items if i.key not in dropped]
    if most is not None and len(live) > most:
        surplus = sorted(
            (i for i in live if i.key != keep),
            key=lambda i: (i.value.get("validated") is True, i.updated_at.timestamp(), i.key),
        )
        gone += surplus[: len(live) - most]
    for item in gone:
        yield from stored(store, "delete", namespace(family), item.key)
    return [item.key for item in gone]


def rank(items: Sequence[Item], query: str, k: int) -> list[Item]:
    """The ``k`` items most relevant to ``query`` by BM25+ over lesson text and task; ties go
    to the more recently updated item, then to the smaller key. Items sharing no word with the
    query rank last (they still fill the ``k`` places, newest first)."""
    if k <= 0 or not items:
        return []
    docs = [tokenize(f"{i.value.get('text', '')} {i.value.get('task', '')}") for i in items]
    words = tokenize(query)
    if words and any(docs):
        scores = [float(s) for s in BM25Plus(docs).get_scores(words)]
    else:
        scores = [0.0] * len(items)
    query_words = set(words)
    matched = [bool(query_words.intersection(doc)) for doc in docs]
    order = sorted(
        range(len(items)),
        key=lambda i: (
            not matched[i],
            -scores[i],
            -items[i].updated_at.timestamp(),
            items[i].key,
        ),
    )
    return [items[i] for i in order[:k]]


def recall(
    store: BaseStore,
    family: str,
    task: str,
    k: int,
    *,
    exclude_thread: str | None,
    exclude_task_id: str | None = None,
    lesson_filter: LessonFilter = "validated",
    ttl_minutes: float | None = None,
    now: datetime | None = None,
) -> Steps[list[str]]:
    """The texts of the ``k`` lessons of ``family`` most relevant to ``task``, never from the
    thread ``exclude_thread`` nor about the same task (the same ``task_id``, or the same task
    text): a lesson is meant to carry over to *other* tasks, and a benchmark rerun must not
    recall what an earlier run learnt on the very question it is answering. With
    ``lesson_filter="validated"`` only lessons marked validated (a later trial of their thread
    succeeded after seeing them) are candidates; an expired lesson (:func:`expired`) never is.
    Relevance is the store's semantic search where it scored the items, BM25 otherwise (see
    the module docstring)."""
    items: list[SearchItem] = yield from stored(
        store,
        "search",
        namespace(family),
        query=task.strip() or None,
        limit=MAX_CANDIDATES,
        refresh_ttl=False,
    )
    same_text = task.strip()
    validated_only = lesson_filter == "validated"
    minutes = lifetime(store, ttl_minutes)
    when = now or datetime.now(UTC)
    others = [
        item
        for item in items
        if str(item.value.get("text", "")).strip()
        and (not validated_only or item.value.get("validated") is True)
        and (exclude_thread is None or item.value.get("thread_id") != exclude_thread)
        and (exclude_task_id is None or item.value.get("task_id") != exclude_task_id)
        and str(item.value.get("task", "")).strip() != same_text
        and not expired(item, minutes, when)
    ]
    scored = [item for item in others if item.score is not None][: max(k, 0)]
    unscored = [item for item in others if item.score is None]
    chosen = [*scored, *rank(unscored, task, k - len(scored))]
    return [str(item.value["text"]).strip() for item in chosen]


S = TypeVar("S", bound=State)


def with_recalled(
    state: S, runtime: Runtime[Any] | None, family: Family
) -> Steps[tuple[S, dict[str, Any]]]:
    """The state an actor's first trial works from, with the lessons recalled for its task
    (:func:`recall_update`), and that update for the actor to return; the state unchanged and
    ``{}`` otherwise."""
    recalled = yield from recall_update(state, state.task, runtime, family)
    return (replace(state, **recalled) if recalled else state), recalled


def recall_update(
    state: Any, task: str, runtime: Runtime[Any] | None, family: Family
) -> Steps[dict[str, Any]]:
    """What an actor adds to its first trial's update: ``{"lessons": [...]}`` recalled for
    ``task`` when ``Context.lessons`` is on; nothing otherwise (no store access) or on later
    trials (the recalled lessons stay fixed for the thread)."""
    ctx = get_context(runtime)
    if not ctx.lessons or state.trial != 0:
        return {}
    store = store_of(runtime)
    found = yield from recall(
        store,
        family_of(family, state, ctx),
        task,
        ctx.lessons.recall_k,
        exclude_thread=current_thread_id(),
        exclude_task_id=getattr(state, "task_id", None),
        lesson_filter=ctx.lessons.filter,
        ttl_minutes=ctx.lessons.ttl_minutes,
    )
    return {"lessons": found}


def validate_lessons(
    store: BaseStore,
    family: str,
    *,
    thread_id: str | None,
    trial: int,
    window: Sequence[str],
    ttl_minutes: float | None = None,
) -> Steps[list[str]]:
    """After trial ``trial`` of thread ``thread_id`` succeeded, mark as validated the thread's
    lessons the actor saw in that trial: those saved after earlier trials (keys
    ``thread:1`` … ``thread:trial-1``) whose text is in the Ω ``window`` (a review may have
    dropped or edited one, and Ω may have pushed an old one out). A retry drawn without the
    memory (a fresh-first draw that was kept, a resample) still had them in its window and
    counts too. Returns their keys. Nothing happens for a first trial or outside a thread
    (lessons saved there have no known key). Marking rewrites the lesson (embedded as when
    saved, with ``ttl_minutes``), so its lifetime starts again."""
    if thread_id is None or trial < 2:
        return []
    shown = {text.strip() for text in window}
    where = namespace(family)
    marked: list[str] = []
    for earlier in range(1, trial):
        key = lesson_key(thread_id, earlier)
        item = yield from stored(store, "get", where, key, refresh_ttl=False)
        if item is None or str(item.value.get("text", "")).strip() not in shown:
            continue
        if item.value.get("validated") is not True:
            yield from put_lesson(
                store, family, key, {**item.value, "validated": True}, ttl_minutes
            )
        marked.append(key)
    return marked
