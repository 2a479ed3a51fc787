"""The tree of attempts (its own graph, ``tree_search_builder``, LATS-style): UCT picks the
node a retry expands, an attempt's expansion repairs its code with its own results and its
branch's reflections, the root's is a fresh sample; the default loop refuses the tree's
``code_retry`` and the tree refuses the others; scripted models, the real sandbox."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.errors import ContextError
from reflexion.graphs.programming import programming_builder, tree_search_builder
from reflexion.harness.bench.ledger import BenchTask
from reflexion.harness.cli.programming import _scorer
from reflexion.nodes.programming.tree import (
    ROOT,
    branch_reflections,
    choose_parent,
    parents_of,
    subtree,
    uct,
)
from reflexion.programming.context import CodeContext, TreeContext
from reflexion.programming.problems import CodeProblem
from reflexion.testing import ScriptedChatModel

PROMPT = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n'
TESTS = ["assert add(1, 1) == 2", "assert add(2, 0) == 2"]
HIDDEN = "def check(candidate):\n    assert candidate(2, 3) == 5\n"


def code(body: str) -> str:
    return f"```python\ndef add(a: int, b: int) -> int:\n    return {body}\n```"


def record(score: float, answer: str | None = "x", success: bool = False) -> dict[str, Any]:
    return {"answer": answer, "score": score, "success": success}


def state(records: list[dict[str, Any]], parents: list[int], notes=()) -> Any:
    return SimpleNamespace(evaluations=records, parents=parents, branch_reflections=list(notes))


# ---- selection ----------------------------------------------------------------------------------


def test_subtrees_and_uct_scores():
    parents = [ROOT, 0, 1, ROOT]
    assert subtree(0, parents) == [0, 1, 2] and subtree(2, parents) == [2]
    assert subtree(ROOT, parents) == [0, 1, 2, 3]
    records = [record(0.5), record(0.0), record(1.0), record(0.25)]
    explore = math.sqrt(math.log(5) / 3)
    assert uct(0, records, parents) == pytest.approx(0.5 + explore)  # mean of 0.5, 0, 1
    assert uct(ROOT, records, parents) == pytest.approx(1.75 / 4 + math.sqrt(math.log(5) / 2))


def test_the_first_retry_repairs_the_attempt_and_an_unpromising_tree_restarts_from_the_task():
    # one attempt: it ties with the root, and its reflection is evidence: it is expanded
    assert choose_parent(state([record(0.5)], [ROOT])) == 0
    # its repair scored 0: the root (mean 0.25, one child) now beats both
    assert choose_parent(state([record(0.5), record(0.0)], [ROOT, 0])) == ROOT
    # a good branch is expanded again; an attempt with no code or a success never is
    records = [record(0.5), record(0.9), record(1.0, success=True), record(0.9, answer=None)]
    assert choose_parent(state(records, [ROOT, 0, 1, ROOT])) == 1


def test_a_branch_reads_the_reflections_along_its_path_at_most_omega():
    tree = state([record(0.5)] * 4, [ROOT, 0, ROOT, 1], notes=["first", "second", "", "fourth"])
    assert branch_reflections(tree, 3, 3) == ["first", "second", "fourth"]
    assert branch_reflections(tree, 3, 1) == ["fourth"]
    assert branch_reflections(tree, 2, 3) == []  # it got no reflection
    assert branch_reflections(tree, 1, 0) == []


# ---- the loop ------------------------------------------------------------------------------------


def test_tree_retries_expand_the_chosen_attempt_with_its_branchs_reflection():
    actor = ScriptedChatModel(replies=[code("a"), code("b"), code("a + b")])
    reflector = ScriptedChatModel(replies=["Reflection: R1 add b.", "Reflection: R2 add a."])
    graph = tree_search_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=["assert add(1, 1) == 2\n"]),
        reflector_model=reflector,
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "tests": TESTS}
    ctx = CodeContext(code_retry="tree", max_trials=3, memory_size=1)
    graph.invoke(start, config, context=ctx)
    values = graph.get_state(config).values
    assert [e["score"] for e in values["evaluations"]] == [0.5, 0.0, 1.0]
    assert values["parents"] == [ROOT, 0, ROOT]  # repair of attempt 1, then a fresh sample
    assert values["branch_reflections"][:2] == ["R1 add b.", "R2 add a."]
    second = actor.prompt_text(1)
    assert "return a\n" in second and "R1 add b." in second and "R2" not in second
    assert [m.text for m in actor.prompts[2]] == [m.text for m in actor.prompts[0]]
    assert values["solved"] is True and "a + b" in values["answer"]
    # a benchmark's final line keeps the parents, so `perf retries` pairs each retry with them
    problem = CodeProblem("t", "py", PROMPT, "add", HIDDEN, "humaneval")
    task = BenchTask(thread_id="t", input=start, label="t", meta={"task_id": "t"})
    final = _scorer({"t": problem}, ctx)(task, values)
    assert final["parents"] == [ROOT, 0, ROOT] and final["hidden_pass"] is True


def test_a_tree_grows_from_a_first_trial_drawn_without_it():
    """A paired benchmark forks the first trial of another strategy's run, which recorded no
    parent: the tree's first retry must not take attempt 1 for its own parent (a cycle). The
    default loop's first trial stops before ``retry``, a step the tree's graph has too."""
    models = {
        "actor_model": ScriptedChatModel(replies=[code("a"), code("b"), code("a + b")]),
        "evaluator_model": ScriptedChatModel(replies=["assert add(1, 1) == 2\n"]),
        "reflector_model": ScriptedChatModel(replies=["Reflection: R1.", "Reflection: R2."]),
    }
    saver = InMemorySaver()
    loop = programming_builder(**models).compile(checkpointer=saver)
    tree = tree_search_builder(**models).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "tests": TESTS}
    loop.invoke(start, config, context=CodeContext(max_trials=3), interrupt_before=["retry"])
    assert loop.get_state(config).next == ("retry",)
    assert loop.get_state(config).values.get("parents", []) == []
    tree.invoke(None, config, context=TreeContext(max_trials=3))
    values = tree.get_state(config).values
    assert values["parents"] == [ROOT, 0, ROOT]
    assert values["solved"] is True


def test_a_parent_that_is_not_earlier_reads_as_the_root():
    """Parents recorded out of step (attempt 1's at attempt 0's place) would be a cycle."""
    records = [record(0.5), record(0.0)]
    assert parents_of(state(records, [0, 1])) == [ROOT, ROOT]
    assert parents_of(state(records, [ROOT, 0])) == [ROOT, 0]


def test_other_retries_record_no_tree():
    actor = ScriptedChatModel(replies=[code("a"), code("a + b")])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=["assert add(1, 1) == 2\n"]),
        reflector_model=ScriptedChatModel(replies=["Reflection: add b."]),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "tests": TESTS}
    graph.invoke(start, config, context=CodeContext(max_trials=2))
    values = graph.get_state(config).values
    assert values.get("parents", []) == [] and values.get("branch_reflections", []) == []


def test_each_graph_refuses_the_other_s_retries_in_one_line():
    start = {"task": PROMPT, "entry_point": "add", "language": "py", "tests": TESTS}
    for builder, ctx, said in (
        (programming_builder, CodeContext(code_retry="tree"), "reflexion_programming_tree"),
        (tree_search_builder, TreeContext(code_retry="fresh"), "leave it at tree"),
    ):
        graph = builder(
            actor_model=ScriptedChatModel(replies=[code("a")]),
            evaluator_model=ScriptedChatModel(replies=["assert add(1, 1) == 2\n"]),
        ).compile()
        with pytest.raises(ContextError, match=said) as caught:
            graph.invoke(start, context=ctx)
        assert "\n" not in str(caught.value)
    assert TreeContext().code_retry == "tree" and TreeContext.paper().code_retry == "tree"
