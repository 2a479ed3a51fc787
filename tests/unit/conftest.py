"""Fixtures of the unit tests: a SQLite checkpointer in the test's temporary directory."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()
