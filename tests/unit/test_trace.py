"""Execution-grounded reflection (``CodeContext.trace_failures``, after LDB): the reflector
reads a line-by-line trace of the first failed test's call, run in the real sandbox; off, its
prompt is the paper's. Scripted models."""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from reflexion.graphs.programming import programming_builder
from reflexion.programming.context import CodeContext
from reflexion.programming.sandbox import Limits
from reflexion.programming.trace import HEAD_STEPS, TAIL_STEPS, call_of, trace_call
from reflexion.testing import ScriptedChatModel

LIMITS = Limits(test_timeout_s=5.0)
PROMPT = (
    'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n'
    '    >>> add(2, 3)\n    5\n    """\n'
)


def test_the_call_of_a_test_is_the_entry_point_s_first_call_as_written():
    assert call_of("assert add(1, [2,3]) == 4", "add") == "add(1, [2,3])"
    assert call_of("assert abs(add(1, 2) - 3) < 1e-6", "add") == "add(1, 2)"
    assert call_of("assert other(1) == 2", "add") is None
    assert call_of("assert add(1,", "add") is None


def test_a_trace_shows_each_line_run_with_the_values_it_set_and_the_outcome():
    code = "def add(a, b):\n    c = a - b\n    return c\n"
    trace = trace_call(code, "add(2, 3)", LIMITS)
    assert trace == (
        "Trace of add(2, 3):\n"
        "  enter add(a=2, b=3)\n"
        "  line 2: c = a - b   # c = -1\n"
        "  line 3: return c\n"
        "  add returns -1\n"
        "add(2, 3) returned -1"
    )


def test_a_trace_follows_calls_and_exceptions_and_ignores_what_the_code_prints():
    code = (
        "def first(xs):\n    print('noise')\n    return pick(xs, 3)\n"
        "def pick(xs, i):\n    return xs[i]\n"
    )
    trace = trace_call(code, "first([1])", LIMITS)
    assert trace is not None
    lines = trace.splitlines()
    assert lines[1:5] == [
        "  enter first(xs=[1])",
        "  line 2: print('noise')",
        "  line 3: return pick(xs, 3)",
        "  enter pick(xs=[1], i=3)",
    ]
    assert "  pick raises IndexError: list index out of range" in lines
    assert "returns" not in trace  # nothing returned: the exception went through
    assert lines[-1] == "first([1]) raised IndexError: list index out of range"


def test_a_long_run_keeps_its_first_and_last_steps():
    code = "def total(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"
    trace = trace_call(code, "total(100)", LIMITS)
    assert trace is not None
    steps = [ln for ln in trace.splitlines()[1:-1] if not ln.startswith("  ...")]
    assert len(steps) == HEAD_STEPS + TAIL_STEPS
    # the call, line 2, 100 rounds of lines 3 and 4, line 3 once more, line 5, the return
    assert f"  ... {1 + 1 + 200 + 1 + 1 + 1 - HEAD_STEPS - TAIL_STEPS} steps not shown ..." in trace
    assert trace.endswith("total(100) returned 4950")


def test_no_trace_when_the_call_does_not_finish_or_the_code_exits():
    assert trace_call("def f():\n    while True:\n        pass\n", "f()", Limits(1.0)) is None
    assert trace_call("import os\ndef f():\n    os._exit(0)\n", "f()", LIMITS) is None
    assert trace_call("def f(:\n", "f()", LIMITS) is None


def reflector_prompt(ctx: CodeContext) -> str:
    actor = ScriptedChatModel(
        replies=[
            "```python\ndef add(a: int, b: int) -> int:\n    c = a - b\n    return c\n```",
            "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```",
        ]
    )
    reflector = ScriptedChatModel(replies=["Reflection: c = a - b subtracts."])
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=["assert add(1, 1) == 2\n"]),
        reflector_model=reflector,
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": PROMPT, "entry_point": "add", "language": "py"}
    assert graph.invoke(start, config, context=ctx)["solved"] is True
    return reflector.prompt_text(0)


def test_the_reflector_reads_the_first_failed_call_s_trace_when_asked():
    asked = reflector_prompt(CodeContext(max_trials=2, trace_failures=True))
    assert "Trace of add(2, 3):\n  enter add(a=2, b=3)\n  line 2: c = a - b   # c = -1" in asked
    assert "find the first step whose value differs" in asked
    assert "Trace of" not in reflector_prompt(CodeContext(max_trials=2))  # the paper's prompt
