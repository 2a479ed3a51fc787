"""How a sandboxed process ended (:class:`Run`) and the short reason a failed test gets."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass

from reflexion.programming.sandbox.child import DETAIL_CHARS, SETUP_FAILED, clip
from reflexion.programming.sandbox.results import Limits


@dataclass(frozen=True)
class Run:
    """How one sandboxed process ended."""

    returncode: int | None
    """Exit status (negative: killed by that signal); ``None`` when it could not start."""
    timed_out: bool
    report: str
    """What it wrote to the report pipe."""
    stdout: str
    stderr: str
    """The first ``output_bytes`` of stderr, plus its last few KiB when it was longer."""
    token: str = ""
    """The secret a Python runner's report must carry to count."""


def clip_block(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 4].rstrip() + "\n..."


def suite_timeout(limits: Limits) -> str:
    return f"suite timeout ({float(limits.suite_timeout_s)}s)"


def timeout_reason(timeout: float, limits: Limits | None) -> str:
    """Why a run was killed: its own timeout, or (``limits`` given) what was left of a suite's."""
    if limits is not None and timeout < limits.test_timeout_s:
        return suite_timeout(limits)
    return f"timed out after {float(timeout)}s"


def process_reason(run: Run) -> str:
    """Why a process ended without reporting a result."""
    code = run.returncode
    text = run.stderr
    if code == SETUP_FAILED:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return "sandbox setup failed: " + (lines[-1] if lines else "unknown error")
    if "MemoryError" in text or "memory allocation of" in text or "Cannot allocate memory" in text:
        return "memory limit exceeded"
    if "has overflowed its stack" in text:
        return "stack overflow"
    if code is None:
        return text or "could not start"
    if code < 0:
        number = -code
        if number == signal.SIGXCPU:
            return "CPU time limit exceeded"
        if number == signal.SIGXFSZ:
            return "file size limit exceeded"
        try:
            name = signal.Signals(number).name
        except ValueError:
            return f"process killed by signal {number}"
        return f"process killed by signal {number} ({name})"
    return f"exited with code {code} before reporting a result"


def reported(
    run: Run, statuses: frozenset[str] = frozenset({"pass", "fail", "compile_error"})
) -> tuple[str, str] | None:
    """The (status, detail) a runner reported with the run's token, if it reported one."""
    for line in run.report.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(message, dict)
            and message.get("token") == run.token
            and message.get("status") in statuses
        ):
            return str(message["status"]), str(message.get("detail", ""))
    return None


def python_verdict(run: Run, timeout: float, limits: Limits | None) -> tuple[str, str]:
    """("pass"|"fail"|"compile_error", detail) of a Python runner process."""
    found = reported(run)
    if found is not None:
        status, detail = found
        return status, detail if status == "compile_error" else clip(detail, DETAIL_CHARS)
    if run.timed_out:
        return "fail", timeout_reason(timeout, limits)
    return "fail", clip(process_reason(run), DETAIL_CHARS)


def judged_verdict(
    judge: Run, candidate: Run, timeout: float, limits: Limits | None
) -> tuple[str, str]:
    """("pass"|"fail"|"compile_error", detail) of a judged test: the judge's report, or,
    when the candidate process ended or broke the channel, why it did."""
    found = reported(judge, frozenset({"pass", "fail", "compile_error", "gone"}))
    if found is not None and found[0] != "gone":
        status, detail = found
        return status, detail if status == "compile_error" else clip(detail, DETAIL_CHARS)
    if judge.timed_out or candidate.timed_out:
        return "fail", timeout_reason(timeout, limits)
    if found is None:
        return "fail", clip(process_reason(judge), DETAIL_CHARS)
    if candidate.returncode == 0:
        return "fail", "the candidate broke the channel (it may only answer with plain data)"
    return "fail", clip(process_reason(candidate), DETAIL_CHARS)
