"""Search and Lookup over the offline corpus and the live backend (with a scripted client)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from reflexion.core.errors import ReflexionError
from reflexion.qa.backends import get_backend
from reflexion.qa.wiki import (
    LiveWikipedia,
    LookupCursor,
    OfflineCorpus,
    WikiTools,
)
from tests.conftest import hotpotqa_line

PAGES = {
    "Ada Lovelace": [
        "Augusta Ada King, Countess of Lovelace, was an English mathematician and writer. ",
        "She was born in London in 1815. ",
        "She wrote the first published algorithm for Babbage's engine. ",
        "Lovelace was born the only legitimate child of Lord Byron.",
    ],
    "Charles Babbage": [
        "Charles Babbage was an English polymath who originated the idea of a digital "
        "programmable computer. ",
        "He designed the Analytical Engine.",
    ],
    "Mercury (planet)": ["Mercury is the smallest planet in the Solar System."],
    "Mercury (element)": ["Mercury is a chemical element with the symbol Hg."],
    "Mercury Records": ["Mercury Records is an American record label."],
    "Erdős number": ["The Erdős number describes collaboration distance to Paul Erdős."],
    "Analytical Engine (film)": ["Analytical Engine is a short film about computing."],
    "VIVA Media": ["VIVA Media GmbH (until 2004 VIVA Media AG) is a music television network."],
    "Missouri Compromise": ["The Missouri Compromise is the legislation passed in 1820."],
}


def write_hotpotqa(path: Path, pages: dict[str, list[str]]) -> Path:
    items = list(pages.items())
    lines = []
    for i in range(0, len(items), 3):
        chunk = items[i : i + 3]
        lines.append(hotpotqa_line(f"q{i}", "A question?", "an answer", [[t, s] for t, s in chunk]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> OfflineCorpus:
    data = write_hotpotqa(tmp_path / "data.jsonl", PAGES)
    return OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")


@pytest.fixture
def tools(corpus: OfflineCorpus) -> WikiTools:
    return WikiTools(corpus)


def search(tools: WikiTools, entity: str) -> tuple[str, LookupCursor]:
    return tools.search(entity, LookupCursor())


def test_corpus_holds_every_distinct_title(corpus):
    assert len(corpus) == len(PAGES)


def test_search_exact_title_returns_first_paragraph(tools):
    observation, cursor = search(tools, "Charles Babbage")
    assert observation.startswith("Charles Babbage was an English polymath")
    assert "Analytical Engine." in observation
    assert cursor == LookupCursor(page="Charles Babbage")


@pytest.mark.parametrize("entity", ["ada lovelace", "  Ada   Lovelace ", "'Ada Lovelace'"])
def test_search_ignores_case_spacing_and_quotes(tools, entity):
    observation, cursor = search(tools, entity)
    assert cursor.page == "Ada Lovelace"
    assert observation.startswith("Augusta Ada King")


def test_search_ignores_accents(tools):
    _obs, cursor = search(tools, "Erdos number")
    assert cursor.page == "Erdős number"


def test_unique_disambiguated_title_is_found_like_a_redirect(tools):
    _obs, cursor = search(tools, "Analytical Engine")
    assert cursor.page == "Analytical Engine (film)"


@pytest.mark.parametrize(
    ("entity", "page"),
    [
        ("VIVA Media AG", "VIVA Media"),
        ("The Missouri Compromise", "Missouri Compromise"),
        ("Media AG", None),  # the title does not stand in the query word for word
        ("Ada Lovelace Byron family", None),  # the title is only half of the query
        ("Mercury Records label", "Mercury Records"),
    ],
)
def test_a_longer_query_around_one_title_is_found_like_a_redirect(tools, entity, page):
    observation, cursor = search(tools, entity)
    assert cursor.page == page
    assert observation.startswith("Could not find") == (page is None)


def test_ambiguous_title_lists_the_candidates(tools):
    observation, cursor = search(tools, "Mercury")
    assert observation.startswith("Could not find [Mercury]. Similar: [")
    assert "'Mercury (planet)'" in observation and "'Mercury (element)'" in observation
    assert cursor == LookupCursor()


def test_unknown_entity_lists_similar_titles_ranked_by_bm25(tools):
    observation, _ = search(tools, "Babbage engine designer")
    assert observation.startswith("Could not find [Babbage engine designer]. Similar: [")
    similar = observation.split("Similar: [", 1)[1]
    assert similar.startswith("'Charles Babbage'")  # title match outweighs body matches


def test_search_with_nothing_similar(tools):
    assert search(tools, "zzqx")[0] == "Could not find [zzqx]. Similar: []."


@pytest.mark.parametrize("entity", ["", "   ", '"', "()", "AND OR NOT", "a*b:c^d"])
def test_search_odd_entities_never_raise(tools, entity):
    observation, _ = search(tools, entity)
    assert observation


def test_lookup_walks_through_matching_sentences(tools):
    _obs, cursor = search(tools, "Ada Lovelace")
    first, cursor = tools.lookup("born", cursor)
    second, cursor = tools.lookup("BORN", cursor)
    third, cursor = tools.lookup("born", cursor)
    assert first == "(Result 1 / 2) She was born in London in 1815."
    assert second.startswith("(Result 2 / 2) Lovelace was born the only")
    assert third == "No more results for [born] on the page [Ada Lovelace]."


def test_new_keyword_restarts_the_lookup(tools):
    _obs, cursor = search(tools, "Ada Lovelace")
    _, cursor = tools.lookup("born", cursor)
    again, cursor = tools.lookup("algorithm", cursor)
    assert again.startswith("(Result 1 / 1) She wrote the first published algorithm")


def test_a_new_search_moves_the_lookup_to_that_page(tools):
    _obs, cursor = search(tools, "Ada Lovelace")
    _obs, cursor = tools.search("Charles Babbage", cursor)
    observation, _ = tools.lookup("born", cursor)
    assert observation == "No results for [born] on the page [Charles Babbage]."


def test_lookup_before_any_search(tools):
    observation, cursor = tools.lookup("born", LookupCursor())
    assert observation == "No page to look up in yet: use Search[entity] first."
    assert cursor == LookupCursor()


def test_failed_search_keeps_the_previous_page(tools):
    _obs, cursor = search(tools, "Ada Lovelace")
    _obs, cursor = tools.search("zzqx", cursor)
    assert tools.lookup("London", cursor)[0].startswith("(Result 1 / 1) She was born in London")


def test_cursor_round_trips_through_state(tools):
    _obs, cursor = search(tools, "Ada Lovelace")
    _, cursor = tools.lookup("born", cursor)
    restored = LookupCursor.from_dict(json.loads(json.dumps(cursor.as_dict())))
    assert tools.lookup("born", restored)[0].startswith("(Result 2 / 2)")


def test_corpus_is_built_once_per_file_content(tmp_path):
    data = write_hotpotqa(tmp_path / "data.jsonl", PAGES)
    first = OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")
    again = OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")
    assert first.db_path == again.db_path
    write_hotpotqa(data, {"Only Page": ["Just one."]})
    changed = OfflineCorpus.from_hotpotqa(data, cache_dir=tmp_path / "cache")
    assert changed.db_path != first.db_path and len(changed) == 1
    assert not list((tmp_path / "cache").glob("*.tmp"))


def test_bundled_sample_corpus_has_its_thousand_paragraphs(tmp_path):
    corpus = OfflineCorpus.from_hotpotqa(cache_dir=tmp_path)
    assert 900 <= len(corpus) <= 1000  # 100 questions x 10 paragraphs, shared titles merged
    assert corpus.search("VIVA Media").page is not None


def test_missing_corpus_file_is_one_clear_error(tmp_path):
    with pytest.raises(ReflexionError, match=r"cannot read the corpus file .*nope\.jsonl"):
        OfflineCorpus.from_hotpotqa(tmp_path / "nope.jsonl", cache_dir=tmp_path)


def test_unknown_backend_is_one_clear_error():
    with pytest.raises(ReflexionError, match="use offline, live or langchain"):
        get_backend("dbpedia")


# ---- live backend, with a scripted stand-in for the wikipedia package ------------------------


class PageError(Exception):
    pass


class DisambiguationError(Exception):
    def __init__(self, title: str, options: list[str]) -> None:
        super().__init__(title)
        self.options = options


class ScriptedWikipedia:
    """The three functions and two exceptions of the ``wikipedia`` package we use."""

    exceptions = SimpleNamespace(PageError=PageError, DisambiguationError=DisambiguationError)

    def __init__(self, offline: bool = False) -> None:
        self.offline = offline
        self.calls: list[tuple[str, Any]] = []

    def page(self, title: str, auto_suggest: bool = True, redirect: bool = True) -> Any:
        self.calls.append(("page", title))
        if self.offline:
            raise ConnectionError("Max retries exceeded with url: /w/api.php")
        if title == "Ada Lovelace":
            content = (
                "Augusta Ada King was an English mathematician. She was born in London.\n\n"
                "== Early life ==\nHer father was Lord Byron. Byron was born in 1788."
            )
            return SimpleNamespace(title="Ada Lovelace", content=content)
        if title == "Mercury":
            raise DisambiguationError("Mercury", ["Mercury (planet)", "Mercury (element)"])
        raise PageError(title)

    def search(self, query: str, results: int = 10) -> list[str]:
        self.calls.append(("search", query))
        return ["Ada Lovelace", "Ada (programming language)"][:results]


def test_live_search_returns_first_paragraph_and_lookup_reads_the_whole_page():
    tools = WikiTools(LiveWikipedia(client=ScriptedWikipedia()))
    observation, cursor = search(tools, "Ada Lovelace")
    assert observation == "Augusta Ada King was an English mathematician. She was born in London."
    first, cursor = tools.lookup("born", cursor)
    second, cursor = tools.lookup("born", cursor)
    assert first == "(Result 1 / 2) She was born in London."
    assert second == "(Result 2 / 2) Byron was born in 1788."


def test_live_missing_page_lists_search_suggestions():
    client = ScriptedWikipedia()
    observation, _ = search(WikiTools(LiveWikipedia(client=client)), "Lovelace Ada")
    assert observation == (
        "Could not find [Lovelace Ada]. Similar: ['Ada Lovelace', 'Ada (programming language)']."
    )


def test_live_disambiguation_lists_its_options():
    observation, _ = search(WikiTools(LiveWikipedia(client=ScriptedWikipedia())), "Mercury")
    assert (
        observation
        == "Could not find [Mercury]. Similar: ['Mercury (planet)', 'Mercury (element)']."
    )


def test_live_pages_are_fetched_once():
    client = ScriptedWikipedia()
    tools = WikiTools(LiveWikipedia(client=client))
    _obs, cursor = search(tools, "Ada Lovelace")
    tools.lookup("born", cursor)
    tools.lookup("born", cursor)
    assert client.calls == [("page", "Ada Lovelace")]


def test_live_network_failure_is_one_clear_error():
    tools = WikiTools(LiveWikipedia(client=ScriptedWikipedia(offline=True)))
    with pytest.raises(ReflexionError, match=r"Wikipedia could not be reached .*wiki=offline"):
        search(tools, "Ada Lovelace")


@pytest.mark.parametrize("backend", ["offline", "live"])
def test_both_backends_speak_the_same_messages(backend, corpus):
    source = corpus if backend == "offline" else LiveWikipedia(client=ScriptedWikipedia())
    tools = WikiTools(source)
    observation, cursor = search(tools, "Ada Lovelace")
    assert observation.startswith("Augusta Ada King")
    assert tools.lookup("born", cursor)[0].startswith("(Result 1 / 2) She was born in London")
    assert search(tools, "Nothing Here Zzq")[0].startswith("Could not find [Nothing Here Zzq]. ")
