"""A real ``langgraph dev`` server for the integration tests: this project's graphs served on a
free loopback port, from a fresh working directory (the in-memory server keeps its threads in
``.langgraph_api/`` under it, so every start has no threads)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def absolute_paths(value: Any) -> Any:
    """langgraph.json with every ``./…`` path made absolute (relative to the repository)."""
    if isinstance(value, dict):
        return {k: absolute_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [absolute_paths(v) for v in value]
    if isinstance(value, str) and (value == "." or value.startswith("./")):
        return str(ROOT / value)
    return value


@contextmanager
def langgraph_dev(
    workdir: Path,
    *,
    jobs_per_worker: int = 4,
    env: Mapping[str, str] | None = None,
    start_timeout: float = 120,
    python: Path | None = None,
) -> Iterator[str]:
    """``langgraph dev`` in ``workdir`` (with a copy of langgraph.json whose paths point into
    the repository) and ``env`` added to its environment; yields its URL once ``/ok`` answers,
    and stops it (SIGTERM, then SIGKILL) at the end. Its log is ``workdir/langgraph-dev.log``.
    ``python``: the interpreter of another environment, whose ``langgraph`` runs the server."""
    port = free_port()
    config = workdir / "langgraph.json"
    config.write_text(json.dumps(absolute_paths(json.loads((ROOT / "langgraph.json").read_text()))))
    log_path = workdir / "langgraph-dev.log"
    log = log_path.open("wb")
    cli = Path(python or sys.executable).with_name("langgraph")
    proc = subprocess.Popen(
        [
            str(cli),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n-jobs-per-worker",
            str(jobs_per_worker),
            "--config",
            str(config),
        ],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_NO_BROWSER": "1",
            **(env or {}),
        },
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("langgraph dev exited: " + log_path.read_text()[-2000:])
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"langgraph dev did not start within {start_timeout:.0f} s")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
