"""Where threads live: a checkpointer chosen by a string.

``--db`` (and :func:`open_checkpointer`) takes

* a plain path or ``sqlite:///PATH`` (``sqlite:////abs/path`` for an absolute one): a SQLite
  file, created with its parent directories when missing (the CLI's default);
* ``postgresql://user:password@host:port/dbname`` (or ``postgres://…``, or with
  ``?sslmode=…`` and other libpq parameters): a PostgreSQL database, tables created on first
  use (needs the ``postgres`` extra);
* ``:memory:``: an in-process saver that vanishes with the process (tests, one-offs).

Both backends come from the official packages (``langgraph-checkpoint-sqlite``,
``langgraph-checkpoint-postgres``). Each checkpointer has its own connection. ``SqliteSaver``
and ``PostgresSaver`` serialise their use of that connection with a lock, so one object is safe
to share between the benchmark's worker threads (``--concurrency N``); the database, not the
process, is the point of contact.

Anything that cannot be opened is a one-line :class:`ReflexionError` naming the target and the
option to fix, raised before any work starts.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from reflexion.core.errors import ReflexionError, first_line

Kind = Literal["sqlite", "postgres", "memory"]

MEMORY = ":memory:"
CONNECT_TIMEOUT_S = 10
"""How long to wait for a PostgreSQL server before reporting it unreachable (unless the
connection string sets ``connect_timeout`` itself)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#]*):[^@/?#]*@")


def postgres_missing(option: str = "--db") -> str:
    """The message for a PostgreSQL target when the ``postgres`` extra is not installed."""
    return (
        f"a PostgreSQL {option} needs the postgres extra (langgraph-checkpoint-postgres and "
        "psycopg): pip install 'reflexion-langgraph[postgres]'"
    )


@dataclass(frozen=True)
class Target:
    """A parsed ``--db`` value."""

    kind: Kind
    path: Path | None = None
    """The SQLite file (``kind == "sqlite"`` only)."""
    dsn: str | None = None
    """The libpq connection string (``kind == "postgres"`` only)."""

    def __str__(self) -> str:
        """How messages name the target: the file, or the connection string without its
        password."""
        if self.path is not None:
            return str(self.path)
        if self.dsn is not None:
            return _PASSWORD.sub(r"\1:***@", self.dsn)
        return MEMORY

    def missing(self) -> bool:
        """True when the target certainly holds no threads: a SQLite file that does not exist.
        (A PostgreSQL database is only known by connecting; ``:memory:`` starts empty but is
        reported by the thread lookup, like an unknown thread.)"""
        return self.path is not None and not self.path.is_file()


def parse_target(db: str | Path, *, option: str = "--db") -> Target:
    """Recognise a SQLite path (plain or ``sqlite:///``), a ``postgresql://``/``postgres://``
    connection string or ``:memory:``; anything else with a ``scheme://`` is an error."""
    text = str(db).strip()
    if not text:
        raise ReflexionError(
            f"{option} is empty: give a SQLite file, a postgresql:// connection string or {MEMORY}"
        )
    if text == MEMORY:
        return Target("memory")
    match = _SCHEME.match(text)
    if match is None:
        return Target("sqlite", path=Path(text))
    scheme = match.group(1).lower()
    if scheme == "sqlite":
        rest = text[len("sqlite://") :]
        if not rest.startswith("/") or rest == "/":
            raise ReflexionError(
                f"{option} '{text}' has no file: write sqlite:///relative/path or "
                "sqlite:////absolute/path"
            )
        rest = rest[1:]
        return Target("memory") if rest == MEMORY else Target("sqlite", path=Path(rest))
    if scheme in ("postgresql", "postgres"):
        return Target("postgres", dsn=text)
    raise ReflexionError(
        f"{option} scheme '{scheme}://' is not supported: use a SQLite file (or sqlite:///PATH), "
        f"postgresql://user@host:port/dbname or {MEMORY}"
    )


# ---- SQLite ---------------------------------------------------------------------------------


def _sqlite_connection(target: Target, option: str) -> sqlite3.Connection:
    assert target.path is not None
    try:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(target.path),
            check_same_thread=False,
            isolation_level="DEFERRED",
        )
    except (OSError, sqlite3.Error) as exc:
        raise ReflexionError(
            f"cannot open the thread database {target}: {exc}; pass {option} PATH"
        ) from None
    try:
        conn.execute("PRAGMA user_version")  # fails here, not mid-run, if not a database
    except sqlite3.Error as exc:
        conn.close()
        raise ReflexionError(
            f"cannot open the thread database {target}: {exc}; pass {option} PATH"
        ) from None
    return conn


# ---- PostgreSQL -----------------------------------------------------------------------------


@contextlib.contextmanager
def _postgres_connection(target: Target, option: str) -> Iterator[Any]:
    """A psycopg connection as the LangGraph Postgres classes require it (autocommit, dict
    rows, no server-side prepared statements, which poolers such as PgBouncer reject)."""
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        raise ReflexionError(postgres_missing(option)) from None
    assert target.dsn is not None
    extra: dict[str, Any] = {}
    if "connect_timeout" not in target.dsn:
        extra["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        conn = psycopg.Connection.connect(
            target.dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row, **extra
        )
    except psycopg.Error as exc:
        raise ReflexionError(
            f"cannot connect to PostgreSQL at {target} ({first_line(exc)}): check {option}"
        ) from None
    with conn:
        yield conn


def _setup(obj: BaseCheckpointSaver[Any], target: Target, option: str) -> None:
    """Create the tables (idempotent); a server that refuses is a one-line error."""
    try:
        obj.setup()  # type: ignore[attr-defined]
    except (sqlite3.Error, OSError) as exc:
        raise ReflexionError(
            f"cannot open the thread database {target}: {exc}; pass {option} PATH"
        ) from None
    except Exception as exc:
        if type(exc).__module__.startswith("psycopg"):
            raise ReflexionError(
                f"cannot set up PostgreSQL at {target} ({first_line(exc)}): check {option} "
                "and that the user may create tables"
            ) from None
        raise


# ---- openers --------------------------------------------------------------------------------


@contextlib.contextmanager
def _open(db: str | Path, option: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpointer for ``db``'s kind, tables created, its connection closed on exit."""
    target = parse_target(db, option=option)
    if target.kind == "memory":
        yield InMemorySaver()
        return
    if target.kind == "sqlite":
        conn = _sqlite_connection(target, option)
        try:
            saver = SqliteSaver(conn)
            _setup(saver, target, option)
            yield saver
        finally:
            conn.close()
        return
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise ReflexionError(postgres_missing(option)) from None
    with _postgres_connection(target, option) as pg:
        # One connection: PostgresSaver holds its lock around every statement, so concurrent
        # benchmark threads take turns on it safely.
        made: BaseCheckpointSaver[Any] = PostgresSaver(pg)
        _setup(made, target, option)
        yield made


def open_checkpointer(
    db: str | Path, *, option: str = "--db"
) -> contextlib.AbstractContextManager[BaseCheckpointSaver[Any]]:
    """A checkpointer on ``db`` (see the module docstring), tables created, closed on exit."""
    return _open(db, option)


__all__ = [
    "MEMORY",
    "Target",
    "open_checkpointer",
    "parse_target",
    "postgres_missing",
]
