"""ReAct over a LangChain retriever: the same observations as the built-in backends, from a
keyword retriever and from LangChain's in-memory vector store; langchain-community's
Wikipedia retriever as ``wiki=langchain``, whose failures are one line."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.qa import react_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.qa.backends import get_backend
from reflexion.qa.retriever import RetrieverBackend
from reflexion.qa.wiki import LookupCursor, WikiTools

DOCUMENTS = [
    Document(
        "Ada Lovelace was an English mathematician.\nShe was born in London in 1815. "
        "She died in London in 1852.",
        metadata={"title": "Ada Lovelace"},
    ),
    Document("Charles Babbage designed the Analytical Engine.", metadata={"source": "Babbage"}),
    Document("The Analytical Engine was a mechanical computer.", metadata={}),
]


class KeywordRetriever(BaseRetriever):
    """The documents that contain every word of the query, in their order (a LangChain
    retriever like any other)."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = query.lower().split()
        return [d for d in self.documents if all(w in d.page_content.lower() for w in words)]


class Broken(BaseRetriever):
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise ConnectionError("the index is down\nretry later")


def test_search_takes_the_first_document_as_the_page_and_lookup_reads_it() -> None:
    tools = WikiTools(RetrieverBackend(KeywordRetriever(documents=DOCUMENTS)))
    seen, cursor = tools.search("Ada", LookupCursor())
    assert seen == "Ada Lovelace was an English mathematician." and cursor.page == "Ada Lovelace"
    found, cursor = tools.lookup("London", cursor)
    assert found == "(Result 1 / 2) She was born in London in 1815."
    found, _ = tools.lookup("London", cursor)
    assert found == "(Result 2 / 2) She died in London in 1852."
    missing, _ = tools.search("Turing", LookupCursor())
    assert missing == "Could not find [Turing]. Similar: []."


def test_the_other_documents_are_the_similar_pages_titled_by_their_metadata() -> None:
    hit = RetrieverBackend(KeywordRetriever(documents=DOCUMENTS)).search("analytical engine")
    assert hit.page is not None and hit.page.title == "Babbage"  # metadata source
    assert hit.similar == ("analytical engine (2)",)  # no title: the query, numbered


def test_a_resumed_thread_finds_its_page_again_by_title() -> None:
    backend = RetrieverBackend(KeywordRetriever(documents=DOCUMENTS))
    assert backend.page("ada lovelace") is not None  # never searched in this process
    assert backend.page("Grace Hopper") is None


def test_a_failing_retriever_is_one_line_naming_the_fix() -> None:
    backend = RetrieverBackend(Broken(), name="my index", fix="start the index server")
    with pytest.raises(ReflexionError) as caught:
        backend.search("Ada")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("the my index search failed (ConnectionError:")
    assert str(caught.value).endswith("; start the index server")


def test_the_react_graph_runs_over_an_in_memory_vector_store() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(DOCUMENTS)
    retriever = store.as_retriever(search_kwargs={"k": 2})
    first = retriever.invoke("Ada Lovelace")[0]
    actor = ScriptedChatModel(
        replies=[
            "Thought: find her.\nAction: Search[Ada Lovelace]",
            "Thought: t.\nAction: Finish[London]",
        ]
    )
    graph = react_builder(
        actor_model=actor,
        reflector_model=ScriptedChatModel(replies=["Reflection: r."]),
        backend=RetrieverBackend(retriever),
    ).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(
        {"task": "Where was Ada Lovelace born?", "reference": "London"}, config, context=Context()
    )
    trajectory = graph.get_state(config).values["trajectory"]
    assert trajectory[2] == "Observation: " + first.page_content.split("\n")[0]


def test_wiki_langchain_is_langchain_communitys_wikipedia_retriever() -> None:
    """Built without the network; a search without it fails in one line (sockets are off)."""
    backend = get_backend("langchain")
    assert isinstance(backend, RetrieverBackend)
    assert type(backend.retriever).__name__ == "WikipediaRetriever"
    with pytest.raises(
        ReflexionError, match=r"^the Wikipedia \(langchain\) search failed"
    ) as caught:
        backend.search("Ada Lovelace")
    assert str(caught.value).endswith("check the network or use wiki=offline")
