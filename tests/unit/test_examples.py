"""The prompt's examples read as trusted tests: every form a docstring uses, and the lines that
look like examples but cannot be checked as written."""

from __future__ import annotations

import pytest

from reflexion.programming.examples import example_tests
from reflexion.programming.problems import CodeProblem


def py(doc: str, signature: str = "def f(x, k=1):") -> list[str]:
    body = "\n".join(f"    {line}" for line in doc.strip().splitlines())
    prompt = f'import math\n\n{signature}\n    """\n{body}\n    """\n'
    return example_tests(CodeProblem("t", "py", prompt, "f", "", "multipl-e"))


@pytest.mark.parametrize(
    ("line", "test"),
    [
        ("f(2) ==> 4", "assert f(2) == 4"),
        ("f(2) == 4", "assert f(2) == 4"),
        ("f(2) => 4", "assert f(2) == 4"),
        ("f(2) ➞ 4", "assert f(2) == 4"),
        ("f(2) → 4", "assert f(2) == 4"),
        ("f(2) -> 4", "assert f(2) == 4"),
        ("f(2) = 4", "assert f(2) == 4"),
        ("f('ab') should return 'ba'.", "assert f('ab') == 'ba'"),
        ("f('ab') returns 'ba'", "assert f('ab') == 'ba'"),
        ("f(2)   # returns 4", "assert f(2) == 4"),
        ('f("a#b") # => "b#a"', "assert f('a#b') == 'b#a'"),
        (">>> f(2) == 4", "assert f(2) == 4"),
        ("* f([]) => []", "assert f([]) == []"),
        ("- f(2) -> 4", "assert f(2) == 4"),
        ("for f(2) == 4", "assert f(2) == 4"),
        ("assert f([1]) => [1]", "assert f([1]) == [1]"),
        ("f(2) returns 4 # because 2 + 2 is 4", "assert f(2) == 4"),
        ("f(2) => 'No' (the answer is no)", "assert f(2) == 'No'"),
        ("f(9, 3) -> 9 - 3 = 6", "assert f(9, 3) == 6"),
        ("For x = 'AB' the output should be 1.", "assert f('AB') == 1"),
        ("For x = [1,2], k = 3 the result should be (1, 2)", "assert f([1, 2], 3) == (1, 2)"),
        ("For x = 10, which has two digits, the output should be 2", "assert f(10) == 2"),
    ],
)
def test_inline_forms(line: str, test: str) -> None:
    assert py(f"Example:\n{line}") == [test]


def test_doctest_form_with_any_expression_that_calls_the_function() -> None:
    doc = ">>> f(2)\n4\n>>> round(f(1.5), 2)  # rounded\n2.25\n>>> f(3)\n\n>>> f(4)\n>>> x"
    assert py(doc) == ["assert f(2) == 4", "assert round(f(1.5), 2) == 2.25"]


def test_input_output_blocks() -> None:
    doc = (
        "Example 1:\n    Input: [4,2,3]\n    Output: [2, 1]\n"
        "Example 2:\n    Input: x = [1], k = 2\n    Explanation: one\n    Output: 3 # one\n"
    )
    assert py(doc) == ["assert f([4, 2, 3]) == [2, 1]", "assert f([1], 2) == 3"]


@pytest.mark.parametrize(
    "line",
    [
        "f(a) => False",  # a is a placeholder, not a value
        "f(2) ==> true",  # not a Python literal
        "f(n) = f(n - 1) + 1",  # a definition
        "f(y=2) == 4",  # no such parameter
        "f(2) ==> ",
        "f(2) is even",
        "g(2) ==> 4",  # another function
        "f 2 ==> 4",
        "f((2) ==> 4",
    ],
)
def test_lines_that_cannot_be_checked_as_written_are_left_out(line: str) -> None:
    assert py(line) == []


def test_calls_may_use_the_prompts_own_definitions_and_builtins() -> None:
    prompt = (
        "def encode(s):\n    return s[::-1]\n\n\ndef f(s):\n"
        '    """\n    >>> f(encode("ab"))\n    \'ab\'\n    >>> len(f(q))\n    1\n    """\n'
    )
    problem = CodeProblem("t", "py", prompt, "f", "", "multipl-e")
    assert example_tests(problem) == ["assert f(encode('ab')) == 'ab'"]


def test_keywords_stay_keywords_when_they_skip_a_parameter() -> None:
    assert py("For k = 2 the output should be 5") == ["assert f(k=2) == 5"]


def test_duplicates_are_dropped_and_order_is_kept() -> None:
    assert py("f(1) ==> 1\nf(2) ==> 4\n>>> f(1)\n1") == ["assert f(1) == 1", "assert f(2) == 4"]


def test_rust_examples_keep_their_value_up_to_a_comment() -> None:
    prompt = (
        "/// >>> f(vec![1, 2])\n/// 3\n/// f(2) ==> 4 // doubled\n/// For x = 1 the output should be 1\n"
        "fn f(x: Vec<isize>) -> isize {\n"
    )
    problem = CodeProblem("r", "rs", prompt, "f", "", "multipl-e")
    assert example_tests(problem) == ["assert_eq!(f(vec![1, 2]), 3);", "assert_eq!(f(2), 4);"]


def test_very_long_lines_are_not_read() -> None:
    assert py("f(2) ==> " + "4" * 3000) == []
