"""What the tests that run the command line share: ``python -m reflexion.harness`` in a child process
(integration), wide enough that Rich wraps no line the tests read, and ``main()`` in this
process with the exit code and stderr it left (the bad-input tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reflexion.harness.cli.app import main

KEPT = '{"type": "final", "thread_id": "another-run", "solved": true, "evaluations": [{}]}\n'
"""A results line of another run: a failed command must leave it as it was."""


def reflexion(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``reflexion ARGS`` at 200 columns; it must exit 0 (its stderr is the message)."""
    done = subprocess.run(
        [sys.executable, "-m", "reflexion.harness", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done


def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    """Run ``reflexion ARGS`` in this process: its exit code and what it wrote to stderr."""
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    return int(exc.value.code or 0), err


def one_line_error(code: int, err: str, *needles: str) -> None:
    """A usage error: exit code 2 and one line on stderr, naming every needle, no traceback."""
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
