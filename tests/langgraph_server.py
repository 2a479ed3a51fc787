"""A real ``langgraph dev`` server for the integration tests: this project's graphs served on a
free loopback port, from a fresh working directory (the in-memory server keeps its threads in
``.langgraph_api/`` under it, so every start has no threads)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reflexion.harness.processes import free_port, serving

__all__ = ["ROOT", "absolute_paths", "free_port", "langgraph_dev"]

ROOT = Path(__file__).resolve().parent.parent


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
    cli = Path(python or sys.executable).with_name("langgraph")
    command = [
        str(cli), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
        "--port", str(port), "--n-jobs-per-worker", str(jobs_per_worker), "--config", str(config),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    server_env = {
        **os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_NO_BROWSER": "1", **(env or {})
    }  # fmt: skip
    with serving(
        command,
        f"{url}/ok",
        workdir / "langgraph-dev.log",
        name="langgraph dev",
        timeout=start_timeout,
        cwd=workdir,
        env=server_env,
    ):
        yield url
