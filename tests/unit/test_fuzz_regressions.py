"""Regressions found by the fuzz tests (``test_fuzz.py``): each input once broke a parser (an
exception, a wrong result, or quadratic time), with what it broke in a comment."""

from __future__ import annotations

from reflexion.alfworld.diagnosis import explained
from reflexion.alfworld.turns import NOTHING, Turn, hallucinated_actions, parse_turn
from reflexion.nodes.replies import clean_reflection, parse_verdict
from reflexion.programming.problems import python_preamble
from reflexion.programming.replies import candidate_tests, extract_code
from reflexion.qa.parsing import parse_finish, parse_react_step
from reflexion.qa.wiki import base_title
from tests.hangkit import bounded
from tests.unit.test_fuzz import PY, RS


def test_a_score_beyond_the_float_range_is_clamped_not_an_overflow() -> None:
    # float(10**309) raised OverflowError out of parse_verdict.
    assert parse_verdict('{"score": 1' + "0" * 309 + "}").score == 1.0
    assert parse_verdict('{"correct": true, "score": -1' + "0" * 309 + "}").score == 0.0


def test_a_nan_score_is_no_score() -> None:
    # NaN went through max(0, min(1, x)) as 1.0: a full score (a success in score mode).
    assert parse_verdict('{"score": NaN}').score is None
    verdict = parse_verdict('{"correct": false, "score": "nan"}')
    assert (verdict.success, verdict.score) == (False, None)


def test_a_quoted_blank_answer_is_no_answer() -> None:
    # The quotes were stripped after the blanks: Finish[" x] gave " x", Finish[" "] gave " ".
    assert parse_finish('Finish[" x]').answer == "x"
    assert parse_finish('Finish[" "]').error == "Finish[] held no answer"
    assert parse_react_step("FINISH['\r0").argument == "0"
    assert parse_react_step("Search[' ']").error == "Search[] was empty"


def test_a_long_blank_run_in_a_reflection_is_linear() -> None:
    # \n\s* in the trial-marker split rescanned the run from every newline (quadratic).
    assert bounded(clean_reflection, "a" + "\n" * 200_000 + "b", limit=2) == "a b"
    assert clean_reflection("Check dates.\n\n \n  Trial #2: Question: x") == "Check dates."


def test_long_blank_runs_in_code_replies_are_linear() -> None:
    # ``` followed by blanks split them every way between two [ \t]* (quadratic); ^\s*def
    # rescanned a run of blank lines from each of them (quadratic).
    assert bounded(extract_code, "```" + " " * 100_000 + "x", PY, limit=2).code is None
    assert bounded(extract_code, "x" + "\n" * 100_000 + "x", PY, limit=2).code is None
    assert extract_code("```python  \n\n\ndef f(x):\n    return x\n```", PY).code
    # \)\s*;?\s*$ split the blanks after a parenthesis every way (quadratic).
    rust = "assert!(f()" + " " * 100_000 + "x"
    assert bounded(candidate_tests, rust, RS, limit=2) == []
    assert candidate_tests("assert_eq!(f(1), 2) ;", RS) == ["assert_eq!(f(1), 2) ;"]


def test_a_prompt_too_deeply_nested_to_parse_has_no_preamble() -> None:
    # ast.parse raised MemoryError ("too complex") out of python_preamble.
    assert python_preamble("-" * 100_000 + "1\n", "f") == ""


def test_a_long_blank_run_in_an_action_is_linear() -> None:
    # \s+(.+?)\s+ tried every split of the run: 185 s for 4,000 blanks (cubic).
    turns = [Turn(action="put" + " " * 20_000 + "x", observation="")]
    assert bounded(hallucinated_actions, turns, limit=2) == []
    assert hallucinated_actions([Turn(action="put  mug 1  in/on  shelf 1", observation="")])


def test_a_long_blank_run_in_a_title_is_linear() -> None:
    # \s*\(...\)\s*$ was tried from every position of the run (quadratic).
    assert bounded(base_title, " " * 200_000 + "x", limit=2) == "x"
    assert base_title("Mercury  (planet) ") == "Mercury"


def test_a_function_defined_only_inside_main_is_no_implementation() -> None:
    # Dropping the main block left an empty implementation, reported as code ("\n").
    assert extract_code("fn main(){fn f", RS).code is None
    nested = "if __name__ == '__main__':\n    def f(x):\n        return x\n"
    assert extract_code(nested, PY).error == "the reply defines f only inside main"
    kept = 'fn f(x: i32) -> i32 { x }\nfn main() {\n    println!("{}", f(1));\n}\n'
    assert extract_code(kept, RS).code == "fn f(x: i32) -> i32 { x }\n"


def test_a_command_cut_at_200_characters_has_no_trailing_blank() -> None:
    # The cut could end on the blank between two words: "x x … x " is not the command sent.
    assert parse_turn("x " * 150).action == ("x " * 100).rstrip()


def test_a_refused_command_with_a_newline_is_linear() -> None:
    # (.+?) from (.+)$ stops at a newline, so every " from " before it was tried to the end.
    command = "take " + "a from " * 30_000 + "\nx"
    found = bounded(explained, [Turn(action=command, observation=NOTHING)], "", limit=2)
    assert len(found) == 1
