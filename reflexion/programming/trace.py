"""Execution traces of a failed test's call, for a reflection grounded in what the code did
(after LDB, Zhong et al. 2024, which debugs with the intermediate values of a failing run).

:func:`trace_call` runs a Python implementation on one call in the sandbox under
``sys.settrace`` and returns, line by line, each line the implementation ran and the values
that line set, then what the call returned or raised. A long run keeps its first and last
steps. The traced code is the model's, so the trace is only ever shown to the model: it
decides nothing.
"""

from __future__ import annotations

import ast
import json

from reflexion.programming.sandbox import Limits
from reflexion.programming.sandbox.box import Sandbox

MARK = "\x00reflexion-trace:"
"""What starts the trace's line in the program's output (the code may print too)."""

HEAD_STEPS = 14
TAIL_STEPS = 10
"""A trace keeps the first and the last steps of a run."""
VALUE_CHARS = 60
LINE_CHARS = 60

_HARNESS = """
import json as _json, sys as _sys
from collections import deque as _deque
_source = {source!r}
_head, _tail, _seen = [], _deque(maxlen={tail}), [0]
_values, _pending, _raised, _shown = {{}}, {{}}, set(), set()


def _show(value):
    try:
        text = repr(value)
    except Exception as exc:
        text = "<unprintable: " + type(exc).__name__ + ">"
    return text if len(text) <= {chars} else text[: {chars} - 3] + "..."


def _error(exc):
    return type(exc).__name__ + ": " + _show(str(exc))[1:-1]


def _keep(step):
    _seen[0] += 1
    (_head if len(_head) < {head} else _tail).append(step)


def _settled(frame):
    now = {{k: _show(v) for k, v in frame.f_locals.items() if not k.startswith("__")}}
    before = _values.get(id(frame), {{}})
    _values[id(frame)] = now
    return {{k: v for k, v in now.items() if before.get(k) != v}}


def _trace(frame, event, arg):
    if frame.f_code.co_filename != "<attempt>" or _seen[0] > 20000:
        return None
    key = id(frame)
    if event == "call":
        caller = id(frame.f_back)
        if caller in _pending and caller not in _shown:  # the line that makes this call
            _shown.add(caller)
            _keep(["line", _pending[caller], {{}}])
        _values[key] = {{}}
        _keep(["call", frame.f_code.co_name, _settled(frame)])
        return _trace
    if key in _pending:
        line, changed = _pending.pop(key), _settled(frame)
        if key not in _shown or changed:
            _keep(["line", line, changed])
        _shown.discard(key)
    if event == "line":
        _raised.discard(key)
        _pending[key] = frame.f_lineno
    elif event == "exception":
        _raised.add(key)
        _keep(["raise", frame.f_code.co_name, _error(arg[1])])
    elif event == "return":
        if key not in _raised:
            _keep(["return", frame.f_code.co_name, _show(arg)])
        _raised.discard(key)
        _values.pop(key, None)
    return _trace


_namespace = {{"__name__": "__main__"}}
exec(compile(_source, "<attempt>", "exec"), _namespace)
_outcome = None
_sys.settrace(_trace)
try:
    _result = eval({call!r}, _namespace)
except BaseException as _exc:
    _outcome = ["raised", _error(_exc)]
else:
    _outcome = ["returned", _show(_result)]
finally:
    _sys.settrace(None)
print({mark!r} + _json.dumps([_head, list(_tail), _seen[0], _outcome]))
"""


def call_of(test: str, entry_point: str) -> str | None:
    """The first call of ``entry_point`` in a Python test (``assert f(1) == 2`` gives
    ``f(1)``), as written; ``None`` when the test has none or does not parse."""
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == entry_point
        ):
            return ast.get_source_segment(test, node)
    return None


def trace_program(program: str, call: str) -> str:
    """The program that runs ``call`` on ``program`` under the tracer and prints the trace."""
    return _HARNESS.format(
        source=program,
        call=call,
        head=HEAD_STEPS,
        tail=TAIL_STEPS,
        chars=VALUE_CHARS,
        mark=MARK,
    )


def trace_call(program: str, call: str, limits: Limits) -> str | None:
    """Run ``call`` (e.g. ``f([1, 2])``) on the Python ``program`` in the sandbox and return
    its trace (:func:`format_trace`); ``None`` when the run printed none (it did not compile,
    exited early or ran out of time)."""
    with Sandbox(limits) as box:
        run = box.python("program", trace_program(program, call), limits.test_timeout_s)
    line = next((ln for ln in reversed(run.stdout.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        return None
    try:
        head, tail, seen, outcome = json.loads(line.removeprefix(MARK))
    except (ValueError, TypeError):
        return None
    return format_trace(program, call, head, tail, int(seen), outcome)


def format_trace(
    program: str,
    call: str,
    head: list[list[object]],
    tail: list[list[object]],
    seen: int,
    outcome: list[str] | None,
) -> str:
    """The trace as the reflector reads it: the call, each step (a function entered with its
    arguments, a line run with the values it set, a return or an exception), the steps left
    out of a long run, and the outcome."""
    lines = program.splitlines()
    rows = [f"Trace of {call}:"]
    for steps in (head, tail):
        if steps is tail and seen > len(head) + len(tail):
            rows.append(f"  ... {seen - len(head) - len(tail)} steps not shown ...")
        for step in steps:
            rows.append("  " + _step(step, lines))
    if outcome is not None:
        rows.append(f"{call} {outcome[0]} {outcome[1]}")
    return "\n".join(rows)


def _step(step: list[object], lines: list[str]) -> str:
    kind = step[0]
    if kind == "line":
        number = int(step[1])  # type: ignore[call-overload]
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        if len(text) > LINE_CHARS:
            text = text[: LINE_CHARS - 3] + "..."
        values = step[2] if isinstance(step[2], dict) else {}
        shown = ", ".join(f"{k} = {v}" for k, v in values.items())
        return f"line {number}: {text}" + (f"   # {shown}" if shown else "")
    if kind == "call":
        values = step[2] if isinstance(step[2], dict) else {}
        return f"enter {step[1]}(" + ", ".join(f"{k}={v}" for k, v in values.items()) + ")"
    if kind == "return":
        return f"{step[1]} returns {step[2]}"
    return f"{step[1]} raises {step[2]}"
