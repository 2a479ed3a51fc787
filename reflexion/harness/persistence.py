"""Where threads and long-term memory live: a checkpointer and a store chosen by a string.

``--db`` (and :func:`open_checkpointer` / :func:`open_store`) takes

* a plain path or ``sqlite:///PATH`` (``sqlite:////abs/path`` for an absolute one): a SQLite
  file, created with its parent directories when missing (the CLI's default);
* ``postgresql://user:password@host:port/dbname`` (or ``postgres://…``, or with
  ``?sslmode=…`` and other libpq parameters): a PostgreSQL database, tables created on first
  use (needs the ``postgres`` extra);
* ``:memory:``: an in-process saver and store that vanish with the process (tests, one-offs).

Both backends come from the official packages (``langgraph-checkpoint-sqlite``,
``langgraph-checkpoint-postgres``). Each opener gives its object its own connection.
``SqliteSaver``, ``SqliteStore``, ``PostgresSaver`` and ``PostgresStore`` serialise their use of
that connection with a lock, so one object is safe to share between the benchmark's worker
threads (``--concurrency N``); the database, not the process, is the point of contact.

Anything that cannot be opened is a one-line :class:`ReflexionError` naming the target and the
option to fix, raised before any work starts.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

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


def _sqlite_connection(
    target: Target, option: str, *, autocommit: bool = False
) -> sqlite3.Connection:
    assert target.path is not None
    try:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(target.path),
            check_same_thread=False,
            isolation_level=None if autocommit else "DEFERRED",
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


def _setup(obj: BaseCheckpointSaver[Any] | BaseStore, target: Target, option: str) -> None:
    """Create the tables (idempotent); a server that refuses is a one-line error."""
    try:
        obj.setup()  # type: ignore[union-attr]
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


_Opened = TypeVar("_Opened", BaseCheckpointSaver[Any], BaseStore)


@contextlib.contextmanager
def _open(
    db: str | Path,
    option: str,
    *,
    memory: Callable[[], _Opened],
    sqlite: Callable[[sqlite3.Connection], _Opened],
    postgres: Callable[[], Callable[[Any], _Opened]],
    autocommit: bool = False,
) -> Iterator[_Opened]:
    """The object that ``memory()``, ``sqlite(connection)`` or ``postgres()(connection)`` (the
    class, imported there) makes for ``db``'s kind, tables created, its connection closed on
    exit."""
    target = parse_target(db, option=option)
    if target.kind == "memory":
        yield memory()
        return
    if target.kind == "sqlite":
        conn = _sqlite_connection(target, option, autocommit=autocommit)
        try:
            made = sqlite(conn)
            _setup(made, target, option)
            yield made
        finally:
            conn.close()
        return
    try:
        make = postgres()
    except ImportError:
        raise ReflexionError(postgres_missing(option)) from None
    with _postgres_connection(target, option) as pg:
        # One connection: the Postgres classes hold their lock around every statement, so
        # concurrent benchmark threads take turns on it safely.
        made = make(pg)
        _setup(made, target, option)
        yield made


def _postgres_saver() -> Callable[[Any], BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.postgres import PostgresSaver

    return PostgresSaver


def _postgres_store() -> Callable[[Any], BaseStore]:
    from langgraph.store.postgres import PostgresStore

    return PostgresStore


def open_checkpointer(
    db: str | Path, *, option: str = "--db"
) -> contextlib.AbstractContextManager[BaseCheckpointSaver[Any]]:
    """A checkpointer on ``db`` (see the module docstring), tables created, closed on exit."""
    return _open(db, option, memory=InMemorySaver, sqlite=SqliteSaver, postgres=_postgres_saver)


def open_store(
    db: str | Path, *, option: str = "--db"
) -> contextlib.AbstractContextManager[BaseStore]:
    """A LangGraph store on the same target as :func:`open_checkpointer` (the SQLite file
    through a connection of its own, the PostgreSQL database, or in memory), set up."""
    # Autocommit: SqliteStore issues its own BEGIN/COMMIT.
    return _open(
        db,
        option,
        memory=InMemoryStore,
        sqlite=SqliteStore,
        postgres=_postgres_store,
        autocommit=True,
    )


__all__ = [
    "MEMORY",
    "Target",
    "open_checkpointer",
    "open_store",
    "parse_target",
    "postgres_missing",
]
