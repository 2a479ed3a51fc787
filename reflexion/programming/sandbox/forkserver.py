"""The sandbox's fork server: one per suite, started as a script (``python -P -s -B -S
forkserver.py FD``, with ``PYTHONHASHSEED=0``, which its children keep), so it imports the
standard library only.

It loads child.py once, then forks one child per sandboxed Python process the caller asks for
over the socket ``FD``, so a test costs a fork rather than an interpreter's start. The server
runs as the caller, enters no sandbox itself, and is not dumpable (no process of its uid can
take its socket). A forked child first closes the socket and
every other descriptor of the server's, keeping only its output files, its report pipe and
its channel, and takes the caller's environment; then it is what a child started from scratch
would be (child.py reads its configuration, enters the sandbox and runs). The server reaps a
child only when the caller asks, after the caller has killed its process group, so the group
id cannot be reused in between.

Requests are JSON datagrams: ``{"config": PATH, "command": [...], "cwd": DIR, "env": {...}}``
with the
descriptors (stdout, stderr, report, then the channel's two ends, if any) attached, answered
``{"pid": N}``; and ``{"reap": N}``, answered ``{"code": C}`` (a negative C: killed by that
signal; ``null``: no such child).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import runpy
import socket
import sys
from types import SimpleNamespace
from typing import Any, NoReturn

_MESSAGE_BYTES = 1 << 16
_MAX_FDS = 8
_PR_SET_DUMPABLE = 4


def _dumpable(flag: int) -> None:
    """Whether other processes of this uid may trace this one or take its descriptors: not
    the server, whose socket starts processes; a child as if it had been started afresh."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, flag, 0, 0, 0)


def _load_child() -> SimpleNamespace:
    """child.py's names (it runs as a module, not as the main script)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return SimpleNamespace(**runpy.run_path(os.path.join(here, "child.py"), run_name="child"))


def serve(sock: socket.socket) -> None:
    """Answer the caller's requests until it closes the socket."""
    _dumpable(0)
    child = _load_child()
    reaped: dict[int, int] = {}
    try:
        _serve(sock, child, reaped)
    finally:
        with contextlib.suppress(ChildProcessError):
            while True:  # the supervisors left: each exits once its namespace is gone
                os.waitpid(-1, 0)


def _reap(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _reap_ended(reaped: dict[int, int]) -> None:
    """Reap the supervisors that have exited (the caller had their status from them)."""
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            reaped[pid] = os.waitstatus_to_exitcode(status)


def _serve(sock: socket.socket, child: Any, reaped: dict[int, int]) -> None:
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(sock, _MESSAGE_BYTES, _MAX_FDS)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        _reap_ended(reaped)
        if "reap" in request:
            pid = int(request["reap"])
            try:
                code: int | None = reaped.pop(pid) if pid in reaped else _reap(pid)
            except ChildProcessError:
                code = None
            sock.send(json.dumps({"code": code}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            _become(child, sock, request, fds)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())


def _become(child: Any, sock: socket.socket, request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In the forked child: drop everything of the server's, then run child.py's entry."""
    try:
        sock.close()  # first: nothing the child runs may ask the server for anything
        _dumpable(1)
        out, err, report, ended, *channel = fds
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        start = 3
        for fd in sorted({report, ended, *channel}):
            os.closerange(start, fd)
            start = fd + 1
        os.closerange(start, os.sysconf("SC_OPEN_MAX"))
        env = {str(k): str(v) for k, v in request["env"].items()}
        env[child.REPORT_ENV] = str(report)
        env[child.ENDED_ENV] = str(ended)
        if channel:
            env[child.plain.CHANNEL_ENV] = f"{channel[0]},{channel[1]}"
        os.environ.clear()
        os.environ.update(env)
        os.chdir(request["cwd"])
    except BaseException:
        os._exit(child.SETUP_FAILED)
    child._child_main([str(request["config"]), *map(str, request.get("command", []))])
    os._exit(child.SETUP_FAILED)  # not reached: the entry exits


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
