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


def python_verdict(run: Run, timeout: float, limits: Limits | None) -> tuple[str, str]:
    """("pass"|"fail"|"compile_error", detail) of a Python runner process."""
    for line in run.report.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(message, dict)
            and message.get("token") == run.token
            and message.get("status") in {"pass", "fail", "compile_error"}
        ):
            status = str(message["status"])
            detail = str(message.get("detail", ""))
            if status == "compile_error":
                return status, detail
            return status, clip(detail, DETAIL_CHARS)
    if run.timed_out:
        return "fail", timeout_reason(timeout, limits)
    return "fail", clip(process_reason(run), DETAIL_CHARS)
