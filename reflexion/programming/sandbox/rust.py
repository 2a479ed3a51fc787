"""Rust in the sandbox: finding ``rustc``, the crates of a judged test (the judge, which runs
the tests against a proxy of the entry point, and the candidate's server, which answers its
calls with plain data; see ``wire.rs``), and reading compile errors and panics into short
reasons."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reflexion.programming.sandbox.child import DETAIL_CHARS, OUTPUT_CHARS, clip
from reflexion.programming.sandbox.results import Limits
from reflexion.programming.sandbox.signature import Signature, blank, depth
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
    "-C",
    "strip=debuginfo",  # a tenth of the size; panic messages keep their locations
    "--color=never",
)
"""The flags every compile shares."""


def rustc_flags(name: str) -> tuple[str, ...]:
    """The flags for ``name``'s compile: the judge (the tests) as rustc compiles any crate, so
    a deny-by-default lint such as ``overflowing_literals`` stays an error (``256`` is no
    ``u8``); the candidate's code and the server around it with lints capped, as before."""
    return RUSTC_FLAGS if name == "judge" else (*RUSTC_FLAGS, "--cap-lints=allow")


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

_JUDGE_PRELUDE = "#[allow(unused_imports)]\nuse std::collections::*;\n"
"""The judge's only import: the collections a test may name (an explicit import in a test
program shadows a glob without a clash)."""

_ENDED = "reflexion-judge: the candidate's process ended before replying"
_GARBLED = "reflexion-judge: the candidate's reply is not a"


@functools.cache
def _wire() -> str:
    """The Rust module both binaries of a judged test carry (``wire.rs``)."""
    return Path(__file__).with_name("wire.rs").read_text(encoding="utf-8")


def require_rustc() -> str:
    rustc = rustc_path()
    if rustc is None:
        from reflexion.core.errors import ReflexionError  # not at the top: the child lacks it

        raise ReflexionError(_MISSING_RUSTC)
    return rustc


def _proxy(sig: Signature) -> str:
    """The judge's stand-in for the entry point: it sends the arguments to the candidate's
    process and reads the result back as the declared type (a reference result is leaked)."""
    params = ", ".join(f"a{i}: {t.render()}" for i, t in enumerate(sig.params))
    result = sig.returns
    shown = result.render("'static") if result.kind == "ref" else result.render()
    puts = "".join(
        f"    __reflexion_wire::Put::put(&a{i}, &mut request);\n" for i in range(len(sig.params))
    )
    value = "value"
    if result.kind == "ref":
        inner = result.args[0].kind
        value = {
            "str": "Box::leak(value.into_boxed_str())",
            "slice": "Box::leak(value.into_boxed_slice())",
        }.get(inner, "Box::leak(Box::new(value))")
    return (
        "#[allow(dead_code, unused_mut, clippy::all)]\n"
        f"fn {sig.name}({params}) -> {shown} {{\n"
        "    let mut request: Vec<u8> = Vec::new();\n"
        f"{puts}"
        "    let reply = __reflexion_wire::call(&request);\n"
        f"    let value: {result.owned().render()} = "
        f"__reflexion_wire::reply(&reply, {json.dumps(result.render())});\n"
        f"    {value}\n"
        "}\n"
    )


def candidate_server(code: str, sig: Signature) -> str:
    """``code`` plus a ``main`` that answers the judge's calls of the entry point until the
    channel closes."""
    reads, args = [], []
    for i, param in enumerate(sig.params):
        mutable = param.kind == "ref" and param.mutable
        reads.append(
            f"        let {'mut ' if mutable else ''}a{i}: {param.owned().render()} = "
            "__reflexion_wire::arg(r)?;\n"
        )
        args.append(("&mut " if mutable else "&" if param.kind == "ref" else "") + f"a{i}")
    return (
        f"{code.rstrip()}\n\n{_wire()}\n"
        "fn main() {\n"
        "    __reflexion_wire::serve(|r, out| {\n"
        f"{''.join(reads)}"
        f"        let value = {sig.name}({', '.join(args)});\n"
        "        __reflexion_wire::Put::put(&value, out);\n"
        "        Ok(())\n"
        "    });\n"
        "}\n"
    )


def judge_suite(tests: Sequence[str], sig: Signature) -> str:
    """The judge of a suite: a proxy of the entry point and a ``main`` that runs test number
    ``argv[1]`` (after ``let candidate = <entry point>;``) and then reports."""
    arms = "".join(
        f"        {i} => {{\n            let candidate = {sig.name};\n"
        f"            {test.strip()}\n        }}\n"
        for i, test in enumerate(tests)
    )
    return (
        f"{_JUDGE_PRELUDE}\n{_wire()}\n{_proxy(sig)}\n{_RUST_REPORT_FN}\n"
        "fn main() {\n"
        "    __reflexion_wire::guard();\n"
        "    let __reflexion_which: usize = std::env::args().nth(1)"
        ".and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);\n"
        "    match __reflexion_which {\n"
        f"{arms}"
        "        _ => std::process::exit(97),\n"
        "    }\n"
        "    __reflexion_report();\n"
        "}\n"
    )


def judge_program(test_program: str, sig: Signature) -> str | None:
    """The judge of a benchmark's test program (its own ``fn main``, e.g. MultiPL-E's), whose
    return is reported; ``None`` unless it has exactly one top-level ``fn main``."""
    harness, wrapped = rust_program_harness(test_program, first="__reflexion_wire::guard();")
    if not wrapped:
        return None
    return f"{_JUDGE_PRELUDE}\n{_wire()}\n{_proxy(sig)}\n{harness}"


def rust_judged(judge: Run, candidate: Run, timeout: float, limits: Limits | None) -> str:
    """Why a judged Rust test failed (``""`` when it passed): the judge's panic, or, when the
    candidate's process ended before replying, why it did."""
    if judge.report.startswith("ok") and judge.returncode == 0 and not judge.timed_out:
        return ""
    if judge.timed_out:
        return timeout_reason(timeout, limits)
    if _ENDED in judge.stderr:
        if candidate.returncode == 0:
            return "exited with code 0 before returning a result"
        return rust_failure(candidate, timeout, limits)
    garbled = judge.stderr.find(_GARBLED)
    if garbled >= 0:
        line = judge.stderr[garbled:].splitlines()[0]
        return clip("the candidate's reply is not a" + line[len(_GARBLED) :], DETAIL_CHARS)
    return rust_failure(judge, timeout, limits)


def rust_program_harness(source: str, first: str = "", secret: str = "") -> tuple[str, bool]:
    """The program with its ``main`` wrapped so that returning from it is reported (after
    ``first``, a statement run before it); unchanged (and ``False``) unless it has exactly one
    top-level ``fn main``. With ``secret`` (a whole program's run) the report is that secret,
    written by a function named after it, which the program's source cannot name."""
    code = blank(source)  # a `fn main(` in a comment or a string is no main
    mains = [m for m in _RUST_PROGRAM_MAIN.finditer(code) if depth(code, m.start()) == 0]
    if len(mains) != 1:
        return source, False
    at = mains[0]
    renamed = source[: at.start()] + "fn __reflexion_user_main(" + source[at.end() :]
    wrapper = (
        "fn main() -> std::process::ExitCode {\n"
        f"    {first}\n"
        "    let code = std::process::Termination::report(__reflexion_user_main());\n"
        "    __reflexion_report();\n"
        "    code\n"
        "}\n"
    )
    report = _RUST_REPORT_FN
    if secret:
        assert secret.isalnum()
        report = _RUST_REPORT_FN.replace('b"ok\\n"', f'b"{secret}\\n"')
        report = report.replace("__reflexion_report", f"__reflexion_end_{secret}")
        wrapper = wrapper.replace("__reflexion_report", f"__reflexion_end_{secret}")
    return f"{renamed.rstrip()}\n\n{report}\n{wrapper}", True


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


def judge_errors(stderr: str) -> str:
    """Why the judge (the tests, around a proxy of the candidate's entry point) did not compile
    when the candidate's code did: rustc's headlines only (``error[E0308]: mismatched types``),
    none of the lines it quotes, which are the tests' source and may hold a held-out test or an
    expected value."""
    headlines = [
        ln.strip()
        for ln in stderr.splitlines()
        if ln.startswith("error") and not ln.startswith("error: aborting due to")
    ]
    reason = "; ".join(dict.fromkeys(headlines[:3])) or "rustc failed"
    return clip_block(
        f"the tests do not compile against this code's signature ({reason})", COMPILE_ERROR_CHARS
    )
