"""A server process the harness or a test starts: in its own session (process group), ready once a
URL answers 200, and stopped with its whole group (SIGTERM, then SIGKILL) however the caller
ends. ``reflexion perf served``'s ``langgraph dev``, the tests' ``langgraph dev``
(``tests/langgraph_server.py``) and their served model all run through here."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from reflexion.core.errors import ReflexionError


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(
    command: Sequence[str],
    ready_url: str,
    log_path: Path,
    *,
    name: str,
    timeout: float = 120,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` (its output in ``log_path``) and yield it once ``ready_url`` answers
    200 within ``timeout`` seconds; a process that exits first, or never answers, is a
    :class:`ReflexionError` with ``name`` and the log's tail. The process group is stopped
    at the end: SIGTERM, and SIGKILL after 20 s."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise ReflexionError(f"{name} exited: " + log_path.read_text()[-2000:])
            try:
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ReflexionError(
                    f"{name} did not answer within {timeout:.0f} s: " + log_path.read_text()[-2000:]
                )
            time.sleep(0.2)
        yield proc
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop ``proc``'s process group: SIGTERM, then SIGKILL if it has not exited in 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
