"""The examples a programming prompt gives, read as test statements: the trusted tests.

Docstrings write their examples in many ways. Each line is read in these forms:

* doctest: ``>>> f(x)`` (or any expression that calls ``f``) with the expected value on the
  next line;
* inline: ``f(x) ==> y``, with ``==>``, ``==``, ``=>``, ``➞``, ``→``, ``->``, ``=``,
  ``should return``, ``returns`` or ``# =>`` between call and value, after an optional
  ``>>>``, ``*``, ``-``, ``for`` or ``assert``; a comment or an explanation after the value is
  dropped, and ``y = 1 + 2 = 3`` keeps its last value;
* prose (Python): ``For x = 1, k = 2 the output should be 3``;
* blocks (Python): an ``Input: [1, 2]`` line (or ``Input: arr = [1, 2], k = 1``), then an
  ``Output: 3`` line.

A Python example is kept only when it can be checked as written: its expected value is a
literal, its keyword names are parameters of the function, and its call names nothing but
the function, the prompt's other definitions and builtins (``is_happy(a) => False`` is prose,
not a test). Rust examples are compiled against the signature before use (see the test writer).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator

from reflexion.programming.problems import CodeProblem

_PREFIX = re.compile(r"^(?:>>>|\*|-|for\b|assert\b)\s*", re.IGNORECASE)
_SEPARATOR = re.compile(
    r"^(?:#\s*)?(?:==>|==|=>|➞|→|->|=|should\s+return\b|returns\b)\s*", re.IGNORECASE
)
_PROSE = re.compile(
    r"^for\s+(.+?)\s*,?\s+the\s+(?:output|result|answer)\s+(?:should\s+be|will\s+be|is)\s+(.+)$",
    re.IGNORECASE,
)
_INPUT = re.compile(r"^input\s*:\s*(.+)$", re.IGNORECASE)
_OUTPUT = re.compile(r"^output\s*:\s*(.+)$", re.IGNORECASE)
_MAX_LINE = 2000
"""Longer docstring lines are not examples (and would only cost parse time)."""
_MAX_CUTS = 8
"""At most this many places where a value or an argument list is tried cut short."""


def example_tests(problem: CodeProblem) -> list[str]:
    """The prompt's examples as test statements (``assert f(x) == y`` in Python,
    ``assert_eq!(f(x), y);`` in Rust), deduplicated, in the prompt's order."""
    lines = [
        re.sub(r"^\s*(?:///|//!|//|#)?\s?", "", ln).strip() for ln in problem.prompt.splitlines()
    ]
    lines = [ln if len(ln) <= _MAX_LINE else "" for ln in lines]
    reader = _Python(problem) if problem.language == "py" else _Rust(problem)
    tests: dict[str, None] = {}
    for call, expected in _pairs(lines, problem.entry_point, problem.language == "py"):
        test = reader.test(call, expected)
        if test:
            tests[test] = None
    return list(tests)


def _pairs(lines: list[str], name: str, prose: bool) -> Iterator[tuple[str, str]]:
    """(call, expected) source pairs, in the forms of the module docstring."""
    for i, line in enumerate(lines):
        follow = _next_line(lines, i)
        inline = _inline(line, name)
        if inline:
            yield inline
        elif line.startswith(">>>") and follow is not None and name in line:
            yield line[3:].strip(), follow
        elif prose and (match := _PROSE.match(line)):
            yield f"{name}({match.group(1)})", match.group(2)
        elif prose and (match := _INPUT.match(line)):
            for later in lines[i + 1 : i + 4]:
                output = _OUTPUT.match(later)
                if output:
                    yield f"{name}({match.group(1)})", output.group(1)
                    break


def _next_line(lines: list[str], i: int) -> str | None:
    """The expected value under a doctest line, or None when the next line is not one."""
    if i + 1 >= len(lines):
        return None
    text = lines[i + 1]
    if not text or text.startswith((">>>", '"""', "'''")):
        return None
    return text


def _inline(line: str, name: str) -> tuple[str, str] | None:
    """``f(x) SEP y`` after an optional prefix: the call and the text after the separator."""
    text = line
    while True:
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    if not text.startswith(name):
        return None
    rest = text[len(name) :].lstrip()
    if not rest.startswith("("):
        return None
    end = _closing(rest)
    if end is None:
        return None
    after = rest[end + 1 :].strip()
    separator = _SEPARATOR.match(after)
    if not separator or not after[separator.end() :].strip():
        return None
    return f"{name}{rest[: end + 1]}", after[separator.end() :].strip()


def _closing(text: str) -> int | None:
    """Index of the bracket that closes ``text[0]``, skipping quoted strings; None if open."""
    depth = 0
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _value_candidates(text: str) -> Iterator[str]:
    """Ways to read the expected value out of the rest of a line: all of it, then cut before a
    comment or an explanation in parentheses, then the part after the last ``=``."""
    text = text.strip()
    yield text.rstrip(".,;").strip()  # "should be 1." ends a sentence: 1, not 1.0
    yield text
    for mark in ("#", "//", " (", " because", " since"):
        start = 0
        for _ in range(_MAX_CUTS):
            i = text.find(mark, start)
            if i <= 0:
                break
            yield text[:i].strip().rstrip(".,;").strip()
            start = i + 1
    if "=" in text:
        yield text.rsplit("=", 1)[1].strip().rstrip(".,;").strip()


class _Python:
    """Reads Python examples: literal expected values, calls on known names only."""

    def __init__(self, problem: CodeProblem) -> None:
        self.name = problem.entry_point
        self.params: list[str] = []
        self.known = {problem.entry_point, *dir(builtins)}
        try:
            tree = ast.parse(problem.prompt)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.known.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self.known.update((a.asname or a.name).split(".")[0] for a in node.names)
            if isinstance(node, ast.FunctionDef) and node.name == self.name:
                self.params = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]

    def test(self, call: str, expected: str) -> str | None:
        value = next((v for v in _value_candidates(expected) if _literal(v)), None)
        expression = self._call(call)
        if value is None or expression is None:
            return None
        test = ast.parse(f"assert {expression} == {value}").body[0]
        return ast.unparse(test)

    def _call(self, source: str) -> str | None:
        """The call as checkable source: it calls the function, names only known things, and
        its keyword arguments become positional ones when they are the first parameters."""
        tree = next((t for t in map(_expression, self._readings(source)) if t is not None), None)
        if tree is None:
            return None
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == self.name
        ]
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        if not calls or not names <= self.known:
            return None
        for node in calls:
            given = [k.arg for k in node.keywords]
            if None in given or not set(given) <= set(self.params or given):
                return None
            if given and not node.args and given == self.params[: len(given)]:
                node.args, node.keywords = [k.value for k in node.keywords], []
        return ast.unparse(tree)

    def _readings(self, source: str) -> Iterator[str]:
        """The call as written, then with its arguments cut at a comma from the right (prose:
        ``For N = 1000, the sum of digits will be 1 the output…``)."""
        yield source
        head = f"{self.name}("
        if source.startswith(head) and source.endswith(")"):
            inner = source[len(head) : -1]
            commas = [i for i, ch in enumerate(inner) if ch == ","]
            for i in reversed(commas[:_MAX_CUTS]):
                yield f"{head}{inner[:i]})"


def _expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _literal(text: str) -> bool:
    if not text:
        return False
    try:
        ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return False
    return True


class _Rust:
    """Reads Rust examples: the value up to a comment; the compiler checks the rest."""

    def __init__(self, problem: CodeProblem) -> None:
        self.name = problem.entry_point

    def test(self, call: str, expected: str) -> str | None:
        if not call.startswith(self.name):
            return None
        value = expected.split("//", 1)[0].strip().rstrip(".,;").strip()
        return f"assert_eq!({call}, {value});" if value else None


__all__ = ["example_tests"]
