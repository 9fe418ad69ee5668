"""A throwaway PostgreSQL server (Debian's package) in a temporary directory: for tests and benchmarks.

with postgres_server() as pg:              # unix socket in a short /tmp directory, no TCP
    dsn = create_database(pg, "catalog")   # "dbname=catalog host=... port=... user=peras"

PostgreSQL refuses to run as root (`initdb: error: cannot be run as root`); as root the server runs as the
`postgres` user. `missing_reason()` says why a server cannot be started here (tests skip with it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


@dataclass(frozen=True)
class Postgres:
    """A running server: where its socket is, its port, the superuser to connect as."""

    host: str
    port: int
    user: str
    version: str

    def dsn(self, dbname: str) -> str:
        """libpq connection string of one database."""
        return f"dbname={dbname} host={self.host} port={self.port} user={self.user}"


def pg_binary(name: str) -> str | None:
    """initdb / pg_ctl / createdb from PATH or Debian's /usr/lib/postgresql/<v>/bin."""
    return shutil.which(name) or next((str(d / name) for d in PG_BIN_DIRS if (d / name).is_file()), None)


def missing_reason() -> str | None:
    """Why a server cannot be started on this machine, or None."""
    if not (pg_binary("initdb") and pg_binary("pg_ctl")):
        return "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        if not shutil.which("runuser"):
            return "running as root without runuser to start the server as 'postgres'"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_server(max_connections: int = 100) -> Iterator[Postgres]:
    """Start a server in a new /tmp directory (unix socket only), yield it, stop it (fast shutdown), delete it.

    /tmp, not a test's tmp_path: a unix socket's path must stay under ~107 bytes, and a server run as `postgres`
    must be able to reach its directory.
    """
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    initdb, pg_ctl = str(pg_binary("initdb")), str(pg_binary("pg_ctl"))
    as_user: list[str] = []
    pg_dir = Path(tempfile.mkdtemp(prefix="peras-pg-", dir="/tmp"))
    if os.geteuid() == 0:
        import pwd

        owner = pwd.getpwnam("postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
        os.chown(pg_dir, owner.pw_uid, owner.pw_gid)
    data = pg_dir / "data"
    version = subprocess.run([initdb, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    init = [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "peras", "-E", "UTF8", "--no-sync"]
    subprocess.run(init, capture_output=True, text=True, check=True)
    port = _free_port()
    options = f"-p {port} -k {pg_dir} -c listen_addresses='' -c max_connections={max_connections} -c fsync=off"
    start = [*as_user, pg_ctl, "-D", str(data), "-l", str(pg_dir / "log"), "-w", "-o", options, "start"]
    subprocess.run(start, capture_output=True, text=True, check=True)
    try:
        yield Postgres(host=str(pg_dir), port=port, user="peras", version=version)
    finally:
        stop = [*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(stop, capture_output=True, check=False)
        shutil.rmtree(pg_dir, ignore_errors=True)


def create_database(pg: Postgres, name: str) -> str:
    """createdb NAME (PostgreSQL's own client); the libpq connection string of the new database."""
    createdb = pg_binary("createdb") or "createdb"
    command = [createdb, "-h", pg.host, "-p", str(pg.port), "-U", pg.user, name]
    subprocess.run(command, capture_output=True, text=True, check=True)
    return pg.dsn(name)
