"""The programming nodes (the paper's §4.3), one module per role: the test writer, the code
actor, the unit-test evaluator with the evidence it weighs, what retries and the reflector
read of its feedback, and the reflector's prompt.

The benchmark's hidden tests are not part of the graph state: nothing here can show them.
"""

from reflexion.nodes.programming.actor import (
    code_key,
    code_messages,
    make_code_actor,
    retries_fresh,
)
from reflexion.nodes.programming.common import (
    NO_EVIDENCE,
    NO_TESTS,
    NOT_COMPILED,
    STOPS,
    did_compile,
    problem_of,
    run_tests,
)
from reflexion.nodes.programming.evaluator import doubted_tests, make_unit_test_evaluator
from reflexion.nodes.programming.feedback import failed_tests, render_outcomes
from reflexion.nodes.programming.reflection import code_reflection_messages
from reflexion.nodes.programming.test_writer import (
    make_test_writer,
    test_messages,
    trusted_tests,
    valid_tests,
)

__all__ = [
    "NOT_COMPILED",
    "NO_EVIDENCE",
    "NO_TESTS",
    "STOPS",
    "code_key",
    "code_messages",
    "code_reflection_messages",
    "did_compile",
    "doubted_tests",
    "failed_tests",
    "make_code_actor",
    "make_test_writer",
    "make_unit_test_evaluator",
    "problem_of",
    "render_outcomes",
    "retries_fresh",
    "run_tests",
    "test_messages",
    "trusted_tests",
    "valid_tests",
]
