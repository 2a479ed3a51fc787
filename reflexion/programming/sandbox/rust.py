"""Rust in the sandbox: finding ``rustc``, the harness that runs one test per process, and
reading compile errors and panics into short reasons."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from typing import Any

from reflexion.programming.sandbox.child import DETAIL_CHARS, OUTPUT_CHARS, clip
from reflexion.programming.sandbox.results import Limits
from reflexion.programming.sandbox.verdicts import Run, clip_block, process_reason, timeout_reason

COMPILE_ERROR_CHARS = 1500

RUSTC_FLAGS = (
    "--edition=2021",
    # opt-level=1 makes compute-heavy tests run many times faster than an unoptimised build
    # and costs little compile time; overflow checks and debug assertions stay on, so
    # arithmetic overflow panics as in the debug build (``cargo run``/``cargo test``) that
    # benchmark harnesses use.
    "-C",
    "opt-level=1",
    "-C",
    "overflow-checks=on",
    "-C",
    "debug-assertions=on",
    "--cap-lints=allow",
    "--color=never",
)

_RUST_PROGRAM_MAIN = re.compile(r"(?m)^(?:pub[ \t]+)?fn[ \t]+main[ \t]*\(")

_MISSING_RUSTC = (
    "rustc not found: install Rust with rustup (https://rustup.rs) or Debian's rustc package "
    "(apt install rustc) and make sure rustc is on PATH"
)


def rustc_path() -> str | None:
    """The ``rustc`` to compile with: the one on ``PATH``, else ``~/.cargo/bin/rustc`` (or under
    ``$CARGO_HOME``); ``None`` when there is none."""
    found = shutil.which("rustc")
    if found:
        return found
    homes = [os.environ.get("CARGO_HOME", ""), os.path.join(os.path.expanduser("~"), ".cargo")]
    for home in homes:
        candidate = os.path.join(home, "bin", "rustc") if home else ""
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_PANIC = re.compile(r"panicked at [^\n]*:\n(?P<message>.*?)(?:\nnote: |\n\.\.\.\n|\Z)", re.S)

_PANIC_OLD = re.compile(r"panicked at '(?P<message>.*?)', \S+:\d+:\d+", re.S)

_LEFT = re.compile(r"^\s*left: (?P<value>.*)$", re.M)


def _panic_message(stderr: str) -> str | None:
    """The message of the last panic in a Rust program's stderr; a failed ``assert_eq!`` as
    ``output: <left>``."""
    matches = list(_PANIC.finditer(stderr)) or list(_PANIC_OLD.finditer(stderr))
    if not matches:
        return None
    message = matches[-1].group("message").strip()
    if message.startswith(
        ("assertion `left == right` failed", "assertion failed: `(left == right)`")
    ):
        left = _LEFT.search(message)
        if left:
            value = left.group("value").strip()
            if value.startswith("`") and value.endswith("`,"):
                value = value[1:-2]
            return "output: " + clip(value, OUTPUT_CHARS)
    first = message.splitlines()[0] if message else "panic"
    return clip(first, DETAIL_CHARS)


def rust_failure(run: Run, timeout: float, limits: Limits | None) -> str:
    if run.timed_out:
        return timeout_reason(timeout, limits)
    if "has overflowed its stack" in run.stderr:
        return "stack overflow"
    if "memory allocation of" in run.stderr:
        return "memory limit exceeded"
    panic = _panic_message(run.stderr)
    if panic is not None:
        return panic
    if run.returncode is not None and run.returncode > 0:
        return f"exited with code {run.returncode}"
    return clip(process_reason(run), DETAIL_CHARS)


_RUST_REPORT_FN = """
#[allow(dead_code)]
fn __reflexion_report() {
    use std::io::Write;
    use std::os::unix::io::FromRawFd;
    let fd = std::env::var("REFLEXION_REPORT_FD").ok().and_then(|s| s.parse::<i32>().ok());
    if let Some(fd) = fd {
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = file.write_all(b"ok\\n");
    }
}
"""


def require_rustc() -> str:
    rustc = rustc_path()
    if rustc is None:
        from reflexion.core.errors import ReflexionError  # not at the top: the child lacks it

        raise ReflexionError(_MISSING_RUSTC)
    return rustc


def rust_test_harness(code: str, tests: Sequence[str], entry_point: str | None) -> str:
    """``code`` plus a ``main`` that runs test number ``argv[1]`` and then reports."""
    bind = f"        let candidate = {entry_point};\n" if entry_point else ""
    arms = "".join(
        f"        {i} => {{\n{bind}        {test.strip()}\n        }}\n"
        for i, test in enumerate(tests)
    )
    return (
        f"{code.rstrip()}\n\n{_RUST_REPORT_FN}\n"
        "fn main() {\n"
        "    let __reflexion_which: usize = std::env::args().nth(1)"
        ".and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);\n"
        "    match __reflexion_which {\n"
        f"{arms}"
        "        _ => std::process::exit(97),\n"
        "    }\n"
        "    __reflexion_report();\n"
        "}\n"
    )


def rust_program_harness(source: str) -> tuple[str, bool]:
    """The program with its ``main`` wrapped so that returning from it is reported; unchanged
    (and ``False``) unless it has exactly one top-level ``fn main``."""
    mains = _RUST_PROGRAM_MAIN.findall(source)
    if len(mains) != 1:
        return source, False
    renamed = _RUST_PROGRAM_MAIN.sub("fn __reflexion_user_main(", source, count=1)
    wrapper = (
        "fn main() -> std::process::ExitCode {\n"
        "    let code = std::process::Termination::report(__reflexion_user_main());\n"
        "    __reflexion_report();\n"
        "    code\n"
        "}\n"
    )
    return f"{renamed.rstrip()}\n\n{_RUST_REPORT_FN}\n{wrapper}", True


def rust_check_crate(
    code: str, tests: Sequence[str], entry_point: str | None
) -> tuple[str, list[tuple[int, int]]]:
    """A library crate: ``code`` then one function per test; the tests' 1-based line spans."""
    lines = code.rstrip().splitlines()
    spans: list[tuple[int, int]] = []
    for i, test in enumerate(tests):
        lines.append("")
        lines.append("#[allow(dead_code, unused, clippy::all)]")
        start = len(lines) + 1
        lines.append(f"fn __reflexion_t{i}() {{")
        if entry_point:
            lines.append(f"    let candidate = {entry_point};")
        lines.extend("    " + ln for ln in test.strip().splitlines())
        lines.append("}")
        spans.append((start, len(lines)))
    return "\n".join(lines) + "\n", spans


def _diagnostic_lines(diagnostic: dict[str, Any]) -> list[int]:
    """The check-file lines an error diagnostic points at (macro expansions followed back)."""

    def lines_of(span: dict[str, Any]) -> list[int]:
        if span.get("file_name") == "check.rs":
            return list(range(int(span["line_start"]), int(span["line_end"]) + 1))
        expansion = span.get("expansion")
        if isinstance(expansion, dict) and isinstance(expansion.get("span"), dict):
            return lines_of(expansion["span"])
        return []

    spans = [s for s in diagnostic.get("spans", []) if isinstance(s, dict)]
    primary = [ln for s in spans if s.get("is_primary") for ln in lines_of(s)]
    return primary or [ln for s in spans for ln in lines_of(s)]


def rust_error_tests(stderr: str, spans: list[tuple[int, int]]) -> set[int]:
    """Indices (into ``spans``) of the tests that carry errors; empty when some error lies
    outside every test (the code itself does not compile)."""
    bad: set[int] = set()
    for line in stderr.splitlines():
        try:
            diagnostic = json.loads(line)
        except ValueError:
            continue
        if not isinstance(diagnostic, dict) or not str(diagnostic.get("level", "")).startswith(
            "error"
        ):
            continue
        if not diagnostic.get("spans"):
            continue  # "aborting due to N previous errors" and the like
        hit = {
            k
            for ln in _diagnostic_lines(diagnostic)
            for k, (a, b) in enumerate(spans)
            if a <= ln <= b
        }
        if not hit:
            return set()
        bad |= hit
    return bad


def balanced(test: str) -> bool:
    """Whether a Rust statement's brackets balance (outside strings, chars and comments), so
    that a broken test cannot swallow the functions after it."""
    closing = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    i, n = 0, len(test)
    while i < n:
        c = test[i]
        if test.startswith("//", i):
            end = test.find("\n", i)
            i = n if end < 0 else end
        elif test.startswith("/*", i):
            end = test.find("*/", i + 2)
            if end < 0:
                return False
            i = end + 2
        elif c == "r" and re.match(r'r#*"', test[i:]) and (i == 0 or not test[i - 1].isalnum()):
            hashes = re.match(r"r(#*)\"", test[i:])
            assert hashes is not None
            terminator = '"' + hashes.group(1)
            end = test.find(terminator, i + len(hashes.group(0)))
            if end < 0:
                return False
            i = end + len(terminator)
        elif c == '"':
            i += 1
            while i < n and test[i] != '"':
                i += 2 if test[i] == "\\" else 1
            if i >= n:
                return False
            i += 1
        elif c == "'":
            char = re.match(r"'(?:\\.[^']*|[^\\'])'", test[i:], re.S)
            i += len(char.group(0)) if char else 1  # otherwise a lifetime
        elif c in "([{":
            stack.append(c)
            i += 1
        elif c in closing:
            if not stack or stack.pop() != closing[c]:
                return False
            i += 1
        else:
            i += 1
    return not stack


def rustc_errors(stderr: str, returncode: int | None) -> str:
    """``rustc``'s human-readable errors without the trailing summary, trimmed."""
    kept = [
        ln
        for ln in stderr.splitlines()
        if not ln.startswith(("error: aborting due to", "For more information about"))
        and not re.match(r"Some errors have detailed explanations", ln)
    ]
    text = "\n".join(kept).strip()
    if not text:
        text = f"rustc failed (exit status {returncode})"
    return clip_block(text, COMPILE_ERROR_CHARS)
