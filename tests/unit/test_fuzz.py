"""Property-based fuzzing of every parser of model output (and of prompt or title text).

Each parser gets arbitrary text: any Unicode, empty strings, nested and unbalanced brackets,
partial code fences, mixed newlines, fragments of the formats it reads, and inputs of about
200 KB built from a repeated fragment between a short head and tail. The property is always
the same: a result of the declared type, or the typed "unparseable" outcome, with its
invariants; never an exception, never a hang.

Large inputs come two ways: random ones, and a deterministic sweep in which every opener of
a module's formats (``Finish[``, a code fence, ``assert!(f()``...) is followed by a 100 KB run
of each of :data:`RUNS` and a character that makes the match fail.

A hang is caught two ways: Hypothesis's per-example ``deadline`` and a CPU-time alarm
(``bounded`` in ``tests/hangkit.py``, SIGVTALRM) that interrupts a parser still running after
a few seconds of CPU.
The regex engine checks for signals while it backtracks, so an input that sends a regex into
quadratic (or worse) backtracking fails in seconds, naming the parser and the input's size,
instead of running for hours: at 100-200 KB a linear parser takes milliseconds and a
quadratic one minutes. CPU time, not wall time, so a busy machine does not fail the tests.

Profiles: ``fuzz-ci`` (the default: 2,500 examples per parser, derandomised so CI is
deterministic), ``fuzz-dev`` (100 examples, for development) and ``fuzz-deep`` (20,000 fresh
random examples per parser, to hunt for new bugs). Pick one with
``REFLEXION_FUZZ_PROFILE=fuzz-dev``. The settings are applied per test, so the other
Hypothesis tests of the suite keep their own.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reflexion.alfworld.diagnosis import explained, found_leads
from reflexion.alfworld.turns import (
    NOTHING,
    ParsedTurn,
    Turn,
    classify_failure,
    hallucinated_actions,
    heuristic_trip,
    parse_turn,
)
from reflexion.core.answers import exact_match, normalize_answer
from reflexion.core.errors import DatasetError
from reflexion.harness.scoring.alfworld import FAILURE_CLASSES
from reflexion.nodes.programming.feedback import render_outcomes
from reflexion.nodes.programming.test_writer import valid_tests
from reflexion.nodes.replies import Verdict, clean_reflection, parse_verdict
from reflexion.programming.context import CodeContext
from reflexion.programming.examples import example_tests
from reflexion.programming.problems import (
    CodeProblem,
    Language,
    assemble,
    language_of,
    python_preamble,
    rust_preamble,
)
from reflexion.programming.replies import CodeParse, candidate_tests, extract_code, tidy_python
from reflexion.programming.sandbox import SuiteResult, counted
from reflexion.qa.parsing import FinishParse, ReactStepParse, parse_finish, parse_react_step
from reflexion.qa.wiki import (
    LookupCursor,
    OfflineCorpus,
    WikiTools,
    base_title,
    build_corpus,
    normalize_title,
    split_sentences,
)
from tests.hangkit import bounded

# ---- profiles ---------------------------------------------------------------------------------

_COMMON: dict[str, Any] = {
    "derandomize": True,
    "database": None,
    "deadline": timedelta(seconds=10),  # generous: wall time, shared with a busy machine
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("fuzz-ci", max_examples=2500, **_COMMON)
settings.register_profile("fuzz-dev", max_examples=100, **_COMMON)
settings.register_profile("fuzz-deep", max_examples=20_000, **{**_COMMON, "derandomize": False})
FUZZ = settings(settings.get_profile(os.environ.get("REFLEXION_FUZZ_PROFILE", "fuzz-ci")))
"""Ordinary-sized text: the bulk of the examples (every parser of a module sees each one)."""
SOME = settings(FUZZ, max_examples=max(10, FUZZ.max_examples * 2 // 5))
"""Structured inputs that cost more to generate (JSON objects, test results)."""
LARGE = settings(FUZZ, max_examples=max(5, FUZZ.max_examples // 100), deadline=None)
"""About 200 KB per example: each costs milliseconds to parse, so fewer of them; the SIGALRM
guard stands in for the deadline."""

LARGE_SIZE = 200_000
SWEEP_SIZE = 100_000
"""The deterministic sweep's runs: at this length a quadratic regex already takes well over
LARGE_LIMIT_S, a linear parser a few milliseconds."""
LARGE_LIMIT_S = 10.0

T = TypeVar("T")


def big(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return bounded(fn, *args, limit=LARGE_LIMIT_S, **kwargs)


# ---- strategies -------------------------------------------------------------------------------

FRAGMENTS = [
    # brackets, fences, newlines, whitespace
    "[", "]", "[[", "]]", "[]", "(", ")", "()", "{", "}", "{}", "`", "```", "```python\n",
    "```rust\n", "```py", "\n```", "\n```\n", "``` \n", "\n", "\r\n", "\r", "\n\n", "\u2028",
    "\x0b", "\x0c", "\x85", "\x1c", " ", "  ", "\t", "\u00a0", "\u3000",
    # odd characters
    "\x00", "é", "e\u0301", "İ", "ß", "\u212a", "ǅ", "\ufeff", "\u200b", "💥", "𝔘", "'", '"',
    "\\", "#", ":", ";", ",", ".", "!", "?", "/", ">", ">>>", "==>", "➞", "->", "=",
    # the actor's and the ReAct agent's format
    "Thought:", "Thought 1:", "thought", "Action:", "Action 2: ", "action", "Finish[",
    "finish [", "FINISH[", 'Finish["', "Search['", "Search[", "search [", "Lookup[", "Observation:", "Finish[]",
    "Finish[Paris]", "Search[Ed Wood]",
    # verdicts
    '{"correct": true}', '{"verdict": "no"}', '"score": ', '{"score": ', "score", "Score: 7/10",
    "/10", "1e999", "NaN", "Infinity", "-", "9" * 30, "0.5", "true", "false", "correct",
    "incorrect", "yes", "no",
    # reflections
    "Reflection:", "Lesson:", "Trial #2", "trial 3", "Question:", "Task:", "Previous trial",
    # code and tests
    "def f(", "def f(x):\n", "    return x\n", "    ", "async def f(", "def", "fn f(",
    "fn main() {", "fn main()", "pub fn f(x: i32) -> i32 {", "use std::cmp;\n", "assert",
    "assert f(1) == 2", "assert f(", "assert candidate(", "assert_eq!(f(1), 2);", "assert!(",
    "assert_ne!(", ">>> f(1)\n", "f(1) ==> 2", "f(2) ➞ 3", "if __name__ == '__main__':",
    "print(f(1))", "import os\n", "lambda:", "not ", "'''", '"""', "\\\n", "class A:",
    # household turns and observations
    "think:", "> ", "go to shelf 1", "take mug 1 from countertop 1", "move mug 1 to shelf 1",
    "put", "put mug 1 in/on shelf 1", "clean", "heat", "cool", "slice", " with ", " to ",
    "You pick up the mug 1 from the countertop 1.", "You move the mug 1 to the shelf 1.",
    "You put the mug 1 in/on the shelf 1.", "Nothing happens.",
    # wiki
    "Mercury (planet)", "(disambiguation)", " OR ", "NEAR", "AND", '"', "*", "^",
]  # fmt: skip

fragment = st.sampled_from(FRAGMENTS)
structured = st.lists(st.one_of(fragment, st.text(max_size=6)), max_size=40).map("".join)
brackets = st.text(alphabet="[](){}`\n\r \t:#>\"'\\;,.", max_size=80)
model_text = st.one_of(st.text(), st.text(max_size=300), structured, brackets)
"""Ordinary-sized replies: arbitrary Unicode, format fragments, bracket and fence soup."""


RUNS = [" ", "\t", "\n", "\r\n", " \n", "\u2028", "[", "(", ")", "{", "`", "'", "a", "1", "x "]
"""What a long run is made of in the sweep: blanks of every kind, brackets, quotes, a letter,
a digit, a word."""


@st.composite
def large_text(draw: st.DrawFn) -> tuple[str, str, str]:
    """About 200 KB as (head, unit, tail), grown by :func:`grow`: a short head, one unit
    repeated, a short tail (the shape that sends a backtracking regex quadratic: an opener,
    a long run, then something that fails). Hypothesis reports the recipe, not 200 KB."""
    head = draw(st.one_of(fragment, st.text(max_size=8)))
    unit = draw(
        st.one_of(
            st.sampled_from(RUNS),
            fragment,
            st.text(min_size=1, max_size=6),
            st.lists(fragment, min_size=1, max_size=3).map("".join),
        ).filter(bool)
    )
    tail = draw(st.one_of(st.just("x"), fragment, st.text(max_size=8)))
    return head, unit, tail


def grow(recipe: tuple[str, str, str]) -> str:
    head, unit, tail = recipe
    return head + unit * (LARGE_SIZE // len(unit)) + tail


def sweep(openers: list[str]) -> Iterator[str]:
    """Every opener, then a long run of each of RUNS, then "x" (deterministic)."""
    for opener in openers:
        for run in RUNS:
            yield opener + run * (SWEEP_SIZE // len(run)) + "x"


def fuzz_problem(language: Language, prompt: str) -> CodeProblem:
    """A MultiPL-E problem whose function is ``f``, without hidden tests."""
    return CodeProblem(f"fuzz/{language}", language, prompt, "f", test="", kind="multipl-e")


PY = fuzz_problem(
    "py",
    'from typing import List\n\n\ndef f(x: List[int]) -> int:\n    """Sum.\n    >>> f([1, 2])\n    3\n    f([]) ==> 0\n    """\n',
)
RS = fuzz_problem(
    "rs", "use std::cmp;\n/// Sum.\n/// >>> f(vec![1, 2])\n/// 3\nfn f(x: Vec<i32>) -> i32 {\n"
)


def with_prompt(problem: CodeProblem, prompt: str) -> CodeProblem:
    return replace(problem, prompt=prompt)


# ---- reflexion/parsing.py and reflexion/metrics.py --------------------------------------------


def check_finish(result: FinishParse) -> None:
    assert isinstance(result, FinishParse)
    assert isinstance(result.thought, str)
    assert (result.answer is None) == (result.error is not None)
    if result.answer is not None:
        assert result.answer and result.answer == result.answer.strip()
        assert "\n" not in result.answer
    else:
        assert isinstance(result.error, str) and result.error


def check_verdict(result: Verdict) -> None:
    assert isinstance(result, Verdict)
    assert result.success is None or isinstance(result.success, bool)
    assert result.score is None or (isinstance(result.score, float) and 0.0 <= result.score <= 1.0)
    assert isinstance(result.feedback, str)


def check_reflection(result: str) -> None:
    assert isinstance(result, str)
    assert len(result) <= 800
    assert result == result.strip() or result.endswith("…")


def check_react(result: ReactStepParse) -> None:
    assert isinstance(result, ReactStepParse)
    assert isinstance(result.thought, str)
    assert (result.action is None) == (result.error is not None)
    assert result.action in (None, "search", "lookup", "finish")
    if result.action is not None:
        assert result.argument and result.argument == result.argument.strip()
        assert "\n" not in result.argument
    else:
        assert isinstance(result.error, str) and result.error


def check_parsing(text: str, call: Callable[..., Any]) -> None:
    check_finish(call(parse_finish, text))
    check_verdict(call(parse_verdict, text))
    check_reflection(call(clean_reflection, text))
    check_react(call(parse_react_step, text))
    assert isinstance(call(exact_match, text, "Paris"), bool)
    normal = call(normalize_answer, text)
    assert normal == " ".join(normal.split())


@FUZZ
@given(model_text)
def test_parsing(text: str) -> None:
    check_parsing(text, bounded)


json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**1000),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["yes", "no", "nan", "inf", "-inf", "1e999", "0.7", "correct"]),
)


@SOME
@given(
    st.dictionaries(
        st.sampled_from(["verdict", "correct", "success", "score", "feedback", "reason", "Label"])
        | st.text(max_size=8),
        json_scalar | st.lists(json_scalar, max_size=3),
        max_size=5,
    ),
    st.text(max_size=20),
)
def test_parse_verdict_json(obj: dict[str, Any], prefix: str) -> None:
    text = prefix + json.dumps(obj)
    check_verdict(bounded(parse_verdict, text))


@LARGE
@given(large_text())
def test_parsing_large(recipe: tuple[str, str, str]) -> None:
    check_parsing(grow(recipe), big)


def test_parsing_sweep() -> None:
    openers = ["", "x", "Finish[", "Search[", "Thought:", "Action:", '{"score": ', "score"]
    for text in sweep([*openers, "Reflection: a", "\n"]):
        check_parsing(text, big)


# ---- reflexion/programming.py and nodes/programming.py ----------------------------------------------

CTX = CodeContext()


def check_code(result: CodeParse) -> None:
    assert isinstance(result, CodeParse)
    assert (result.code is None) == (result.error is not None)
    if result.code is not None:
        assert isinstance(result.code, str) and result.code.strip()
    else:
        assert isinstance(result.error, str) and result.error


def check_tidy(code: str, result: str) -> None:
    assert isinstance(result, str)
    if result != code:  # tidied: it parses and still defines the entry point
        names = {
            node.name
            for node in ast.parse(result).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert "f" in names


def check_tests(tests: list[str], problem: CodeProblem) -> None:
    assert isinstance(tests, list)
    assert len(tests) == len(set(tests))
    for test in tests:
        assert isinstance(test, str) and "\n" not in test
        if problem.language == "py":
            tree = ast.parse(test)
            assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert)
            calls = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "f"
            ]
            assert calls, test
        else:
            assert test.startswith("assert") and test.endswith(";")


def check_valid(tests: list[str]) -> None:
    check_tests(tests, PY)
    assert len(tests) <= CTX.max_tests


def check_replies(text: str, call: Callable[..., Any]) -> None:
    """The parsers of code replies built on regular expressions (cheap enough for the sweep)."""
    for problem in (PY, RS):
        check_code(call(extract_code, text, problem))
        tests = call(candidate_tests, text, problem)
        check_tests(tests, problem)
        if problem.language == "rs":
            assert all("f" in t or "candidate" in t for t in tests)


def check_programming(reply: str, prompt: str, call: Callable[..., Any]) -> None:
    check_replies(reply, call)
    for problem in (PY, RS):
        check_tests(call(example_tests, with_prompt(problem, prompt)), problem)
    check_tidy(reply, call(tidy_python, reply, "f"))
    defined = "def f(x):\n    return x\n" + reply
    check_tidy(defined, call(tidy_python, defined, "f"))
    assert isinstance(call(python_preamble, prompt, "f"), str)
    assert isinstance(call(rust_preamble, prompt, reply), str)
    for problem in (PY, RS):
        program = call(assemble, with_prompt(problem, prompt), reply)
        assert isinstance(program, str) and program.endswith("\n")
    # Rust is left out of valid_tests: its tests are compiled with rustc.
    check_valid(call(valid_tests, reply, PY, CTX))
    check_valid(call(valid_tests, reply, with_prompt(PY, prompt), CTX))
    try:
        assert call(language_of, reply) in ("py", "rs")
    except DatasetError as exc:
        assert "not supported" in str(exc)


@FUZZ
@given(model_text, st.one_of(st.just(PY.prompt), model_text))
def test_programming(reply: str, prompt: str) -> None:
    check_programming(reply, prompt, bounded)


@LARGE
@given(large_text())
def test_programming_large(recipe: tuple[str, str, str]) -> None:
    text = grow(recipe)
    check_replies(text, big)
    check_tidy(text, big(tidy_python, text, "f"))
    assert isinstance(big(python_preamble, text, "f"), str)
    check_tests(big(example_tests, with_prompt(PY, text)), PY)
    check_valid(big(valid_tests, text, PY, CTX))


def test_programming_sweep() -> None:
    openers = ["", "x", "```", "```python\n", "def f(", "assert!(f()", "assert f(", ">>> f("]
    for text in sweep([*openers, "f(1) ==> "]):
        check_replies(text, big)


outcomes = st.builds(counted, test=model_text, passed=st.booleans(), detail=st.text(max_size=300))


@SOME
@given(
    st.builds(
        SuiteResult,
        outcomes=st.lists(outcomes, max_size=6).map(tuple),
    ),
    st.sampled_from(["py", "rs"]),
)
def test_render_outcomes(result: SuiteResult, language: str) -> None:
    text = bounded(lambda: render_outcomes(result.outcomes, language))
    assert isinstance(text, str)
    assert text.startswith("Tests passed:") and "\n\nTests failed:\n" in text


# ---- nodes/alfworld/ ------------------------------------------------------------------------


def check_turn(result: ParsedTurn) -> None:
    assert isinstance(result, ParsedTurn)
    assert result.is_think == result.action.startswith("think:")
    if result.is_think:
        assert len(result.action) <= 400
    else:
        assert len(result.action) <= 200
        assert result.action == " ".join(result.action.split())
        assert result.action == result.action.lower()


def check_trial(turns: list[Turn], stop_reason: str | None) -> None:
    trip = heuristic_trip(turns, repeats=3, max_actions=30)
    assert trip is None or (isinstance(trip, str) and trip)
    found = hallucinated_actions(turns)
    assert isinstance(found, list)
    assert all(a in [t["action"] for t in turns] for a in found)
    failure = classify_failure(turns, stop_reason, repeats=3, max_actions=30)
    assert failure in FAILURE_CLASSES
    assert (failure == "hallucination") == bool(found)
    task = turns[0]["observation"] if turns else ""
    read = explained(turns, task)
    assert len(read) == len(turns)
    assert all(r.startswith(t["observation"]) for r, t in zip(read, turns, strict=True))
    found = found_leads(turns, task)
    assert "Nothing happens" not in found


observation = st.one_of(
    model_text,
    st.builds(
        "You {} the {} {} the {}.".format,
        st.sampled_from(["pick up", "move", "put", "arrive at", "open", "close"]),
        st.text(max_size=12),
        st.sampled_from(["from", "to", "in/on"]),
        st.text(max_size=12),
    ),
)


@FUZZ
@given(model_text)
def test_parse_turn(text: str) -> None:
    check_turn(bounded(parse_turn, text))


@SOME
@given(
    st.lists(st.tuples(model_text, observation | st.just("Nothing happens.")), max_size=8),
    st.none() | st.sampled_from(["the step limit was reached", "the judge stopped it"]),
    st.booleans(),
)
def test_trial_analysis(pairs: list[tuple[str, str]], stop_reason: str | None, raw: bool) -> None:
    # Actions as the actor node records them (through parse_turn), or raw text as a state
    # written by hand could hold.
    turns = [
        Turn(action=reply if raw else parse_turn(reply).action, observation=seen)
        for reply, seen in pairs
    ]
    bounded(check_trial, turns * 2, stop_reason)


def check_alfworld_large(text: str) -> None:
    check_turn(big(parse_turn, text))
    turns = [Turn(action=text, observation=text), Turn(action=text[:200], observation=text)]
    refused = [Turn(action=text, observation=NOTHING), Turn(action=text[:200], observation=NOTHING)]
    big(check_trial, turns * 2 + refused, text[:100])


@LARGE
@given(large_text())
def test_alfworld_large(recipe: tuple[str, str, str]) -> None:
    check_alfworld_large(grow(recipe))


def test_alfworld_sweep() -> None:
    openers = ["", "put", "move mug", "> ", "think:", "You pick up the ", "Action:", "you see "]
    for text in sweep([*openers, "You arrive at ", "the cabinet 1 is closed", "take x from "]):
        check_alfworld_large(text)


# ---- reflexion/wiki.py ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> WikiTools:
    db = Path(tmp_path_factory.mktemp("corpus")) / "corpus.sqlite"
    build_corpus(
        db,
        [
            ("Mercury (planet)", ["Mercury is the smallest planet.", "It has no moons."]),
            ("Mercury (element)", ["Mercury is a metal.", "It is liquid."]),
            ("Ed Wood", ["Ed Wood was a director.", "He made Plan 9."]),
            ('Quotes "and" (brackets) [x]', ["A title with * NEAR OR AND."]),
        ],
    )
    return WikiTools(OfflineCorpus(db))


def check_observation(result: tuple[str, LookupCursor]) -> None:
    text, cursor = result
    assert isinstance(text, str) and text
    assert isinstance(cursor, LookupCursor)


def check_wiki(tools: WikiTools, text: str, page: str | None, call: Callable[..., Any]) -> None:
    sentences = call(split_sentences, text)
    assert all(s and s == s.strip() for s in sentences)
    norm = call(normalize_title, text)
    assert norm == " ".join(norm.split())
    assert isinstance(call(base_title, text), str)
    check_observation(call(tools.search, text, LookupCursor()))
    check_observation(call(tools.lookup, text, LookupCursor(page=page)))
    check_observation(call(tools.lookup, text, LookupCursor(page=page, keyword=text, index=1)))


@FUZZ
@given(model_text, st.sampled_from([None, "Ed Wood", "Mercury (planet)", "gone"]))
def test_wiki(tools: WikiTools, text: str, page: str | None) -> None:
    check_wiki(tools, text, page, bounded)


@LARGE
@given(large_text())
def test_wiki_large(tools: WikiTools, recipe: tuple[str, str, str]) -> None:
    check_wiki(tools, grow(recipe), "Ed Wood", big)


def test_wiki_sweep(tools: WikiTools) -> None:
    for text in sweep(["", "Mercury (", "Ed Wood"]):
        check_wiki(tools, text, "Ed Wood", big)
