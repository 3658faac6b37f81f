"""A real `redis-server` and a real PostgreSQL for the store tests, each
on a free loopback port with its data in a temporary folder, found on the
machine (`.ci/run` installs both from the system's packages). PostgreSQL
refuses to run as root, so as root its commands run as the `postgres` user."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """`redis-server` without persistence, until `stop()`."""

    def __init__(self, binary: str) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        log = []
        for line in self.process.stdout:  # the server says when it is ready
            log.append(line)
            if "Ready to accept connections" in line:
                return
        raise RuntimeError("redis-server did not start:\n" + "".join(log))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def redis_binary() -> str | None:
    return shutil.which("redis-server")


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs (initdb, pg_ctl), the newest found."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb") or ""]
    return Path(found[-1]).parent if found[-1] else None


class PostgresServer:
    """A fresh PostgreSQL cluster (trust authentication, user `postgres`), until `stop()`."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.folder = Path(tempfile.mkdtemp(prefix="parsegate-pg-"))
        self.data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def _run(self, program: str, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_postgres, str(self.bin / program), *args], check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
