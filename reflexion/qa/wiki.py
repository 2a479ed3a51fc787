"""Wikipedia for the ReAct agent: ``Search[entity]`` and ``Lookup[keyword]`` over two backends.

Both backends answer the same two questions — "which page is this entity?" and "what are the
sentences of this page?" — and :class:`WikiTools` turns the answers into the observations the
agent reads, so the messages are identical whichever backend runs:

* :class:`LiveWikipedia` asks Wikipedia itself through the ``wikipedia`` package (needs a
  network connection);
* :class:`OfflineCorpus` searches a local SQLite database built from the context paragraphs of
  any HotPotQA-format file: an exact (or disambiguated) title match first, then full-text ranking
  with SQLite FTS5 and BM25, titles weighted above text.

The tools keep no state of their own: which page was searched last and how far a ``Lookup`` has
got live in the graph state (:class:`LookupCursor`), so a checkpointed thread resumes exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from reflexion.core.data import bundled, cache_root
from reflexion.core.errors import ReflexionError
from reflexion.qa.questions import HOTPOTQA_SAMPLE, iter_hotpotqa

MAX_SIMILAR = 5
"""How many similar titles a failed search lists."""
MAX_OBSERVATION_CHARS = 1200
"""Observations longer than this are cut (the agent's context budget is small)."""


@dataclass(frozen=True)
class Page:
    """A page as the tools see it: a title and its sentences (the first paragraph first)."""

    title: str
    sentences: tuple[str, ...]
    first_paragraph: str


@dataclass(frozen=True)
class SearchHit:
    """A backend's answer to a search: the page, or titles of similar pages."""

    page: Page | None
    similar: tuple[str, ...] = ()


class WikiBackend(Protocol):
    """What a Wikipedia source must provide."""

    name: str

    def search(self, entity: str) -> SearchHit:
        """The page for ``entity``, or similar titles when there is no such page."""
        ...

    def page(self, title: str) -> Page | None:
        """The page with exactly this title (as returned by :meth:`search`)."""
        ...


# ---- sentences -------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences (a light rule, the same for both backends)."""
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


def _clip(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def normalize_title(title: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a title, for matching."""
    text = unicodedata.normalize("NFKD", title)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def base_title(title: str) -> str:
    """A title without its disambiguation suffix: ``Mercury (planet)`` → ``Mercury``."""
    # No leading \s* in the pattern (strip() drops that blank): tried from every position of a
    # long blank run it would rescan the rest of the run (quadratic).
    return re.sub(r"\([^()]*\)\s*$", "", title).strip() or title


def redirect_target(query: str, titles: Iterable[str]) -> str | None:
    """The one title among ``titles`` that a Wikipedia redirect from the normalized ``query``
    would most likely lead to: a title of two or more words that stands in the query word for
    word and makes up at least two thirds of it ("VIVA Media AG" → "VIVA Media", "The
    Missouri Compromise" → "Missouri Compromise"); ``None`` when none or several do."""
    words = query.split()
    hits = []
    for title in titles:
        part = normalize_title(base_title(title)).split()
        if not 2 <= len(part) < len(words) or 3 * len(part) < 2 * len(words):
            continue
        if any(words[i : i + len(part)] == part for i in range(len(words) - len(part) + 1)):
            hits.append(title)
    return hits[0] if len(hits) == 1 else None


# ---- the tools --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LookupCursor:
    """Where the agent is: the last page searched and the progress of its current lookup."""

    page: str | None = None
    keyword: str | None = None
    index: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"page": self.page, "keyword": self.keyword, "index": self.index}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LookupCursor:
        data = data or {}
        return cls(page=data.get("page"), keyword=data.get("keyword"), index=data.get("index", 0))


class WikiTools:
    """``Search`` and ``Lookup`` observations over a backend (stateless; see LookupCursor)."""

    def __init__(self, backend: WikiBackend) -> None:
        self.backend = backend

    def search(self, entity: str, cursor: LookupCursor) -> tuple[str, LookupCursor]:
        entity = " ".join(entity.split()).strip("\"' ")
        if not entity:
            return "Search needs an entity: Search[entity].", cursor
        hit = self.backend.search(entity)
        if hit.page is None:
            similar = ", ".join(f"'{t}'" for t in hit.similar[:MAX_SIMILAR])
            return f"Could not find [{entity}]. Similar: [{similar}].", cursor
        return _clip(hit.page.first_paragraph), LookupCursor(page=hit.page.title)

    def lookup(self, keyword: str, cursor: LookupCursor) -> tuple[str, LookupCursor]:
        keyword = " ".join(keyword.split()).strip("\"' ")
        if not keyword:
            return "Lookup needs a keyword: Lookup[keyword].", cursor
        if cursor.page is None:
            return "No page to look up in yet: use Search[entity] first.", cursor
        page = self.backend.page(cursor.page)
        if page is None:  # the backend lost the page (a live page deleted meanwhile)
            return f"The page [{cursor.page}] is no longer available.", LookupCursor()
        needle = keyword.lower()
        found = [s for s in page.sentences if needle in s.lower()]
        index = cursor.index if needle == (cursor.keyword or "").lower() else 0
        nxt = LookupCursor(page=cursor.page, keyword=keyword, index=index + 1)
        if not found:
            return f"No results for [{keyword}] on the page [{page.title}].", nxt
        if index >= len(found):
            return f"No more results for [{keyword}] on the page [{page.title}].", nxt
        return f"(Result {index + 1} / {len(found)}) {_clip(found[index])}", nxt


# ---- offline corpus --------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE pages (title TEXT PRIMARY KEY, norm TEXT NOT NULL, base TEXT NOT NULL,
                    sentences TEXT NOT NULL);
CREATE INDEX pages_norm ON pages(norm);
CREATE INDEX pages_base ON pages(base);
CREATE VIRTUAL TABLE pages_fts USING fts5(title, body, tokenize='unicode61 remove_diacritics 2');
"""
_WORD = re.compile(r"\w+", re.UNICODE)


class OfflineCorpus:
    """Wikipedia paragraphs from a HotPotQA-format file, searchable offline with SQLite FTS5.

    Each distinct title becomes a page whose text is its paragraph (HotPotQA paragraphs are the
    opening paragraphs of Wikipedia articles). The database is built once per file content and
    cached under ``$REFLEXION_CACHE_DIR/corpus`` (build with :meth:`from_hotpotqa`).
    """

    name = "offline"

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._local = threading.local()

    @property
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
            self._local.conn = conn
        return conn

    @classmethod
    def from_hotpotqa(
        cls, path: str | Path | None = None, cache_dir: Path | None = None
    ) -> OfflineCorpus:
        """The corpus of a HotPotQA JSONL file (default: the bundled sample), built if needed."""
        file = Path(path) if path is not None else bundled(HOTPOTQA_SAMPLE)
        try:
            digest = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        except OSError as exc:
            raise ReflexionError(
                f"cannot read the corpus file {file}: {exc.strerror}; "
                "pass a HotPotQA-format JSONL file"
            ) from None
        directory = cache_dir or cache_root("corpus")
        db_path = directory / f"hotpotqa-{digest}.sqlite"
        if not db_path.is_file():
            directory.mkdir(parents=True, exist_ok=True)
            pages: dict[str, list[str]] = {}
            for question in iter_hotpotqa(file):
                for title, sentences in question.paragraphs:
                    pages.setdefault(title, sentences)
            build_corpus(db_path, pages.items())
        return cls(db_path)

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM pages").fetchone()[0])

    def page(self, title: str) -> Page | None:
        row = self._conn.execute(
            "SELECT title, sentences FROM pages WHERE title = ?", (title,)
        ).fetchone()
        return _page(row[0], json.loads(row[1])) if row else None

    def search(self, entity: str) -> SearchHit:
        norm = normalize_title(entity)
        if not norm:
            return SearchHit(None)
        row = self._conn.execute(
            "SELECT title, sentences FROM pages WHERE norm = ? ORDER BY length(title) LIMIT 1",
            (norm,),
        ).fetchone()
        if row is None:
            # "Mercury" finds "Mercury (planet)" when that is the only such page, like a
            # Wikipedia redirect; several candidates are a disambiguation: list them.
            rows = self._conn.execute(
                "SELECT title, sentences FROM pages WHERE base = ? LIMIT 6", (norm,)
            ).fetchall()
            if len(rows) == 1:
                row = rows[0]
            elif rows:
                return SearchHit(None, tuple(r[0] for r in rows))
        if row is not None:
            return SearchHit(_page(row[0], json.loads(row[1])))
        similar = self.rank(entity, MAX_SIMILAR)
        target = redirect_target(norm, similar)
        if target is not None:
            found = self.page(target)
            if found is not None:
                return SearchHit(found)
        return SearchHit(None, tuple(similar))

    def rank(self, text: str, k: int = MAX_SIMILAR) -> list[str]:
        """Titles ranked by BM25 over title (weight 4) and text (weight 1)."""
        words = _WORD.findall(text.lower())
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', "") + '"' for w in dict.fromkeys(words))
        try:
            rows = self._conn.execute(
                "SELECT title FROM pages_fts WHERE pages_fts MATCH ? "
                "ORDER BY bm25(pages_fts, 4.0, 1.0) LIMIT ?",
                (query, k),
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [r[0] for r in rows]


def _page(title: str, sentences: list[str]) -> Page:
    clean = tuple(" ".join(s.split()) for s in sentences if s.strip())
    return Page(title=title, sentences=clean, first_paragraph=" ".join(clean))


def build_corpus(db_path: Path, pages: Iterable[tuple[str, list[str]]]) -> None:
    """Write an offline corpus database (atomically: a crash leaves no half-built file)."""
    tmp = db_path.with_name(f"{db_path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    try:
        conn.executescript(_SCHEMA)
        for title, sentences in pages:
            body = " ".join(" ".join(s.split()) for s in sentences)
            conn.execute(
                "INSERT OR IGNORE INTO pages VALUES (?, ?, ?, ?)",
                (
                    title,
                    normalize_title(title),
                    normalize_title(base_title(title)),
                    json.dumps(sentences),
                ),
            )
            conn.execute("INSERT INTO pages_fts VALUES (?, ?)", (title, body))
        conn.commit()
    finally:
        conn.close()
    os.replace(tmp, db_path)


# ---- live Wikipedia --------------------------------------------------------------------------


class LiveWikipedia:
    """Wikipedia over the network with the ``wikipedia`` package.

    ``client`` is the ``wikipedia`` module (tests pass a scripted stand-in with the same
    functions and exceptions). Pages are cached in memory for the process.
    """

    name = "live"

    def __init__(self, client: ModuleType | Any | None = None, lang: str = "en") -> None:
        if client is None:
            import wikipedia

            client = wikipedia
            client.set_lang(lang)
        self.client = client
        self._page = lru_cache(maxsize=256)(self._fetch)

    def _unreachable(self, exc: Exception) -> ReflexionError:
        return ReflexionError(
            f"Wikipedia could not be reached ({type(exc).__name__}: {exc}); "
            "check the network or use wiki=offline"
        )

    def _fetch(self, title: str) -> Page | tuple[str, ...]:
        """The page, or the options of a disambiguation page (empty when there is no page)."""
        exceptions = self.client.exceptions
        try:
            page = self.client.page(title, auto_suggest=False, redirect=True)
            content = str(page.content)
        except exceptions.DisambiguationError as exc:
            return tuple(str(o) for o in exc.options[:MAX_SIMILAR])
        except exceptions.PageError:
            return ()
        except Exception as exc:  # requests errors, bad JSON, timeouts
            raise self._unreachable(exc) from None
        paragraphs = [p.strip() for p in content.split("\n") if p.strip()]
        prose = [p for p in paragraphs if not p.startswith("=")]
        sentences = tuple(s for p in prose for s in split_sentences(p))
        return Page(
            title=str(page.title), sentences=sentences, first_paragraph=prose[0] if prose else ""
        )

    def page(self, title: str) -> Page | None:
        result = self._page(title)
        return result if isinstance(result, Page) else None

    def search(self, entity: str) -> SearchHit:
        result = self._page(entity)
        if isinstance(result, Page):
            return SearchHit(result)
        if result:
            return SearchHit(None, result)
        try:
            similar = self.client.search(entity, results=MAX_SIMILAR)
        except Exception as exc:
            raise self._unreachable(exc) from None
        return SearchHit(None, tuple(str(t) for t in similar))
