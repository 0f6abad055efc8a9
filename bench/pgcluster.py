"""A private PostgreSQL server for the throughput benchmark (initdb in a temporary directory, on a
free port, as the ``postgres`` system user), so that 200 concurrent conversations can exhaust *its*
connections, not those of the shared server everyone else's tests use; and so that the connection
limit is a parameter of the benchmark. Stopped and deleted afterwards."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .common import Cleanup, log, temp_dir


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (/usr/lib/postgresql/*/bin)")
    return found[-1]


def _as_postgres(args: list[str]) -> list[str]:
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        return ["runuser", "-u", "postgres", "--", *args]
    return args


class PrivatePostgres:
    def __init__(self, *, max_connections: int):
        from tests.stack import free_port

        self.max_connections = max_connections
        self.port = free_port()
        self.root = temp_dir("skein-bench-pg-")
        self.data = self.root / "data"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        subprocess.run(
            _as_postgres([_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]),
            check=True,
            capture_output=True,
            text=True,
        )
        self.log_path = self.root / "postgres.log"
        self._log = open(self.log_path, "w")
        if os.geteuid() == 0:
            shutil.chown(self.log_path, "postgres", "postgres")
        self.proc = subprocess.Popen(
            _as_postgres(
                [
                    _bin("postgres"),
                    "-D",
                    str(self.data),
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.root),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"max_connections={max_connections}",
                    "-c",
                    "shared_buffers=128MB",
                ]
            ),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        Cleanup.push(f"private PostgreSQL on port {self.port}", self.stop)
        deadline = time.monotonic() + 60
        while subprocess.run([_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"private PostgreSQL did not start: {Path(self.log_path).read_text()[-2000:]}")
            time.sleep(0.2)
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute('CREATE DATABASE "skein_bench"')
        log(f"private PostgreSQL on port {self.port}, max_connections={max_connections}")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/skein_bench"

    def connections(self) -> int:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()[0]

    def stop(self) -> None:
        from tests.stack import stop_group

        stop_group(self.proc, signal.SIGINT, timeout=30)  # SIGINT: PostgreSQL's fast shutdown
        self._log.close()
