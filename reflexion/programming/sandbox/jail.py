"""Each sandboxed process's own namespaces (the child side: standard library only, loaded by
``child.py``). Isolation comes from the kernel, by construction, not from cleaning up after a
run:

- **PID**: the process runs as PID 2 of a new PID namespace under a small init (PID 1, this
  module's code, which runs nothing of the code under test). When the init exits, the kernel
  kills every process left in the namespace, whatever it did (a new session, a zombie leader,
  a double fork), and the init's parent sees it exit only once they are all gone.
- **IPC**: SysV shared memory, semaphores, message queues and POSIX message queues of its own,
  gone with it.
- **network**: only a downed loopback, so no sockets to anything, abstract Unix sockets
  included.
- **mount**: its own view. A fresh ``/proc`` that shows only its namespace; an empty, private
  ``tmpfs`` over ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` (its working, home and
  temp directory) and over the suite's directory (the judge's sources, binaries and output
  are not even visible); for a compile, the view of :mod:`.toolchain` instead.
- **UTS**: its own host name.

The process that enters the namespaces stays outside as the **supervisor**: it is what the
caller waits for and signals. ``SIGTERM`` makes it kill the init and wait for it, that is,
for the whole namespace to be empty; then it exits as the code under test exited. As root
the namespaces are made directly (the code then drops to the suite's fresh uid); otherwise
inside a new user namespace that maps the caller's own uid. Where neither is possible the
process does not run: :class:`JailUnavailable`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import struct
from typing import Any, NoReturn

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_NAMESPACES = _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWUTS

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4

PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
"""Shared writable directories each process gets an empty tmpfs of its own over."""
HOME = "/tmp"
"""A run's working, home and temp directory inside its view (its private tmpfs)."""
_TMPFS_OPTIONS = b"mode=1777,size=64m,nr_inodes=4096"

_CAPABILITY_VERSION_3 = 0x20080522
_WITNESS_BYTES = 60 * 1024  # what the init passes on of a program's report (a pipe holds 64 KiB)


class JailUnavailable(OSError):
    """The kernel refused the namespaces a sandboxed process needs."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if int(result) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def confine(config: dict[str, Any], report_fd: int, ended_fd: int = -1) -> int:
    """Put this process in namespaces of its own and return in the code's process (PID 2 of
    the new PID namespace, still as the caller's uid: the caller then sets limits and drops
    to the sandbox uid). The process that called this never returns: it supervises, and
    writes the code's wait status on ``ended_fd`` once the namespace is empty.

    Returns the descriptor the code's process reports on: ``report_fd`` itself, or, for a
    whole program (``witness`` in ``config``), a socket to the init, which keeps the report
    pipe and the run's token. The init writes the token on the socket; a Python runner reads
    it back only once the program has ended and writes its result with it (a Rust program's
    wrapper writes the secret compiled into it instead), and the init passes on a result that
    carries the token only once the program's process has exited with status 0. The
    program's process never holds the caller's report channel, and the token is in its
    memory only if the program reads the socket itself: no forgery that does not aim at this
    protocol passes. (Nothing outside a process can witness that a program's last line ran,
    so one that does aim at it is not contained: see the security page.)"""
    libc = _libc()
    root = os.geteuid() == 0
    uid, gid = os.geteuid(), os.getegid()
    flags = _NAMESPACES if root else _NAMESPACES | _CLONE_NEWUSER
    if int(libc.unshare(flags)) != 0:
        number = ctypes.get_errno()
        raise JailUnavailable(
            number,
            f"the kernel refused new namespaces ({os.strerror(number)}): run as root, or "
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
        )
    if not root:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    status_read, status_write = os.pipe()
    alive_read, alive_write = os.pipe()
    witness = (-1, -1)
    if config.get("witness") and report_fd >= 0:
        ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        witness = (ends[0].detach(), ends[1].detach())
        os.set_inheritable(witness[1], True)
    blocked = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    init = os.fork()
    if init != 0:
        os.close(status_write)
        os.close(alive_read)
        _supervise(init, status_read, alive_write, ended_fd, blocked)
    os.close(status_read)
    os.close(alive_write)
    if ended_fd >= 0:
        os.close(ended_fd)  # only the supervisor may say that the run is over
    _init(config, status_write, alive_read, blocked, (report_fd, *witness))
    if witness[1] < 0:
        return report_fd
    os.close(report_fd)
    os.close(witness[0])
    return witness[1]


def _supervise(
    init: int, status_read: int, alive_write: int, ended_fd: int, blocked: set[signal.Signals]
) -> NoReturn:
    """Outside the namespace: wait for the init; on SIGTERM (the caller stopping the run)
    kill it. ``waitpid`` on the init returns only once its namespace is empty. Then report
    the code's wait status on ``ended_fd`` and exit as the code under test did: its exit
    status, or the signal that killed it."""
    _close_all_but(status_read, alive_write, ended_fd)
    with contextlib.suppress(Exception):
        _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)

    def stop(_number: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            os.kill(init, signal.SIGKILL)

    for each in blocked:
        signal.signal(each, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(init, 0)  # retried by Python after the handler ran (PEP 475)
    signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    data = b""
    with contextlib.suppress(OSError):
        os.set_blocking(status_read, False)
        data = os.read(status_read, 4)
    status = struct.unpack("i", data)[0] if len(data) == 4 else None
    if ended_fd >= 0:
        with contextlib.suppress(OSError):
            os.write(ended_fd, struct.pack("i", signal.SIGKILL if status is None else status))
    if status is None or os.WIFSIGNALED(status):
        number = int(signal.SIGKILL) if status is None else os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _init(
    config: dict[str, Any],
    status_write: int,
    alive_read: int,
    blocked: set[signal.Signals],
    reports: tuple[int, int, int],
) -> None:
    """PID 1 of the new namespace: die with the supervisor, make the view, start the code's
    process (returning in it), then reap until the code's process ends, pass on a witnessed
    program's report (``reports``: the caller's report pipe and the witness socket's two
    ends, -1 when none) and report how it ended. Exiting ends the namespace."""
    libc = _libc()
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    if select.select([alive_read], [], [], 0)[0]:  # the supervisor is already gone
        os._exit(1)
    with contextlib.suppress(Exception):
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    token_fd = _open_token(str(config.get("token_file", ""))) if reports[1] >= 0 else -1
    try:
        _make_view(libc, config)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(2, f"sandbox setup failed: {exc}\n".encode())
        _report_status(status_write, 120 << 8)
        os._exit(0)
    code = os.fork()
    if code == 0:
        for fd in (status_write, alive_read, token_fd):
            if fd >= 0:
                os.close(fd)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
        if os.geteuid() != 0 or config.get("uid") is None:
            _drop_capabilities(libc)
        return
    report_fd, witness_read, witness_write = reports
    token = ""
    if witness_read < 0:
        _close_all_but(status_write)
    else:
        os.close(witness_write)
        _close_all_but(status_write, report_fd, witness_read, token_fd)
        token = _read_token(token_fd)
        with contextlib.suppress(OSError):
            os.write(witness_read, f"{token}\n".encode())
        os.set_blocking(witness_read, False)
    written = bytearray()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if witness_read >= 0:
            written += _drain(witness_read, _WITNESS_BYTES - len(written))
        if pid == code:
            if witness_read >= 0 and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                with contextlib.suppress(OSError):
                    os.write(report_fd, _witnessed(bytes(written), token))
            _report_status(status_write, status)
            os._exit(0)


def _open_token(path: str) -> int:
    """The run's token file, opened (and removed) by the init before the view hides the
    suite's directory; read only once the program's process exists, so its memory never
    held the token."""
    if not path:
        return -1
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    with contextlib.suppress(OSError):
        os.unlink(path)
    return descriptor


def _read_token(descriptor: int) -> str:
    if descriptor < 0:
        return ""
    with contextlib.suppress(OSError):
        return os.read(descriptor, 256).decode("ascii", errors="replace").strip()
    return ""


def _witnessed(written: bytes, token: str) -> bytes:
    """The report the init passes on: the runner's result lines that carry the token (a
    Python runner's JSON objects), or a pass for the secret a Rust program's wrapper wrote."""
    lines = []
    for line in written.decode("utf-8", errors="replace").splitlines():
        if not token:
            break
        if line == token:
            lines.append(json.dumps({"token": token, "status": "pass", "detail": ""}))
            continue
        message: Any = None
        with contextlib.suppress(ValueError):
            message = json.loads(line)
        if isinstance(message, dict) and message.get("token") == token:
            lines.append(json.dumps(message))
    return "".join(f"{line}\n" for line in lines).encode()


def _drain(descriptor: int, limit: int) -> bytes:
    """What a non-blocking pipe holds now, at most ``limit`` bytes."""
    chunks = []
    while limit > 0:
        try:
            chunk = os.read(descriptor, min(limit, 65536))
        except OSError:  # nothing more now, or reset: a peer that left the token unread
            break
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _close_all_but(*kept: int) -> None:
    """Close every descriptor but ``kept`` (the supervisor and the init hold none of the
    run's: no output file, report pipe or channel end)."""
    start = 0
    for fd in sorted(kept):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))


def _report_status(descriptor: int, status: int) -> None:
    with contextlib.suppress(OSError):
        os.write(descriptor, struct.pack("i", status))


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability left in the user namespace the code runs in (when it keeps its uid)."""
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)
    _check(libc.capset(header, data), "capset")


def _make_view(libc: ctypes.CDLL, config: dict[str, Any]) -> None:
    """The mount namespace's view: private propagation, a fresh ``/proc``, then either a
    compile's view or a run's private directories."""
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    _check(
        libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None),
        "mount /proc",
    )
    view = config.get("view")
    if view is not None:
        _compile_view(libc, view)
        return
    for path in (*PRIVATE_DIRS, *config.get("conceal", [])):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        flags = _MS_NOSUID | _MS_NODEV
        _check(
            libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, _TMPFS_OPTIONS),
            f"a private tmpfs over {path}",
        )


def _compile_view(libc: ctypes.CDLL, view: dict[str, Any]) -> None:
    """A compile's view: the toolchain bound read-only at its mount point, an empty read-only
    file system over each hidden path."""
    bind = view.get("bind")
    if bind:
        source, target = (os.fsencode(p) for p in bind)
        _check(libc.mount(source, target, None, _MS_BIND | _MS_REC, None), "bind the toolchain")
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
        done = int(libc.mount(None, target, None, flags, None)) == 0
        if os.geteuid() == 0:  # a user namespace may not drop locked flags: read-only anyway
            _check(int(not done), "make the toolchain read-only")
    for path in view.get("hide", []):
        if not os.path.isdir(path):
            continue
        flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        hidden = libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, b"size=4k,mode=0555")
        _check(hidden, f"hide {path}")
