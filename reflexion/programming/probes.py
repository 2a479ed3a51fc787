"""Probe inputs for cross-checking Python attempts (``CodeContext.cross_check``), made from the
prompt's examples without a model.

Each example's call is varied one argument at a time, a little and within its type: a number
one larger or twice as large, a word or a list reversed or rotated by one. Lengths are kept,
because arguments often must agree in length: a right implementation may answer a probe that
breaks such a rule otherwise than another right one, a false alarm (tried first, sequences
one item shorter or longer gave 3 such alarms among the 0.5B model's right first attempts on
HumanEval, and caught no wrong attempt more).

Only the inputs matter: a probe keeps the example's expected value, which for the new input is
a guess, and implementations are compared by what they return on it (see
:mod:`reflexion.programming.behaviour`). Small models write few usable tests of their own,
while most problems with examples yield probes this way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from reflexion.programming.replies import sample_tests


def mutated_probes(trusted: list[str], entry_point: str, limit: int, seed: str) -> list[str]:
    """Up to ``limit`` probe tests (``assert f(new input) == example's value``), sampled
    reproducibly by ``seed``, none repeating an example's call; from the trusted tests whose
    call passes only literal positional arguments."""
    examples = [e for e in (_example(t, entry_point) for t in trusted) if e is not None]
    known = {ast.unparse(call) for call, _ in examples}
    probes: dict[str, None] = {}
    for call, expected in examples:
        values = [ast.literal_eval(a) for a in call.args]
        for i, value in enumerate(values):
            for variant in _variants(value):
                args = [*values[:i], variant, *values[i + 1 :]]
                text = ast.unparse(ast.parse(f"{entry_point}({', '.join(map(repr, args))})"))
                if text not in known:
                    probes[f"assert {text} == {ast.unparse(expected)}"] = None
    return sample_tests(list(probes), limit, seed=seed)


def _example(test: str, entry_point: str) -> tuple[ast.Call, ast.expr] | None:
    """The call and the expected value of ``assert f(literals…) == value``; ``None`` for any
    other test."""
    try:
        node = ast.parse(test).body[0]
    except (SyntaxError, ValueError, MemoryError, RecursionError, IndexError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    compare = node.test
    call = compare.left
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    if not isinstance(call, ast.Call) or call.keywords:
        return None
    if not isinstance(call.func, ast.Name) or call.func.id != entry_point:
        return None
    try:
        for arg in call.args:
            ast.literal_eval(arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return call, compare.comparators[0]


def _variants(value: Any) -> Iterator[Any]:
    """Small changes of a literal within its type (none for booleans, dictionaries, sets,
    ``None``, empty sequences, whose items' type is unknown, and strings with spaces, which
    are usually formatted text that a reversed or cut copy would not be)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        candidates: list[Any] = [value + 1, value * 2]
    elif isinstance(value, float):
        candidates = [value * 2, value + 0.5]
    elif _sequence(value):
        candidates = [value[::-1], value[1:] + value[:1]]
    else:
        return
    seen: list[Any] = [value]
    for candidate in candidates:
        if candidate not in seen:
            seen.append(candidate)
            yield candidate


def _sequence(value: Any) -> bool:
    """A list or tuple, or a string without spaces, of two items or more."""
    if isinstance(value, str):
        return len(value) > 1 and not any(c.isspace() for c in value)
    return isinstance(value, list | tuple) and len(value) > 1


__all__ = ["mutated_probes"]
