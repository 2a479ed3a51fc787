"""The test writer (the paper's §4.3): runs once per problem, before the first trial.

The evaluator model writes unit tests for the signature and documentation; only statements
that parse (Python ``ast``) or compile against the signature (Rust) are kept, deduplicated, and
at most ``CodeContext.max_tests`` are sampled. The prompt's own examples come first as trusted
tests under ``CodeContext.internal_tests="examples"``, the default, and then decide alone.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from reflexion.core.context import get_context
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.nodes.common import judge_llm
from reflexion.nodes.programming.common import problem_of, prompt_names
from reflexion.programming.context import CodeContext
from reflexion.programming.examples import example_tests
from reflexion.programming.problems import CodeProblem, stub
from reflexion.programming.replies import candidate_tests, sample_tests
from reflexion.programming.sandbox import (
    Limits,
    check_rust_tests,
)
from reflexion.programming.state import CodeState, graph_family
from reflexion.prompts import render

TEST_FORMS = {
    "py": "assert add(2, 3) == 5",
    "rs": "assert_eq!(add(2, 3), 5);",
}


def test_messages(problem: CodeProblem, count: int) -> list[BaseMessage]:
    """The test writer's prompt."""
    names = prompt_names(problem.language)
    system = render(
        "programming/tests_system", count=str(count), form=TEST_FORMS[problem.language], **names
    )
    user = render("programming/tests_task", prompt=problem.prompt.strip(), **names)
    return [SystemMessage(system), HumanMessage(user)]


def trusted_tests(problem: CodeProblem, ctx: CodeContext) -> list[str]:
    """The prompt's own examples as tests (``internal_tests="examples"``), at most
    ``ctx.max_tests``; Rust ones only when they compile against the signature."""
    examples = example_tests(problem) if ctx.examples_decide else []
    return _compiling(examples, problem, ctx)[: ctx.max_tests]


def _compiling(tests: list[str], problem: CodeProblem, ctx: CodeContext) -> list[str]:
    """The tests, less Rust ones that do not compile against the signature."""
    if problem.language != "rs" or not tests:
        return tests
    limits = Limits(test_timeout_s=ctx.test_timeout)
    valid = set(check_rust_tests(stub(problem), tests, limits, entry_point=problem.entry_point))
    return [t for t in tests if t in valid]


def valid_tests(reply: str, problem: CodeProblem, ctx: CodeContext) -> list[str]:
    """The model's tests in a reply that parse (Python) or compile against the signature
    (Rust), deduplicated; at most ``ctx.max_tests``, sampled reproducibly."""
    written = _compiling(candidate_tests(reply, problem), problem, ctx)
    return sample_tests(written, ctx.max_tests, seed=problem.task_id)


def make_test_writer(
    model: BaseChatModel | None = None,
) -> Node:
    """The test-writer node; ``model`` overrides ``Context.evaluator_model`` (the tests are the
    evaluator's instrument). Tests given in the input are kept as they are. Under
    ``CodeContext.internal_tests="examples"`` a problem whose prompt gives examples gets those
    only: the model writes no tests that could outvote them."""

    def test_writer(state: CodeState, runtime: Runtime[CodeContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, CodeContext)
        problem = problem_of(state)
        if state.tests or ctx.retry == "one_attempt":  # one attempt: no retry to decide on
            return {}
        trusted = trusted_tests(problem, ctx)
        if trusted:
            return {"tests": trusted}
        llm = yield from block(judge_llm, model, ctx)
        messages = test_messages(problem, ctx.max_tests + 2)
        reply = yield from ask(llm, messages, stop=["\n```\n", "\n\n\n"])
        written = yield from block(valid_tests, reply.text, problem, ctx)
        return {"tests": written, "written_tests": written}

    return Node(test_writer, role="test_writer", family=graph_family)
