"""Programming tasks: a problem, its language, and the programs that run it (reading code and
tests out of model replies is :mod:`reflexion.programming.replies`; the benchmark reads
HumanEval and MultiPL-E files into problems: ``reflexion bench programming --dataset``).

A problem's ``test`` is the benchmark's hidden test. It never enters a prompt: the graphs do not
even receive it; the benchmark runs it once per distinct implementation to score pass@1.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

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
    "language_of",
    "python_preamble",
    "rust_preamble",
    "stub",
]
