"""A tree of attempts (``CodeContext.code_retry="tree"``), after LATS (Zhou et al. 2023).

Every attempt is a node of a tree whose root is the task itself. A retry first *selects* the
node to expand by UCT: each node's value is the mean evaluator score of its subtree (the
share of all internal tests its attempts passed), its visits the subtree's size, and
``value + c * sqrt(ln(N + 1) / visits)`` is highest for the node to expand (``N``: the attempts
so far). It then *expands* it: from the root, a fresh sample of the task; from an attempt, a
repair of that attempt's code with its own test results and the reflections along its branch
(the reflector reflects on every failed attempt, so a failed branch carries its lessons). The
evaluator's score of the new attempt is its value; the answer returned is chosen among all of
them as for every strategy (``Context.select_answer``). The budget is ``max_trials`` attempts,
the same as ``reflexion``'s and ``resample``'s, so the three compare at equal budget.

Unlike LangGraph's LATS tutorial, every node is judged by running code in the sandbox.

The tree search is its own graph (:func:`reflexion.graphs.programming.tree_search_builder`):
its actor (:func:`make_tree_actor`) and its reflector (:func:`keeping_branch_reflections`) are
these; the default loop's nodes know nothing of a tree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.errors import ContextError
from reflexion.core.lessons import Family
from reflexion.core.state import TrialRecord
from reflexion.core.steps import Node, Steps
from reflexion.nodes.programming.actor import (
    draw_attempt,
    first_messages,
    reflection_block_of,
    tests_note,
)
from reflexion.nodes.programming.common import fenced, problem_of, prompt_names
from reflexion.nodes.programming.feedback import shown_feedback
from reflexion.programming.context import CodeContext
from reflexion.programming.state import CodeState, lesson_family
from reflexion.prompts import render

ROOT = -1
"""The root of the tree: the task itself (expanding it is a fresh sample)."""

EXPLORATION = 1.0
"""UCT's exploration constant ``c`` (LATS uses 1)."""


def parents_of(state: Any) -> list[int]:
    """Each attempt's parent (:data:`ROOT` for one drawn from the task), one per attempt."""
    parents = [int(p) for p in getattr(state, "parents", None) or []]
    count = len(state.evaluations)
    padded = (parents + [ROOT] * count)[:count]
    # A parent comes before its child; anything else would make the tree a cycle.
    return [p if p < i else ROOT for i, p in enumerate(padded)]


def parent_update(state: Any, parent: int) -> dict[str, list[int]]:
    """The ``parents`` update for the attempt being drawn: ``parent``, after :data:`ROOT` for
    each earlier attempt that has none (one drawn without the tree, such as a first trial that
    a paired benchmark forked from another strategy's run), so each attempt keeps its own."""
    kept = len(getattr(state, "parents", None) or [])
    return {"parents": [ROOT] * max(0, len(state.evaluations) - kept) + [parent]}


def subtree(node: int, parents: Sequence[int]) -> list[int]:
    """``node``'s attempts and every attempt below it (the whole tree under :data:`ROOT`)."""
    if node == ROOT:
        return list(range(len(parents)))
    members, frontier = [node], [node]
    while frontier:
        below = [i for i, p in enumerate(parents) if p in frontier]
        members += below
        frontier = below
    return members


def uct(node: int, records: Sequence[TrialRecord], parents: Sequence[int]) -> float:
    """The node's UCT score: its subtree's mean score plus the exploration bonus."""
    members = subtree(node, parents)
    root_children = sum(1 for p in parents if p == ROOT)
    visits = max(1, root_children) if node == ROOT else len(members)
    value = sum(float(records[i]["score"]) for i in members) / max(1, len(members))
    return value + EXPLORATION * math.sqrt(math.log(len(records) + 1) / visits)


def choose_parent(state: Any) -> int:
    """The node the next attempt expands: the highest UCT among the attempts that gave code
    and did not succeed, and the root; an attempt wins a tie with the root (its reflection is
    evidence), the earlier attempt a tie with a later one."""
    records = list(state.evaluations)
    parents = parents_of(state)
    candidates = [
        i for i, record in enumerate(records) if record["answer"] and not record["success"]
    ]
    best, best_score = ROOT, uct(ROOT, records, parents)
    for node in reversed(candidates):  # reversed, so the earliest of equals is kept
        score = uct(node, records, parents)
        if score >= best_score:
            best, best_score = node, score
    return best


def branch_reflections(state: Any, node: int, limit: int) -> list[str]:
    """The reflections along the branch from the root to ``node`` (``node``'s own last), at
    most ``limit`` (Ω), skipping attempts that got none."""
    parents = parents_of(state)
    written = list(getattr(state, "branch_reflections", None) or [])
    path: list[int] = []
    while node != ROOT and node < len(parents):
        path.append(node)
        node = parents[node]
    texts = [written[i] for i in reversed(path) if i < len(written) and written[i]]
    return texts[-limit:] if limit > 0 else []


def keeping_branch_reflections(reflector: Node) -> Node:
    """The tree search's reflector: the shared one, and each failed attempt's reflection kept
    by attempt (``branch_reflections``: the Ω window holds only the latest ones, and a branch
    needs its own, however old)."""

    def node(state: Any, runtime: Runtime[CodeContext]) -> Steps[dict[str, Any]]:
        update: dict[str, Any] = yield from reflector.core(state, runtime)
        window = update.get("reflections")  # in the update only when a lesson was written
        new = window[-1] if window else ""
        kept = len(getattr(state, "branch_reflections", None) or [])
        pad = [""] * max(0, len(state.evaluations) - 1 - kept)  # attempts with none
        return {**update, "branch_reflections": [*pad, new]}

    return Node(node, role="reflector", family=reflector.labels.family, name="tree_reflector")


def expansion_messages(state: CodeState, ctx: CodeContext, parent: int) -> list[BaseMessage]:
    """The prompt that expands ``parent``: the first trial's for the root; for an attempt,
    its code as the assistant's turn, then its own test results and the last Ω reflections
    along its branch, and the request to fix it."""
    messages = first_messages(state)
    if parent == ROOT:
        return messages
    problem = problem_of(state)
    record = state.evaluations[parent]
    retry = render(
        "programming/retry",
        feedback=shown_feedback(record, state, ctx),
        reflection_block=reflection_block_of(branch_reflections(state, parent, ctx.memory_size)),
        entry_point=problem.entry_point,
        **prompt_names(problem.language),
        **tests_note(state, ctx),
    )
    return [
        *messages,
        AIMessage(fenced(record["answer"] or "", problem.language)),
        HumanMessage(retry),
    ]


def make_tree_actor(model: BaseChatModel | None = None, *, family: Family = lesson_family) -> Node:
    """The tree search's actor: the first trial as the code actor's; then each attempt
    expands the node :func:`choose_parent` picks (a fresh sample from the root, a repair of an
    attempt), drawn as every code attempt is
    (:func:`~reflexion.nodes.programming.actor.draw_attempt`), and records its parent. Its context
    keeps ``code_retry="tree"`` (what its runs are named by); another value is refused."""

    def tree_actor(state: CodeState, runtime: Runtime[CodeContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, CodeContext)
        if ctx.code_retry != "tree":
            raise ContextError(
                f"code_retry '{ctx.code_retry}' is not the tree search's: leave it at tree "
                "here, or run reflexion_programming for the other retries"
            )
        parent = choose_parent(state) if state.evaluations else ROOT
        messages = expansion_messages(state, ctx, parent) if state.trial else first_messages(state)
        fresh = state.trial > 0 and bool(state.evaluations)
        attempt = yield from draw_attempt(state, ctx, model, messages, fresh)
        return {**attempt, **parent_update(state, parent)}

    return Node(tree_actor, role="actor", family=family, acts=True)
