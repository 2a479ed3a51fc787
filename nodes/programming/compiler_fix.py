"""Rust under ``CodeContext.compiler_fixes``: after code that did not compile, the next attempt
is first ``rustc``'s own suggested fixes applied to it (``rustc --error-format=json`` runs in
the sandbox, :func:`reflexion.programming.sandbox.fix_rust`), with no model call. A node of its
own, so the drawing shows the attempt that no model wrote; when the fixes do not make the code
compile, the actor's retry follows as usual.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.steps import Node, Steps, block
from reflexion.nodes.programming.actor import code_key, tried_keys
from reflexion.nodes.programming.common import did_compile, problem_of
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import rust_preamble
from reflexion.programming.sandbox import fix_rust
from reflexion.programming.state import CodeState, graph_family


def tries_compiler_fix(state: CodeState, ctx: CodeContext) -> bool:
    """Whether the next attempt may be the compiler's fix: Rust under
    ``CodeContext.compiler_fixes``, after the model's own code (not already a fix) that did
    not compile."""
    if not (ctx.compiler_fixes and state.language == "rs" and state.evaluations):
        return False
    last = state.evaluations[-1]
    return bool(last["answer"]) and not did_compile(last) and not last.get("compiler_fix")


def made_fix(state: CodeState) -> bool:
    """After the compiler-fix node: whether it made the attempt (else the actor makes it)."""
    return state.compiler_fix


def make_compiler_fix() -> Node:
    """The node: the last attempt with ``rustc``'s fixes applied, as the next trial's attempt,
    when they make it compile into code no earlier attempt had; else only
    ``compiler_fix=False`` (the actor follows)."""

    def compiler_fix(state: CodeState, runtime: Runtime[CodeContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, CodeContext)
        if not tries_compiler_fix(state, ctx):
            return {"compiler_fix": False}
        problem = problem_of(state)
        code = str(state.evaluations[-1]["answer"])
        fixed = yield from block(fix_rust, code, preamble=rust_preamble(problem.prompt, code))
        if fixed is None or code_key(fixed, "rs") in tried_keys(state, problem):
            return {"compiler_fix": False}
        return {
            "trajectory": [fixed],
            "answer": fixed,
            "stop_reason": None,
            "compiler_fix": True,
        }

    return Node(compiler_fix, role="compiler_fix", family=graph_family, acts=True)
