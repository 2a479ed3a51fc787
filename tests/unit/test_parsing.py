"""Parsers of model output and the HotPotQA answer normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reflexion.core.answers import exact_match, normalize_answer
from reflexion.nodes.replies import clean_reflection, parse_verdict
from reflexion.qa.parsing import parse_finish, parse_react_step


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Thought: x\nAction: Finish[Paris]", "Paris"),
        ("Action 1: finish[ Paris  France ]", "Paris France"),
        ("Finish[wrong]\nThought: no wait\nAction: Finish[right]", "right"),
        ("Finish[The [bracketed] name]", "The [bracketed] name"),
        ("Action: Finish[unclosed answer\nmore text", "unclosed answer"),
        ('Finish["quoted"]', "quoted"),
        ("FINISH [Yes]", "Yes"),
        ("Finish[The Answer Man]", "The Answer Man"),  # a title, not the placeholder
    ],
)
def test_finish_is_parsed(reply, expected):
    assert parse_finish(reply).answer == expected


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("I think the answer is Paris.", "no Finish"),
        ("Action: Finish[]", "no answer"),
        ("Action: Finish[   ]", "no answer"),
        ("Search[Paris]", "no Finish"),
        ("Thought: I looped.\nAction: Finish[answer]", "placeholder"),
        ("Action: Finish[<Your Answer>]", "placeholder"),
        ("Action: Finish[...]", "placeholder"),
    ],
)
def test_malformed_finish_gives_an_error_not_an_exception(reply, error):
    parsed = parse_finish(reply)
    assert parsed.answer is None
    assert parsed.error is not None and error in parsed.error


def test_thought_is_kept_without_labels():
    parsed = parse_finish("Thought 1: Prague is on the Vltava.\nAction 1: Finish[Vltava]")
    assert parsed.thought == "Prague is on the Vltava."


@settings(max_examples=300)
@given(st.text())
def test_parse_finish_never_raises(text):
    result = parse_finish(text)
    assert result.answer is None or result.answer.strip() == result.answer


@pytest.mark.parametrize(
    ("prediction", "reference", "same"),
    [
        ("The Vltava", "vltava", True),
        ("  U.S.A.  ", "usa", True),
        ("an apple", "Apple!", True),
        ("New   York", "new york", True),
        ("Theatre", "the atre", False),
        ("Paris", "London", False),
        (None, "x", False),
    ],
)
def test_exact_match_normalisation(prediction, reference, same):
    assert exact_match(prediction, reference) is same


def test_normalize_answer_steps():
    assert normalize_answer("The Battle, of A Town!") == "battle of town"


@pytest.mark.parametrize(
    ("text", "success", "score"),
    [
        ('{"correct": true, "score": 0.9, "feedback": "fine"}', True, 0.9),
        (
            'Sure! {"correct": false, "score": 0.2, "feedback": "wrong city"} hope it helps',
            False,
            0.2,
        ),
        ('{"verdict": "incorrect"}', False, None),
        ('{"score": 8}', None, 0.8),
        ("Score: 7/10. The answer is right.", True, 0.7),
        ("INCORRECT. The answer names the wrong river.", False, None),
        ("Yes, correct.", True, None),
        ("No.", False, None),
    ],
)
def test_verdicts_are_read_from_json_or_text(text, success, score):
    verdict = parse_verdict(text)
    assert verdict.success is success
    if score is None:
        assert verdict.score is None
    else:
        assert verdict.score == pytest.approx(score)


@pytest.mark.parametrize("text", ["", "hmm", "{not json", "{}", "[1, 2]"])
def test_verdict_absent_is_typed(text):
    verdict = parse_verdict(text)
    assert verdict.success is None


@settings(max_examples=300)
@given(st.text())
def test_parse_verdict_never_raises(text):
    verdict = parse_verdict(text)
    assert verdict.score is None or 0.0 <= verdict.score <= 1.0


def test_reflection_is_cleaned():
    raw = "Reflection: I mixed up dates. I mixed up dates. Next time I compare both.\nTrial #2: Question: ..."
    assert clean_reflection(raw) == "I mixed up dates. Next time I compare both."


def test_reflection_is_bounded():
    assert len(clean_reflection("word " * 1000)) <= 800
    assert clean_reflection("") == ""


@pytest.mark.parametrize(
    ("reply", "action", "argument", "thought"),
    [
        ("Thought: I need it.\nAction: Search[Ed Wood]", "search", "Ed Wood", "I need it."),
        ("Thought 3: look.\nAction 3: lookup[born in]", "lookup", "born in", "look."),
        ("Thought: done\nAction: FINISH[ 'yes' ]", "finish", "yes", "done"),
        ("Search[Mercury (planet)]", "search", "Mercury (planet)", ""),
        ("Thought: a\nsecond line\nAction: Search[x]", "search", "x", "a second line"),
        ("Thought: cut\nAction: Search[Ada Lovel", "search", "Ada Lovel", "cut"),
        # A model that runs on and invents observations: its first action counts.
        (
            "Thought: t\nAction: Search[A]\nObservation: made up\nAction: Finish[B]",
            "search",
            "A",
            "t",
        ),
        ("Thought: I will Finish[it] now", "finish", "it", "I will"),
    ],
)
def test_react_step_reads_the_first_action(reply, action, argument, thought):
    parsed = parse_react_step(reply)
    assert (parsed.action, parsed.argument, parsed.thought) == (action, argument, thought)
    assert parsed.error is None


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("", "the reply was empty"),
        ("   \n ", "the reply was empty"),
        ("Thought: I am thinking.", "no Search[...], Lookup[...] or Finish[...] action"),
        ("Action: Jump[high]", "no Search[...], Lookup[...] or Finish[...] action"),
        ("Thought: x\nAction: Lookup[]", "Lookup[] was empty"),
        ("Action: Finish[   ]", "Finish[] was empty"),
    ],
)
def test_react_step_without_an_action_says_why(reply, error):
    parsed = parse_react_step(reply)
    assert parsed.action is None and parsed.error == error


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=400))
def test_react_step_parser_never_raises(text):
    parsed = parse_react_step(text)
    assert (parsed.action is None) == (parsed.error is not None)
    assert "\n" not in parsed.argument
