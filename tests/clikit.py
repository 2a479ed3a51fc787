"""What the integration tests that run the command line share: ``python -m reflexion`` in a
child process, wide enough that Rich wraps no line the tests read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def reflexion(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``reflexion ARGS`` at 200 columns; it must exit 0 (its stderr is the message)."""
    done = subprocess.run(
        [sys.executable, "-m", "reflexion", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done
