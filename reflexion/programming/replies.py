"""Reading model replies on a programming task: the implementation (:func:`extract_code`, the
fenced block that defines the entry point, tidied), and the unit tests the model wrote
(:func:`candidate_tests`: Python ``assert`` lines, ``unittest`` forms read as asserts, Rust
``assert!`` macros), sampled reproducibly (:func:`sample_tests`)."""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass

from reflexion.programming.problems import CodeProblem, Language

# The first [ \t]*+ is possessive: with no language tag the two blank runs around it would
# otherwise split a long run of spaces every possible way (quadratic).
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)


@dataclass(frozen=True)
class CodeParse:
    """Code read out of a reply."""

    code: str | None
    """The implementation (complete, with its signature), or ``None``."""
    error: str | None = None
    """Why no code could be read (``None`` when ``code`` is set)."""


def _defines(code: str, entry_point: str, language: Language) -> bool:
    if language == "py":
        # [^\S\n]*, not \s*: from each line of a long blank run \s* would rescan the rest.
        pattern = rf"^[^\S\n]*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\("
        return re.search(pattern, code, re.M) is not None
    return re.search(rf"\bfn\s+{re.escape(entry_point)}\b", code) is not None


def _blocks(reply: str) -> list[str]:
    """Fenced code blocks, an unterminated last fence included."""
    return [m.group(2) for m in _FENCE.finditer(reply) if m.group(2).strip()]


def extract_code(reply: str, problem: CodeProblem) -> CodeParse:
    """The implementation in a reply: the fenced block that defines the entry point (all
    blocks joined when the helpers are split across several), else the bare reply. A body
    without its signature (the paper's format) is completed with the prompt."""
    text = reply.strip()
    if not text:
        return CodeParse(None, "the reply is empty")
    blocks = _blocks(reply) or [reply.strip("\n")]
    defining = [b for b in blocks if _defines(b, problem.entry_point, problem.language)]
    if defining:
        code = _strip_main("\n\n".join(b.rstrip() for b in defining), problem.language)
        if not _defines(code, problem.entry_point, problem.language):
            # Its only definition was inside the main block that was dropped: nothing is left.
            return CodeParse(None, f"the reply defines {problem.entry_point} only inside main")
        if problem.language == "py":
            code = tidy_python(code, problem.entry_point)
        return CodeParse(code)
    body = blocks[0]
    if problem.language == "py" and body.startswith((" ", "\t")):
        return CodeParse(f"{problem.prompt.rstrip()}\n{body.rstrip()}\n")
    return CodeParse(None, f"the reply does not define {problem.entry_point}")


_KEPT_TOP_LEVEL = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.Try,
)


def tidy_python(code: str, entry_point: str) -> str:
    """Keep the definitions of a Python reply and drop what a harness must not run: top-level
    calls (``print(f(...))`` demos), asserts, loops and ``__main__`` blocks. A reply cut off by
    the token limit is shortened to its last complete top-level statement. The code is returned
    unchanged when that would lose the entry point (its error is then reported as it is)."""
    lines = code.splitlines()
    tree = None
    for _ in range(200):
        try:
            tree = ast.parse("\n".join(lines))
            break
        except (SyntaxError, ValueError):
            starts = [i for i, ln in enumerate(lines) if i > 0 and ln[:1] not in ("", " ", "\t")]
            if not starts:
                return code
            lines = lines[: starts[-1]]
        except (MemoryError, RecursionError):
            return code
    if tree is None:
        return code
    drop: set[int] = set()
    for node in tree.body:
        if not isinstance(node, _KEPT_TOP_LEVEL):
            drop.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    kept = "\n".join(ln for i, ln in enumerate(lines) if i not in drop).rstrip() + "\n"
    try:
        names = {
            n.name
            for n in ast.parse(kept).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code
    return kept if entry_point in names else code


def _strip_main(code: str, language: Language) -> str:
    """Drop a ``fn main`` (Rust) or a ``__main__`` block (Python) the model added: the test
    harness brings its own."""
    if language == "rs":
        match = re.search(r"^fn\s+main\s*\(\s*\)\s*\{", code, re.M)
        if match:
            depth = 0
            for i in range(match.end() - 1, len(code)):
                if code[i] == "{":
                    depth += 1
                elif code[i] == "}":
                    depth -= 1
                    if depth == 0:
                        return (code[: match.start()] + code[i + 1 :]).strip() + "\n"
            return code[: match.start()].strip() + "\n"
        return code
    match = re.search(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", code, re.M)
    return code[: match.start()].rstrip() + "\n" if match else code


# ---- unit tests written by the model ----------------------------------------------------------

# \s*+ (possessive) after the closing parenthesis: \s*;?\s* could split a blank run every way.
_RUST_TEST = re.compile(r"^\s*(assert(?:_eq|_ne)?!\s*\(.*\)\s*+;?)\s*$")


def candidate_tests(reply: str, problem: CodeProblem) -> list[str]:
    """Test statements in a reply, deduplicated, in order: Python ``assert`` statements (or
    ``unittest`` assertions, rewritten as ``assert``) that parse (``ast``) and call the
    function; Rust ``assert!``/``assert_eq!`` lines (their
    syntax and types are checked by compiling, see
    :func:`reflexion.programming.sandbox.runner.check_rust_tests`)."""
    seen: dict[str, None] = {}
    for raw in reply.splitlines():
        line = raw.strip().rstrip(",")
        if problem.language == "py":
            test = _python_test(line, problem.entry_point)
        else:
            match = _RUST_TEST.match(line)
            test = None
            if match and (problem.entry_point in line or "candidate" in line):
                test = match.group(1) if match.group(1).endswith(";") else match.group(1) + ";"
        if test and test not in seen:
            seen[test] = None
    return list(seen)


_UNITTEST_FORMS = {
    "assertEqual": "==",
    "assertListEqual": "==",
    "assertTupleEqual": "==",
    "assertDictEqual": "==",
    "assertSetEqual": "==",
    "assertNotEqual": "!=",
    "assertTrue": "",
    "assertFalse": "not",
}
"""``unittest`` assertions small models write instead of ``assert`` lines, and what each
checks."""


def _from_unittest(line: str) -> str:
    """``self.assertEqual(a, b)`` (and the other :data:`_UNITTEST_FORMS`) as ``assert a == b``;
    any other line as it is."""
    if not re.match(r"(?:self\.)?assert[A-Z]\w*\s*\(", line):
        return line
    try:
        call = ast.parse(line, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return line
    if not isinstance(call, ast.Call) or call.keywords:
        return line
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    form = _UNITTEST_FORMS.get(name)
    args = [ast.unparse(a) for a in call.args]
    if form is None or len(args) != (2 if form in ("==", "!=") else 1):
        return line
    if form in ("==", "!="):
        return f"assert {args[0]} {form} {args[1]}"
    return f"assert {form} ({args[0]})" if form else f"assert {args[0]}"


def _python_test(line: str, entry_point: str) -> str | None:
    line = _from_unittest(line)
    if not line.startswith("assert"):
        return None
    line = re.sub(r"\bcandidate\s*\(", f"{entry_point}(", line)
    try:
        tree = ast.parse(line)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == entry_point
    ]
    return ast.unparse(tree.body[0]) if calls else None


def sample_tests(tests: list[str], n: int, seed: str) -> list[str]:
    """At most ``n`` tests, sampled reproducibly (seeded by the task) and kept in order."""
    if len(tests) <= n:
        return list(tests)
    chosen = sorted(random.Random(seed).sample(range(len(tests)), n))
    return [tests[i] for i in chosen]


__all__ = [
    "CodeParse",
    "candidate_tests",
    "extract_code",
    "sample_tests",
    "tidy_python",
]
