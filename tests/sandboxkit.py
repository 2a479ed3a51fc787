"""What the sandbox tests share: short limits, a skip for machines without rustc, and a look
at the live processes (nothing a test started may survive it)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from reflexion.programming.sandbox import Limits, SuiteResult, rustc_path

FAST = Limits(test_timeout_s=1.0, suite_timeout_s=20.0)
LOOP = Limits(test_timeout_s=0.5, suite_timeout_s=20.0)  # for tests that must time out

needs_rustc = pytest.mark.skipif(rustc_path() is None, reason="rustc is not installed")


def details(result: SuiteResult) -> list[str]:
    return [o["detail"] for o in result.outcomes]


def processes(
    uid: int | None = None, marker: bytes | None = None, *, zombies: bool = False
) -> list[int]:
    """Live processes (and, with ``zombies``, dead ones not yet reaped) with that real uid
    and/or that marker in their command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        state = re.search(r"^State:\s*(\S)", status, re.M)
        real_uid = re.search(r"^Uid:\s*(\d+)", status, re.M)
        if state is None or real_uid is None or (state.group(1) in "ZX" and not zombies):
            continue
        if uid is not None and int(real_uid.group(1)) != uid:
            continue
        if marker is not None and marker not in cmdline:
            continue
        found.append(int(entry))
    return found


def sandbox_dirs() -> set[Path]:
    """The suites' directories that exist now."""
    return set(Path(tempfile.gettempdir()).glob("reflexion-sandbox-*"))


def assert_cleaned_up(uid: int, before: set[Path] | None = None) -> None:
    """No process of the run's uid is left, not even a zombie, and (given the directories
    that existed ``before``) no suite's directory is left."""
    if os.geteuid() == 0 and uid != 0:
        assert processes(uid=uid, zombies=True) == []
    if before is not None:
        assert sandbox_dirs() <= before


def bound_back(directory: str) -> list[str]:
    """The entries of ``directory`` a run sees although it is private: where the Python
    installation or the venv lies under it (a clone in /tmp), the view binds it back."""
    from reflexion.programming.sandbox.box import _run_view

    prefix = directory.rstrip("/") + "/"
    names = {p[len(prefix) :].split("/")[0] for p in _run_view()["expose"] if p.startswith(prefix)}
    return sorted(prefix + name for name in names)
