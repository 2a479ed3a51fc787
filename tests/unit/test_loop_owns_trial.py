"""The loop owns the trial: no actor or evaluator module but the loop's (graphs/loop.py) counts
the trial, emits ``trial_started`` or builds a trial record."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]

SUBGRAPH_ACTORS = {"nodes/qa/react.py", "nodes/alfworld/actor.py"}
"""Actors that are subgraphs of their own: their ``begin`` node still counts the trial, emits
``trial_started`` and recalls lessons (the loop cannot wrap a subgraph without its drawing and
its checkpoints changing). Each is named here so that no other module may."""


def _bookkeeping(tree: ast.AST) -> list[str]:
    """What of the trial's bookkeeping a module does: ``trial_started`` events, ``"trial":
    <...>.trial + 1`` in a state update (a dict with a spread or the attempt's keys; the trial's
    number among a prompt's inputs is no count), trial records built."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            first = node.args[0] if node.args else None
            if (
                name == "emit"
                and isinstance(first, ast.Constant)
                and first.value == "trial_started"
            ):
                found.append(f"{node.lineno}: emits trial_started")
            if name in {"TrialRecord", "CodeTrialRecord"}:
                found.append(f"{node.lineno}: builds a trial record")
        keys = {k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant)}
        # a state update (a spread, or the attempt's keys), not a prompt's inputs
        update = None in getattr(node, "keys", []) or bool(keys & {"answer", "trajectory"})
        if isinstance(node, ast.Dict) and update:
            for key, value in zip(node.keys, node.values, strict=True):
                counted = (
                    isinstance(value, ast.BinOp)
                    and isinstance(value.op, ast.Add)
                    and isinstance(value.left, ast.Attribute)
                    and value.left.attr == "trial"
                )
                if isinstance(key, ast.Constant) and key.value == "trial" and counted:
                    found.append(f"{node.lineno}: counts the trial")
    return found


def test_no_family_node_keeps_the_trials_books():
    modules = [*sorted((ROOT / "nodes").rglob("*.py")), *sorted((ROOT / "graphs").rglob("*.py"))]
    offenders = {}
    for path in modules:
        name = path.relative_to(ROOT).as_posix()
        if name == "graphs/loop.py" or name in SUBGRAPH_ACTORS:
            continue
        found = _bookkeeping(ast.parse(path.read_text()))
        if found:
            offenders[name] = found
    assert not offenders, f"only graphs/loop.py keeps the trial's books: {offenders}"


def test_the_check_sees_the_loop_and_the_subgraph_actors():
    """The check finds what it looks for where it is (so an empty result above means
    something)."""
    for name in ["graphs/loop.py", *SUBGRAPH_ACTORS]:
        found = _bookkeeping(ast.parse((ROOT / name).read_text()))
        assert any("trial_started" in f for f in found), name
        assert any("counts the trial" in f for f in found), name
    assert any(
        "record" in f for f in _bookkeeping(ast.parse((ROOT / "graphs/loop.py").read_text()))
    )
