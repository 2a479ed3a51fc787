"""One suite's sandbox on the caller side: its directory, its uid, and the children it starts
(one process per test, or a judge and a candidate process for a judged test)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from types import TracebackType
from typing import Any

from reflexion.core.errors import ReflexionError
from reflexion.programming.sandbox.builds import KEPT, MODES, Build, take
from reflexion.programming.sandbox.child import ENDED_ENV, REPORT_ENV, reachable_by_others
from reflexion.programming.sandbox.jail import HOME, inside, run_view
from reflexion.programming.sandbox.plain import CHANNEL_ENV
from reflexion.programming.sandbox.processes import (
    PYTHON_FLAGS,
    ForkServer,
    Started,
    Supervised,
    claim_uid,
    drain,
    python_env,
    read_head,
    release_uid,
    remove_tree,
    rlimits,
    sandbox_env,
    site_packages,
    stop,
    user_task_count,
    write_text,
)
from reflexion.programming.sandbox.results import Limits
from reflexion.programming.sandbox.rust import judge_errors, rustc_errors, rustc_flags
from reflexion.programming.sandbox.toolchain import (
    Toolchain,
    compile_env,
    compile_view,
    compiler_in,
    resolve,
)
from reflexion.programming.sandbox.verdicts import Run, python_verdict

_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
"""The script every sandboxed process runs (standard library only)."""
_FORK_SERVER = os.path.join(os.path.dirname(_CHILD), "forkserver.py")
"""The script that forks a suite's Python processes (standard library only)."""
_FILE_BYTES = 32 * 1024 * 1024  # RLIMIT_FSIZE: largest file a test may write
_OPEN_FILES = 64  # RLIMIT_NOFILE
_PROCESSES = 16  # RLIMIT_NPROC for a fresh uid (threads count too)
_PROCESS_HEADROOM = 32  # ... or above the current count when not root
_COMPILE_FILE_BYTES = 256 * 1024 * 1024
_COMPILE_MEMORY_MB = 4096
_COMPILE_CAPTURE = 64 * 1024  # bytes of rustc's stderr read back
AUDIT_HOOK_ENV = "REFLEXION_SANDBOX_AUDIT_HOOK"
"""``0`` runs Python code without the audit hook: what the sandbox's tests use to show that the
namespaces, the uid and the limits hold on their own."""


def _python() -> str:
    """The interpreter sandboxed Python processes run on (the caller's)."""
    return sys.executable or shutil.which("python3") or "python3"


class Sandbox:
    """One suite's temporary directory and, as root, its two unprivileged uids (the code's and
    the judge's).

    The directory (owned by the caller, mode 0711) holds the generated files: configurations,
    Rust sources and binaries, captured output, each readable by the caller alone (the judge
    binary is execute-only for the judge's uid). No sandboxed process sees it: each runs in
    namespaces of its own (see :mod:`.jail`), where the directory is covered by an empty
    file system, and works in a private ``/tmp``. A compile sees its own directory only.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        base = tempfile.gettempdir()
        if os.geteuid() == 0 and not reachable_by_others(base) and reachable_by_others("/tmp"):
            base = "/tmp"  # a compile's uid must be able to reach its directory
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="reflexion-sandbox-", dir=base))
        self.binary_path = os.path.join(self.root, "solution")
        self.uid: int | None = None
        self.nproc: int | None = _PROCESSES
        self._server: ForkServer | None = None
        self._fork_failed = False
        self._runs = 0
        self._judge_uid: int | None = None
        """The second fresh uid the judge compiles and runs under (see :meth:`_judge_identity`)."""
        try:
            os.chmod(self.root, 0o711)
            if os.geteuid() == 0:
                self.uid = self._unprivileged_uid()
            else:
                count = user_task_count(os.getuid())
                self.nproc = None if count is None else count + _PROCESS_HEADROOM
        except BaseException:
            remove_tree(self.root)
            raise

    def _unprivileged_uid(self) -> int:
        """As root, the code never runs as root: a fresh uid, or a one-line error."""
        if not reachable_by_others(os.path.dirname(self.root)):
            raise ReflexionError(
                f"the sandbox's directory {os.path.dirname(self.root)} cannot be reached by "
                "another uid: set TMPDIR to a directory others may traverse, such as /tmp"
            )
        uid = claim_uid()
        if uid is None:
            raise ReflexionError("no unused uid for the sandbox: free some of uids 1000000-1999999")
        return uid

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the fork server, give the uids back, remove the directory. Nothing of a run is
        left to kill: every process ended with its namespace before its run returned."""
        if self._server is not None:
            self._server.close()
            self._server = None
        release_uid(self.uid)
        release_uid(self._judge_uid)
        remove_tree(self.root)

    # -- what runs in it ----------------------------------------------------------------------

    def python(self, mode: str, code: str, timeout: float) -> Run:
        """Run the Python runner: ``program`` (a whole program, witnessed: see
        :func:`.jail.confine`) or ``check`` (compile only)."""
        config = self._config(mode, timeout)
        config.update(code=code, output_bytes=self.limits.output_bytes)
        if mode == "program":
            config["witness"] = True
        return self._spawn(config, [], timeout)

    def python_check(self, code: str, timeout: float) -> tuple[str, str]:
        """Compile ``code`` in the sandbox: ("pass"|"compile_error"|"fail", detail)."""
        run = self.python("check", code, timeout)
        return python_verdict(run, timeout, None)

    def binary(self, args: list[str], timeout: float, *, secret: str = "") -> Run:
        """Run the compiled Rust binary (a whole program, witnessed: see :func:`.jail.confine`)
        with ``args`` under the sandbox's limits. ``secret``: what the program's wrapper
        reports once its ``main`` returned (:func:`.rust.rust_program_harness`), the run's
        token, which only its init is told."""
        config = {**self._config("exec", timeout), "witness": True}
        if secret:
            config["token"] = secret
        return self._spawn(config, [self.binary_path, *args], timeout)

    def compile_rust(self, rustc: str, sources: dict[str, str]) -> str | None:
        """Compile each source into the binary of its name (``solution``, ``judge``), all at
        once; the first failure's trimmed ``rustc`` errors, or ``None``.

        Each compile runs apart (see :meth:`_compiler`): the candidate's under the suite's
        uid, the judge's under a second fresh uid, each in a directory of its own that holds
        only its source and that the other compile cannot see, so no test or expected value
        is within reach of the candidate's compile. The judge binary is the judge uid's alone
        and execute-only, so the kernel keeps its process undumpable. The judge is kept in
        this process's memory, where no sandboxed code can reach it, and taken from there when
        the same source comes again (the same tests, the same signature)."""
        toolchain = resolve(rustc)
        wanted = dict(sources)
        builds: dict[str, Build] = {}
        for name, source in wanted.items():
            path = os.path.join(self.root, name)
            if name in MODES and KEPT.restore(rustc, source, path, MODES[name]):
                continue
            builds[name] = self._build(name, self._compile_uid(name), source)
        started = []
        for name, build in builds.items():
            others = [b.directory for b in builds.values() if b is not build]
            args = [*rustc_flags(name), "-o", build.output, f"{name}.rs"]
            config, command, env = self._compiler(toolchain, build, args, others)
            started.append((name, self._start(config, command, env=env)))
        timeout = self.limits.compile_timeout_s
        deadline = time.monotonic() + timeout
        runs: dict[str, Run] = {}
        try:
            for name, begun in started:
                if isinstance(begun, Run):
                    runs[name] = begun
                    continue
                try:
                    timed_out = not begun.proc.finished(max(0.0, deadline - time.monotonic()))
                finally:
                    self._stop(begun.proc)
                runs[name] = self._collect(begun, timed_out, _COMPILE_CAPTURE)
            for name, build in builds.items():
                if runs[name].returncode == 0 and not runs[name].timed_out:
                    take(build.output, os.path.join(self.root, name), MODES.get(name, 0o755))
        finally:
            for build in builds.values():
                remove_tree(build.directory)
        for name in builds:
            path = os.path.join(self.root, name)
            if name in MODES and os.path.isfile(path):  # only a compile that succeeded
                KEPT.keep(rustc, wanted[name], path)
        self._seal_judge()
        for name, run in runs.items():
            if run.timed_out:
                return f"rustc timed out after {float(timeout)}s"
            if run.returncode != 0 or not os.path.isfile(os.path.join(self.root, name)):
                if name == "judge":  # the tests' source is no output of the candidate's
                    return judge_errors(run.stderr)
                return rustc_errors(run.stderr, run.returncode)
        return None

    def check_rust(self, rustc: str, source: str) -> Run:
        """Type-check ``source`` as a library with JSON diagnostics (on ``stderr``), under the
        suite's uid in a directory of its own that holds only ``check.rs`` (see
        :meth:`_compiler`)."""
        build = self._build("check", self.uid, source)
        args = [
            "--edition=2021",
            "--crate-type=lib",
            "--crate-name=reflexion_check",
            "--emit=metadata",
            "--error-format=json",
            "--cap-lints=allow",
            "-o",
            os.path.join(build.directory, "check.rmeta"),
            "check.rs",
        ]
        config, command, env = self._compiler(resolve(rustc), build, args, [])
        timeout = self.limits.compile_timeout_s
        try:
            return self._spawn(config, command, timeout, env=env, capture=4 * 1024 * 1024)
        finally:
            remove_tree(build.directory)

    def _build(self, name: str, uid: int | None, source: str) -> Build:
        """A compile's own directory (a random name, mode 0700, owned by ``uid``) holding
        ``<name>.rs`` and nothing else; the compiler writes its output and temporary files
        there."""
        directory = tempfile.mkdtemp(prefix=f"{name}-", dir=self.root)
        path = os.path.join(directory, f"{name}.rs")
        write_text(path, source)
        if uid is not None:
            for owned in (directory, path):
                os.chown(owned, uid, uid)
        return Build(directory, os.path.join(directory, name), uid)

    def _compile_uid(self, name: str) -> int | None:
        """Who compiles ``name``: the candidate's server under the suite's uid, the judge
        under the judge's own uid."""
        if self.uid is None:
            return None
        return self._judge_identity() if name == "judge" else self.uid

    def _judge_identity(self) -> int | None:
        """The judge's own uid, a second fresh one (claimed on first use): its compile and
        every run of a judge use it, so the candidate can neither read the judge's source nor
        run, trace or read its binary."""
        if self.uid is None:
            return None
        if self._judge_uid is None:
            self._judge_uid = claim_uid()
        return self._judge_uid if self._judge_uid is not None else self.uid

    def _seal_judge(self) -> None:
        """The compiled judge, the judge uid's alone and execute-only (so the kernel keeps its
        process undumpable): even a code that could reach it could not run it as an oracle
        of the tests' expected values."""
        path = os.path.join(self.root, "judge")
        uid = self._judge_identity()
        if not os.path.isfile(path) or uid is None:
            return
        os.chown(path, uid, uid)
        os.chmod(path, 0o100)

    def _mountpoint(self) -> str:
        """The empty directory the toolchain is bound at in a compile's view."""
        path = os.path.join(self.root, "toolchain")
        if not os.path.isdir(path):
            os.mkdir(path, 0o755)
        return path

    def _compiler(
        self, toolchain: Toolchain, build: Build, args: list[str], others: list[str]
    ) -> tuple[dict[str, Any], list[str], dict[str, str]]:
        """How ``rustc`` runs: the real compiler (not rustup's proxy) under the build's uid,
        in a new network namespace and a private mount namespace whose view holds the
        toolchain and hides the caller's home and the other compiles' directories, in the
        build's directory, with only the variables the toolchain needs
        (:func:`.toolchain.compile_env`), under generous limits (the compile timeout is the
        caller's to apply)."""
        timeout = self.limits.compile_timeout_s
        seen = _run_view()  # what a run may not see, a compile may not read either
        hidden = [
            path for path in (*seen["hide"], *seen["conceal"]) if not inside(build.directory, path)
        ]
        view = compile_view(toolchain, self._mountpoint(), build.directory, [*others, *hidden])
        env = compile_env(build.directory)
        config: dict[str, Any] = {
            "mode": "exec",
            "uid": build.uid,
            "cwd": build.directory,
            "view": view,
            "env": env,
            "rlimits": rlimits(
                timeout * 2,
                max(self.limits.memory_mb, _COMPILE_MEMORY_MB),
                _COMPILE_FILE_BYTES,
                None,
                None,
            ),
        }
        return config, [compiler_in(toolchain, view), *args], env

    def _config(self, mode: str, timeout: float) -> dict[str, Any]:
        return {
            "mode": mode,
            "uid": self.uid,
            "conceal": [self.root],
            "run_view": _run_view(),
            "audit_hook": os.environ.get(AUDIT_HOOK_ENV, "1") != "0",
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

    def _spawn(
        self,
        config: dict[str, Any],
        command: list[str],
        timeout: float,
        *,
        env: dict[str, str] | None = None,
        capture: int | None = None,
    ) -> Run:
        """Start ``child.py`` as a child that enters the sandbox described by ``config`` and
        then runs the Python runner or execs ``command``; wait, kill, reap and collect."""
        started = self._start(config, command, env=env)
        if isinstance(started, Run):
            return started
        try:
            timed_out = not started.proc.finished(timeout)
        finally:
            self._stop(started.proc)
        return self._collect(started, timed_out, capture)

    def judged(
        self, code: str, test: str, timeout: float, *, prelude: str = "", entry_point: str = ""
    ) -> tuple[Run, Run]:
        """Run ``test`` in a judge process against ``code`` served by a candidate process.

        The candidate process runs the code and answers calls over a pipe with plain data
        only; the judge process binds the candidate's functions to proxies that make those
        calls, runs the test and reports its verdict. The two run in namespaces of their own,
        the judge under its own uid: the candidate cannot see the judge's process, memory,
        descriptors or files, and the judge alone holds the report pipe and the token, so
        nothing the candidate runs can write a verdict.
        ``prelude`` (trusted code, e.g. the benchmark's prompt) runs in the judge first; its
        names win over the candidate's, except ``entry_point``. Returns (judge, candidate).
        """
        serve = self._config("serve", timeout)
        serve.update(code=code, output_bytes=self.limits.output_bytes)
        judge = self._config("judge", timeout)
        judge.update(
            uid=self._judge_identity(),
            test=test,
            prelude=prelude,
            entry_point=entry_point,
            output_bytes=self.limits.output_bytes,
        )
        return self._pair((judge, []), (serve, []), timeout)

    def judged_binary(self, args: list[str], timeout: float) -> tuple[Run, Run]:
        """Run the compiled judge with ``args`` against the compiled candidate, which serves
        the judge's calls (see :meth:`judged`). Returns (judge, candidate)."""
        config = {**self._config("exec", timeout), "uid": self._judge_identity()}
        judge = (config, [self.root + "/judge", *args])
        candidate = (self._config("exec", timeout), [self.binary_path])
        return self._pair(judge, candidate, timeout)

    def _pair(
        self,
        judge: tuple[dict[str, Any], list[str]],
        candidate: tuple[dict[str, Any], list[str]],
        timeout: float,
    ) -> tuple[Run, Run]:
        """Start the judge, then the candidate, joined by two pipes; wait for the judge, give
        the candidate a moment to finish, stop and collect both. Returns (judge, candidate)."""
        calls_read, calls_write = os.pipe()
        replies_read, replies_write = os.pipe()
        try:
            # The judge first: it is undumpable before any of the candidate's code runs.
            judging = self._start(*judge, channel=(replies_read, calls_write))
            serving = self._start(*candidate, channel=(calls_read, replies_write))
        finally:
            for descriptor in (calls_read, calls_write, replies_read, replies_write):
                os.close(descriptor)
        if isinstance(serving, Run) or isinstance(judging, Run):
            for started in (serving, judging):
                if not isinstance(started, Run):
                    self._stop(started.proc)
                    self._collect(started, False, None)
            failed = serving if isinstance(serving, Run) else judging
            assert isinstance(failed, Run)
            return failed, failed
        deadline = time.monotonic() + timeout
        try:
            timed_out = not judging.proc.finished(timeout)
            # The judge is done: the candidate gets a moment to finish the last reply's exit.
            left = min(0.2, max(0.0, deadline - time.monotonic()))
            candidate_timed_out = timed_out or not serving.proc.finished(left)
        finally:
            self._stop(judging.proc, serving.proc)
        return (
            self._collect(judging, timed_out, None),
            self._collect(serving, candidate_timed_out and timed_out, None),
        )

    def _start(
        self,
        config: dict[str, Any],
        command: list[str],
        *,
        env: dict[str, str] | None = None,
        channel: tuple[int, int] | None = None,
    ) -> Started | Run:
        """Write the configuration and start the child (a :class:`Run` when it cannot start)."""
        self._runs += 1
        n = self._runs
        config_path = os.path.join(self.root, f"config-{n}.json")
        out_path = os.path.join(self.root, f"stdout-{n}")
        err_path = os.path.join(self.root, f"stderr-{n}")
        token = str(config.get("token", ""))
        token_path = os.path.join(self.root, f"token-{n}")
        if config.get("witness"):  # the token for the init alone (see .jail.confine)
            config = {**config, "token": "", "token_file": token_path}
            with _private(token_path) as handle:
                handle.write(token.encode())
        argv = self._argv(config, command, config_path)
        read_end, write_end = os.pipe()
        ended_read, ended_write = os.pipe()  # the supervisor's report (see .jail.confine)
        child_env = python_env(env if env is not None else sandbox_env(HOME))
        child_env[REPORT_ENV] = str(write_end)
        child_env[ENDED_ENV] = str(ended_write)
        passed = [write_end, ended_write]
        if channel is not None:
            child_env[CHANNEL_ENV] = f"{channel[0]},{channel[1]}"
            passed.extend(channel)
        try:
            with _private(out_path) as out, _private(err_path) as err:
                fds = [out.fileno(), err.fileno(), *passed]
                proc = self._fork(command, config_path, child_env, fds, ended_read)
                if proc is None:
                    popen = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        pass_fds=tuple(passed),
                        cwd=self.root,
                        env=child_env,
                        start_new_session=True,
                    )
                    proc = Supervised(popen.pid, ended_read, popen.wait, now=True)
        except OSError as exc:
            os.close(ended_read)
            self._cleanup(read_end, config_path, out_path, err_path, token_path)
            return Run(None, False, "", "", f"could not start: {exc}")
        finally:
            os.close(write_end)
            os.close(ended_write)
        assert proc is not None
        return Started(proc, read_end, config_path, out_path, err_path, token, token_path)

    def _argv(self, config: dict[str, Any], command: list[str], config_path: str) -> list[str]:
        """How the child starts without the fork server: ``child.py``, which reads the
        configuration from ``config_path`` (the caller's alone)."""
        descriptor = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        python = _python()
        # PYTHON_FLAGS: no script directory or user site on sys.path, no bytecode files, no
        # site import (fast start; installed packages are added to sys.path by the child,
        # without their .pth hooks); python_env (in _start) keeps PYTHON* variables out.
        return [python, *PYTHON_FLAGS, _CHILD, config_path, *command]

    def _fork(
        self,
        command: list[str],
        config_path: str,
        env: dict[str, str],
        fds: list[int],
        ended: int,
    ) -> Supervised | None:
        """Start a child through the suite's fork server (started on first use); ``None`` when
        there is no working server."""
        if self._fork_failed or not ForkServer.usable():
            return None
        try:
            if self._server is None:
                self._server = ForkServer(_python(), _FORK_SERVER, self.root)
            server = self._server
            pid = server.spawn(config_path, command, self.root, env, fds)
            return Supervised(pid, ended, lambda: server.reap(pid), now=False)
        except (OSError, ValueError, KeyError):
            if self._server is not None:
                self._server.close()
            self._server, self._fork_failed = None, True
            return None

    @staticmethod
    def _stop(*procs: Supervised) -> None:
        """End each child's namespace (see :func:`.processes.stop`) and reap the child."""
        for proc in procs:
            stop(proc)

    def _collect(self, started: Started, timed_out: bool, capture: int | None) -> Run:
        """Reap the child and read its report and captured output; remove its files."""
        try:
            proc = started.proc
            proc.wait()
            cap = self.limits.output_bytes if capture is None else capture
            return Run(
                proc.returncode,
                timed_out,
                drain(started.report),
                read_head(started.stdout, self.limits.output_bytes),
                read_head(started.stderr, cap, tail=True),
                started.token,
            )
        finally:
            self._cleanup(
                started.report, started.config, started.stdout, started.stderr, started.token_file
            )

    @staticmethod
    def _cleanup(report: int, *paths: str) -> None:
        os.close(report)
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _private(path: str) -> Any:
    """A new file for a child's output, readable by the caller alone."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")


@functools.cache
def _run_view() -> dict[str, list[str]]:
    """What every run of this process sees (see :func:`.jail.run_view`)."""
    return run_view(site_packages())
