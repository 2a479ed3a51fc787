"""ReAct's ``Search``/``Lookup`` over any LangChain retriever: a vector store's, a keyword
index, a search API, or langchain-community's Wikipedia integration (``wiki=langchain``).

A retriever ranks documents for a query; the agent expects *the page* of an entity. So
``Search[entity]`` takes the retriever's first document as the page, titled by its metadata
(``title``, else ``source``, else the entity), and reads its first paragraph; the other
documents' titles are the similar pages. ``Lookup[keyword]`` reads that page's sentences. A page
is found again by its title (a resumed thread asks the retriever for it), so nothing but the
title needs to live in the graph state.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from reflexion.core.errors import ReflexionError
from reflexion.qa.wiki import MAX_SIMILAR, Page, SearchHit, normalize_title, split_sentences

_KEPT_PAGES = 256


class RetrieverBackend:
    """A Wikipedia backend (:class:`~reflexion.qa.wiki.WikiBackend`) over ``retriever``.

    ``name`` says which source it is in messages; a retriever that raises (a network error of
    a search API) becomes one line naming the source and ``fix``."""

    def __init__(self, retriever: BaseRetriever, *, name: str = "retriever", fix: str = "") -> None:
        self.retriever = retriever
        self.name = name
        self.fix = fix
        self._pages: OrderedDict[str, Page] = OrderedDict()
        self._lock = threading.Lock()

    def _ask(self, query: str) -> list[Document]:
        try:
            return list(self.retriever.invoke(query))
        except Exception as exc:  # the retriever's own failure: network, index, quota
            hint = f"; {self.fix}" if self.fix else ""
            reason = " ".join(str(exc).split())
            reason = reason if len(reason) <= 160 else reason[:157] + "..."
            raise ReflexionError(
                f"the {self.name} search failed ({type(exc).__name__}: {reason}){hint}"
            ) from None

    def _page(self, document: Document, fallback: str) -> Page:
        metadata = document.metadata or {}
        title = str(metadata.get("title") or metadata.get("source") or fallback).strip()
        paragraphs = [p.strip() for p in document.page_content.split("\n") if p.strip()]
        prose = [p for p in paragraphs if not p.startswith("=")]  # Wikipedia's headings
        sentences = tuple(s for p in prose for s in split_sentences(p))
        page = Page(title=title, sentences=sentences, first_paragraph=prose[0] if prose else "")
        with self._lock:
            self._pages[normalize_title(title)] = page
            self._pages.move_to_end(normalize_title(title))
            while len(self._pages) > _KEPT_PAGES:
                self._pages.popitem(last=False)
        return page

    def search(self, entity: str) -> SearchHit:
        documents = self._ask(entity)
        if not documents:
            return SearchHit(None, ())
        pages = [
            self._page(d, entity if i == 0 else f"{entity} ({i + 1})")
            for i, d in enumerate(documents)
        ]
        similar = tuple(p.title for p in pages[1 : 1 + MAX_SIMILAR])
        return SearchHit(pages[0], similar)

    def page(self, title: str) -> Page | None:
        key = normalize_title(title)
        with self._lock:
            if key in self._pages:
                return self._pages[key]
        for document in self._ask(title):  # a resumed thread: find the page again by title
            page = self._page(document, title)
            if normalize_title(page.title) == key:
                return page
        return None


def wikipedia_retriever(lang: str = "en", **options: Any) -> RetrieverBackend:
    """Wikipedia through langchain-community's ``WikipediaRetriever`` (needs the network):
    ``options`` go to the retriever (``top_k_results``, ``doc_content_chars_max`` …)."""
    with warnings.catch_warnings():  # the package announces its sunset on import
        warnings.filterwarnings(
            "ignore", message=r".*langchain-community.*", category=DeprecationWarning
        )
        from langchain_community.retrievers import WikipediaRetriever

    settings: dict[str, Any] = {"top_k_results": 1 + MAX_SIMILAR, "doc_content_chars_max": 20_000}
    retriever = WikipediaRetriever(lang=lang, **{**settings, **options})
    return RetrieverBackend(
        retriever, name="Wikipedia (langchain)", fix="check the network or use wiki=offline"
    )
