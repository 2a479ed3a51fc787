"""The Wikipedia a ReAct run's context names (``ReActContext.wiki``): one backend per kind
and corpus, shared by the process's runs."""

from __future__ import annotations

from functools import lru_cache

from reflexion.core.errors import ReflexionError
from reflexion.qa.retriever import wikipedia_retriever
from reflexion.qa.wiki import LiveWikipedia, OfflineCorpus, WikiBackend


@lru_cache(maxsize=8)
def get_backend(kind: str, corpus: str | None = None) -> WikiBackend:
    """The backend named by the run context: ``offline`` (with a corpus file), ``live`` (the
    ``wikipedia`` package) or ``langchain`` (langchain-community's ``WikipediaRetriever``; any
    other LangChain retriever is :class:`~reflexion.qa.retriever.RetrieverBackend`)."""
    if kind == "live":
        return LiveWikipedia()
    if kind == "offline":
        return OfflineCorpus.from_hotpotqa(corpus)
    if kind == "langchain":
        return wikipedia_retriever()
    raise ReflexionError(f"unknown Wikipedia backend '{kind}': use offline, live or langchain")
