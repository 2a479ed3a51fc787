"""The caller side's process housekeeping: resource limits, waiting for and stopping a
sandboxed child, fresh unused uids, the fork server, and reading back what a process wrote
without letting it fill the caller's memory."""

from __future__ import annotations

import contextlib
import grp
import json
import math
import os
import pwd
import re
import select
import shutil
import signal
import site
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_REPORT_BYTES = 64 * 1024
_TAIL_BYTES = 4096
PYTHON_FLAGS = ("-P", "-s", "-B", "-S")
"""How a sandboxed interpreter starts: no script directory (-P) and no user site (-s) on
``sys.path``, no bytecode files (-B), no site import (-S). Not ``-I``, which would also ignore
``PYTHONHASHSEED``: the environment is the sandbox's own instead (:func:`python_env`)."""
HASH_SEED = "0"
"""Every sandboxed interpreter's ``PYTHONHASHSEED``: code whose result depends on the order of
a set of strings gets the same verdict on every run, as a random seed would not give it."""
_PYTHON_KEPT = ("PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING")
UID_BASE = 1_000_000  # fresh uids come from [UID_BASE, UID_BASE + UID_SPAN)
UID_SPAN = 1_000_000


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def site_packages() -> list[str]:
    """The caller's site-packages directories (the child starts without ``site``)."""
    try:
        found = [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site.py
        found = []
    return [p for p in found if os.path.isdir(p) and p in sys.path]


def rlimits(
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


_CLAIMED: set[int] = set()
_CLAIMED_LOCK = threading.Lock()


def claim_uid() -> int | None:
    """A random uid from a high range that no user, group or process has and that no suite of
    this process holds (or ``None``); it stays claimed until :func:`release_uid`. Suites that
    run at once in threads therefore never share a uid, and a uid is only reused once its
    suite has ended, that is, once every process of it has ended with its namespace."""
    for _ in range(16):
        uid = UID_BASE + int.from_bytes(os.urandom(4), "big") % UID_SPAN
        with _CLAIMED_LOCK:
            if uid in _CLAIMED:
                continue
            _CLAIMED.add(uid)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            try:
                grp.getgrgid(uid)
            except KeyError:
                if not _processes_of(uid):
                    return uid
        release_uid(uid)
    return None


def release_uid(uid: int | None) -> None:
    """Give back a uid of :func:`claim_uid`'s."""
    if uid is not None:
        with _CLAIMED_LOCK:
            _CLAIMED.discard(uid)


def stop(proc: Supervised) -> None:
    """End a sandboxed child's run and collect its status. ``SIGTERM`` asks its supervisor (see
    :mod:`.jail`) to kill the init of the child's PID namespace; the supervisor reports once
    the namespace is empty, so when this returns no process of the run is left. Should it not
    report within 10 s, ``SIGKILL`` (its init then dies with it)."""
    if not proc.finished(0):  # the supervisor holds the pipe's write end: it is alive
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGTERM)
        if not proc.finished(10):
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
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


def _processes_of(*uids: int) -> list[int]:
    """Processes (zombies included) whose real uid is one of ``uids``."""
    return [pid for pid, status in _proc_statuses() if _uid_of(status) in uids]


def user_task_count(uid: int) -> int | None:
    """Processes and threads of ``uid`` (what ``RLIMIT_NPROC`` counts), or ``None``."""
    if not os.access("/proc", os.R_OK | os.X_OK):
        return None
    total = 0
    for _pid, status in _proc_statuses():
        if _uid_of(status) == uid:
            threads = re.search(r"^Threads:\s*(\d+)", status, re.M)
            total += int(threads.group(1)) if threads else 1
    return total


def remove_tree(path: str) -> None:
    """Remove a directory tree, also one whose subdirectories were made unreadable, and one
    nested deeper than Python's recursion allows (code under test can make either)."""
    with contextlib.suppress(RecursionError):
        _remove_tree(path)
    if os.path.lexists(path):  # deeper than shutil recurses: rm walks it without recursing
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["rm", "-rf", "--one-file-system", "--", path],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=120,
                check=False,
            )


def _remove_tree(path: str) -> None:
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


def drain(descriptor: int) -> str:
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


def read_head(path: str, limit: int, *, tail: bool = False) -> str:
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


class Supervised:
    """A sandboxed child as the caller sees it: its supervisor's pid, and the pipe on which
    the supervisor writes how the code's process ended (its wait status, 4 bytes) once the
    run's PID namespace is empty. The run is over when that status comes, not when the
    supervisor exits: tearing down its mount namespace takes the kernel a few milliseconds
    that nobody needs to wait for, so the supervisor is reaped later (by the fork server, or
    at :meth:`wait` for a child started without one)."""

    def __init__(self, pid: int, ended: int, reap: Callable[[], int | None], *, now: bool) -> None:
        self.pid = pid
        self.ended = ended
        self._reap = reap
        self._reap_now = now
        self._status: int | None = None
        self._over = False
        self.returncode: int | None = None

    def finished(self, timeout: float) -> bool:
        """Whether the supervisor has reported (or is gone), waiting at most ``timeout``."""
        if self._over:
            return True
        poller = select.poll()
        poller.register(self.ended, select.POLLIN)
        if not poller.poll(max(0, math.ceil(timeout * 1000))):
            return False
        with contextlib.suppress(OSError):
            data = os.read(self.ended, 4)
            if len(data) == 4:
                self._status = int.from_bytes(data, sys.byteorder, signed=True)
        self._over = True
        return True

    def wait(self) -> int | None:
        """The code's exit status (negative: killed by that signal), once the run is over;
        the supervisor's own when it ended without reporting."""
        if self.returncode is None:
            self.finished(3600)
            reaped = self._reap() if self._reap_now or self._status is None else None
            status = self._status
            self.returncode = os.waitstatus_to_exitcode(status) if status is not None else reaped
            with contextlib.suppress(OSError):
                os.close(self.ended)
        return self.returncode


def python_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a sandboxed interpreter: no ``PYTHON*`` variable of the caller's (a path,
    a startup file, warnings) but the harmless ones, and the fixed hash seed."""
    kept = {k: v for k, v in env.items() if not k.startswith("PYTHON") or k in _PYTHON_KEPT}
    return {**kept, "PYTHONHASHSEED": HASH_SEED}


class ForkServer:
    """One suite's fork server (``forkserver.py``): it forks the sandboxed processes, so each
    costs a fork, not an interpreter's start. Needs ``socket.send_fds`` (Python 3.9)."""

    def __init__(self, python: str, script: str, cwd: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python, *PYTHON_FLAGS, script, str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                cwd=cwd,
                env=python_env({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    @staticmethod
    def usable() -> bool:
        return hasattr(socket, "send_fds")

    def _ask(self, request: dict[str, object], fds: Sequence[int] = ()) -> dict[str, Any]:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
            reply = self.sock.recv(_REPORT_BYTES)
        if not reply:
            raise OSError("the sandbox's fork server has ended")
        answer: dict[str, Any] = json.loads(reply)
        return answer

    def spawn(
        self, config: str, command: list[str], cwd: str, env: dict[str, str], fds: list[int]
    ) -> int:
        """Fork a child that runs child.py with ``config`` (and ``command``, in ``exec``
        mode); ``fds``: stdout, stderr, report, the supervisor's status pipe and the
        channel's ends. Its pid."""
        request: dict[str, object] = {"config": config, "command": command, "cwd": cwd, "env": env}
        return int(self._ask(request, fds)["pid"])

    def reap(self, pid: int) -> int | None:
        code = self._ask({"reap": pid})["code"]
        return None if code is None else int(code)

    def close(self) -> None:
        """End the server (it exits when its socket closes) and reap it."""
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)


def sandbox_env(work: str) -> dict[str, str]:
    """A sandboxed process's whole environment: system paths, UTF-8, ``work`` as its home and
    temp directory, no bytecode files, one thread per numeric library."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": work,
        "TMPDIR": work,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "RUST_BACKTRACE": "0",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


@dataclass
class Started:
    """A started child and what :meth:`.box.Sandbox._collect` reads back from it."""

    proc: Supervised
    report: int
    """Read end of its report pipe."""
    config: str
    stdout: str
    stderr: str
    token: str
    token_file: str
    """Where a witnessed run's token waits for its init (removed by then, normally)."""
