"""A headline figure quoted on two pages is the same figure.

``HEADLINE`` is the registry: each headline row of the README's "What it buys" table, keyed by
its benchmark and model, with its five figures. Every page whose table has the columns
"one attempt", "blind redraws" and "the loop" (the README, the home page, the results
overview) is read cell by cell: a row whose benchmark and model are in the registry must quote
its figures, and no such table may hold a benchmark the registry lacks. Each registry row must
be on every one of those pages, so a figure changed on one page and not the others fails.
``OTHER`` holds figures in the same columns that are not headline rows (the LLM judge's, the
paper's loop): a page may quote them beside the headline rows. ``choosing a loop`` quotes some
of the headline rows: each of its rows must be in a registry and quote it. The results page
that each row of the results overview links to (where the figure was measured) must quote the
row's figures too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = "link"
"""The key under which :func:`headline_tables` keeps a row's link target."""
PAGES = ["README.md", "docs/index.md", "docs/results/index.md"]
"""The pages that quote the headline table."""
PARTIAL = ["docs/guide/choosing.md"]
"""Pages whose table of the same columns quotes a choice of the headline rows and of ``OTHER``."""

COLUMNS = ("tasks", "one attempt", "blind redraws", "the loop", "loop against redraws")

HEADLINE: dict[tuple[str, str], tuple[str, ...]] = {
    # (benchmark, model): (tasks, one attempt, blind redraws, the loop, loop against redraws)
    ("HumanEval, Python", "0.5B"): ("164", "94", "113", "111", "+1/−3, p = 0.63"),
    ("HumanEval, Python", "1.5B"): ("164", "104", "121", "122", "+4/−3, p = 1.0"),
    ("HumanEval, Python, own tests only", "0.5B"): ("164", "94", "105", "106", "+9/−8, p = 1.0"),
    ("HumanEval, Python, own tests only", "1.5B"): ("164", "104", "113", "115", "+6/−4, p = 0.75"),
    ("HumanEval-Rust", "0.5B"): ("156", "36", "51", "59", "+12/−4, p = 0.077"),
    ("HumanEval-Rust", "1.5B"): ("156", "66", "95", "97", "+7/−5, p = 0.77"),
    ("HotPotQA, CoT with the gold paragraphs", "0.5B"): (
        "100",
        "36",
        "46",
        "48",
        "+4/−2, p = 0.69",
    ),
    ("HotPotQA, CoT with the gold paragraphs", "1.5B"): (
        "100",
        "51",
        "65",
        "69",
        "+4/−0, p = 0.125",
    ),
    ("ALFWorld, 24 games", "1.5B"): ("24", "0", "3", "6", "+5/−2, p = 0.45"),
}
"""The headline figures, as the README quotes them (bold marks the best of a row, and is
ignored)."""

OTHER: dict[tuple[str, str], tuple[str, ...]] = {
    ("HotPotQA, CoT with the gold paragraphs, an LLM judge", "0.5B"): (
        "100",
        "33",
        "34",
        "34",
        "+0/−0",
    ),
    ("HotPotQA, CoT with the gold paragraphs, an LLM judge", "1.5B"): (
        "100",
        "47",
        "47",
        "46",
        "+0/−1, p = 1.0",
    ),
    (
        "the paper's loop on our models (`--preset paper`, whole HumanEval, default model)",
        "0.5B",
    ): ("164", "94", "105", "89", "+1/−17, p = 0.00015"),
}
"""Figures in the same columns that are not headline rows."""

REGISTRY = {**HEADLINE, **OTHER}
"""Every row a page may quote in the headline columns."""


def plain(cell: str) -> str:
    """A cell's text without its link target, bold and surrounding space."""
    cell = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", cell)
    return cell.replace("**", "").strip()


def headline_tables(text: str) -> list[dict[str, str]]:
    """Each row, as {column: plain cell}, of every table whose header has ``COLUMNS``; its
    first cell's link target, if any, under ``LINK``."""
    found: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [plain(c) for c in line.strip().strip("|").split(" | ")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        if all(c in header for c in COLUMNS):
            row = dict(zip(header, cells, strict=False))
            link = re.match(r"\| \[[^]]*\]\(([^)#]+)", line)
            row[LINK] = link.group(1) if link else ""
            found.append(row)
    return found


def test_the_check_reads_a_page_that_disagrees():
    """The check can fail: a page quoting a figure the registry does not hold is caught."""
    page = (
        (ROOT / "README.md")
        .read_text()
        .replace("| 104 | 121 | **122** |", "| 104 | 121 | **125** |")
    )
    assert disagreements("README.md", page)


def disagreements(name: str, text: str, *, partial: bool = False) -> list[str]:
    """What a page quotes differently from the registries (a row of ``OTHER`` may stand beside
    the headline rows); a ``partial`` page need not hold every headline row."""
    rows = headline_tables(text)
    problems = []
    seen = set()
    for row in rows:
        key = (row["benchmark"], row["model"])
        if key not in REGISTRY:
            problems.append(f"{name}: {key} is not a headline figure of the registry")
            continue
        seen.add(key)
        quoted = tuple(row[c] for c in COLUMNS)
        if quoted != REGISTRY[key]:
            problems.append(f"{name}: {key} quotes {quoted}, the registry {REGISTRY[key]}")
    if not partial:
        problems += [f"{name}: {key} is missing" for key in HEADLINE if key not in seen]
    elif not seen:
        problems.append(f"{name}: no row of the registry found")
    return problems


@pytest.mark.parametrize("name", PAGES)
def test_every_page_quotes_the_headline_figures_as_the_registry_holds_them(name):
    assert not disagreements(name, (ROOT / name).read_text())


@pytest.mark.parametrize("name", PARTIAL)
def test_a_page_quoting_some_rows_quotes_them_as_the_registry_holds_them(name):
    assert not disagreements(name, (ROOT / name).read_text(), partial=True)


def test_the_partial_check_reads_a_page_that_disagrees():
    """A figure of the choosing page changed alone is caught too."""
    page = (ROOT / "docs/guide/choosing.md").read_text().replace("| 95 | 97 |", "| 95 | 98 |")
    assert disagreements("choosing.md", page, partial=True)


def test_no_other_page_holds_a_headline_table():
    """A page that adds the headline table joins ``PAGES``, so its figures are checked too."""
    holders = {
        p.relative_to(ROOT).as_posix()
        for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        if headline_tables(p.read_text())
    }
    assert holders == set(PAGES) | set(PARTIAL)


def source_pages() -> dict[tuple[str, str], Path]:
    """The results page each row of the results overview's headline table links to, by its
    (benchmark, model) key."""
    rows = headline_tables((ROOT / "docs/results/index.md").read_text())
    return {
        (row["benchmark"], row["model"]): ROOT / "docs/results" / row[LINK]
        for row in rows
        if (row["benchmark"], row["model"]) in REGISTRY and row[LINK]
    }


def unquoted(key: tuple[str, str], page_text: str) -> list[str]:
    """The figures of a registry row (one attempt, blind redraws, the loop, and the +/− of the
    loop against redraws) that its source page does not quote anywhere."""
    figures = REGISTRY[key]
    wanted = [*figures[1:4], figures[4].split(",")[0]]
    return [
        f for f in wanted if not re.search(rf"(?<![\d.+−/]){re.escape(f)}(?![\d./])", page_text)
    ]


def test_every_registry_row_links_its_source_page():
    assert set(source_pages()) >= set(HEADLINE)


@pytest.mark.parametrize("key", sorted(source_pages()), ids=lambda k: f"{k[0]} {k[1]}")
def test_each_rows_source_page_quotes_its_figures(key):
    """The page a headline figure comes from holds it: a remeasured page that changes a figure
    without the overview (or the reverse) fails."""
    assert unquoted(key, source_pages()[key].read_text()) == []


def test_the_source_check_reads_a_page_that_lost_a_figure():
    key = ("HumanEval-Rust", "0.5B")
    text = source_pages()[key].read_text().replace("59", "60").replace("+12/−4", "+13/−4")
    assert unquoted(key, text) == ["59", "+12/−4"]
