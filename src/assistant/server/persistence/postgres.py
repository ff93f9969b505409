"""Reaching Postgres: its URI (``POSTGRES_URI``, or the embedded one), and a clear error.

``make dev`` keeps threads, checkpoints and memories in Postgres
(`assistant.server.persistence.storage`).
:func:`postgres_uri` is ``POSTGRES_URI`` when set, otherwise the URI of an embedded
Postgres (``pgserver``: PostgreSQL 16 with pgvector, from PyPI) whose data is kept in
``.assistant_data/postgres`` of the server's working directory (``ASSISTANT_POSTGRES_DIR``
moves it). The first process to ask starts it; later ones, in this process or another,
join it; it is stopped when the last of them exits, and a folder left by a crash is
recovered. What cannot be opened is a :class:`StorageError` that says what to do.

>>> hide_password("postgresql://app:s3cret@db:5432/memory")
'postgresql://app:***@db:5432/memory'
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from assistant.config.settings import get_storage_settings

__all__ = [
    "DATA_DIR_ENV",
    "POSTGRES_URI_ENV",
    "StorageError",
    "database_uri",
    "embedded_postgres",
    "hide_password",
    "is_postgres_uri",
    "postgres_uri",
    "stop_embedded_postgres",
]

POSTGRES_URI_ENV = "POSTGRES_URI"
"""Names the Postgres (with pgvector) that ``make dev`` uses instead of the embedded one.

The same variable a self-hosted LangGraph deployment reads for its own database."""

DATA_DIR_ENV = "ASSISTANT_POSTGRES_DIR"
"""Where the embedded Postgres keeps its data (default :data:`DEFAULT_DATA_DIR`)."""


class StorageError(RuntimeError):
    """Postgres could not be opened: unreachable, without pgvector, or a bad data folder."""


def hide_password(uri: str) -> str:
    """The URI with its password replaced by ``***``, fit for logs and error messages.

    >>> hide_password("postgresql://postgres:@/postgres?host=/tmp/pg")
    'postgresql://postgres:@/postgres?host=/tmp/pg'
    >>> hide_password("postgres://bob@localhost/db")
    'postgres://bob@localhost/db'
    """
    parts = urlsplit(uri)
    if not parts.password:
        return uri
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def is_postgres_uri(uri: str) -> bool:
    """Whether ``uri`` names a Postgres database (``postgresql://`` or ``postgres://``)."""
    return urlsplit(uri).scheme in ("postgresql", "postgres")


def _forget_dead_handles(data_dir: Path) -> None:
    """Drop processes that died without saying so (a SIGKILL) from pgserver's handle list.

    pgserver stops the embedded Postgres when the last process using it exits; a
    process killed outright stays on its list, and the server would never be stopped.
    """
    handles = data_dir / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(pids, list):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _pid_alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive), encoding="utf-8")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clear_stale_postmaster(data_dir: Path) -> None:
    """Remove the ``postmaster.pid`` (and socket lock) of a Postgres that is gone.

    Postgres itself ignores a stale pid file, but pgserver trusts any process with
    that pid, so a pid reused by another program, or a killed postmaster left as a
    zombie, would be taken for the database.
    """
    pid_file = data_dir / "postmaster.pid"
    try:
        first_line = pid_file.read_text(encoding="utf-8").splitlines()[0]
        pid = int(first_line.strip())
    except (OSError, ValueError, IndexError):
        if pid_file.exists() and pid_file.stat().st_size == 0:
            pid_file.unlink()
        return
    if not _is_live_postgres(pid):
        pid_file.unlink()
        # Postgres takes a dead postmaster that nobody reaped (a zombie, in a container
        # without an init) for a live one, and would refuse its socket's lock file.
        for lock in data_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)


def _is_live_postgres(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) postgres process (Linux ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return not Path("/proc/self/stat").exists() and _pid_alive(pid)  # no /proc: trust kill
    name, _, rest = stat.partition("(")[2].rpartition(")")
    state = rest.split()[0] if rest.split() else "?"
    return name.startswith("postgres") and state not in ("Z", "X")


def embedded_postgres(data_dir: Path | str | None = None) -> str:
    """Start (or join) the embedded Postgres on ``data_dir`` and return its URI.

    The first call creates the folder and the database; later calls, from this or
    another process, reuse the server already running there. It is stopped when the
    last process that asked for it exits. A folder left by a crash is recovered by
    Postgres itself (write-ahead log replay).

    Raises:
        StorageError: pgserver is not installed, or Postgres would not start on the
            folder (the message names it and the log to read).
    """
    path = Path(data_dir or get_storage_settings().data_dir).resolve()
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # it logs every command at INFO
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver.postgres_server
    except ImportError as error:
        raise StorageError(
            "The embedded Postgres needs the pgserver package: run `make install`, "
            f"or set {POSTGRES_URI_ENV} to a Postgres with pgvector."
        ) from error
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        _forget_dead_handles(path)
        _clear_stale_postmaster(path)
    try:
        server = pgserver.postgres_server.get_server(path, cleanup_mode="stop")
        uri: str = server.get_uri()
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    except Exception as error:
        log = path / "log"
        raise StorageError(
            f"The embedded Postgres would not start on {path}: {error}. Read {log}; if "
            "another program owns that folder, stop it or point "
            f"{DATA_DIR_ENV} at another folder (or set {POSTGRES_URI_ENV})."
        ) from error
    return uri


def stop_embedded_postgres(data_dir: Path | str) -> None:
    """Stop the embedded Postgres on ``data_dir`` now, if this process started or joined it.

    It stops by itself when the last process using it exits; this is for callers that
    remove the folder afterwards (tests, benchmarks).
    """
    from assistant.compat import pgserver_instance

    server = pgserver_instance(data_dir)
    if server is not None:
        server.cleanup()


def database_uri(uri: str, database: str) -> str:
    """The same server's URI for another database.

    >>> database_uri("postgresql://postgres:@/postgres?host=/tmp/pg", "tests")
    'postgresql://postgres:@/tests?host=/tmp/pg'
    """
    return urlunsplit(urlsplit(uri)._replace(path=f"/{database}"))


def postgres_uri() -> str:
    """``POSTGRES_URI`` when set, otherwise the embedded Postgres's URI (started if needed)."""
    uri = get_storage_settings().postgres_uri
    if not uri:
        return embedded_postgres()
    if not is_postgres_uri(uri):
        raise StorageError(
            f"{POSTGRES_URI_ENV}={hide_password(uri)!r} is not a Postgres URI: use "
            "postgresql://user:password@host:5432/database, or unset it for the embedded one."
        )
    return uri
