"""A real `redis-server` and a real PostgreSQL for the store tests, each
on a free loopback port with its data in a temporary folder, found on the
machine (`.ci/run` installs both from the system's packages). PostgreSQL
refuses to run as root, so as root its commands run as the `postgres` user.
Either can be paused (SIGSTOP: it takes connections, as the kernel does,
and answers nothing) and resumed, or stopped and started again on its port."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _signal_all(pids: list[int], sent: signal.Signals) -> None:
    for pid in pids:
        os.kill(pid, sent)


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (Linux's /proc)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rpartition(")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.split("/")[2]))
    return found


class RedisServer:
    """`redis-server` without persistence, until `stop()`."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        """Start the server on its port (again, after `stop()`), as a new one: empty."""
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
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
        assert self.process.stdout is not None
        self.process.stdout.close()

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)


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
        self.start()

    def start(self) -> None:
        """Start the server on its port (again, after `halt()`), with the data it had."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def halt(self) -> None:
        """Stop the server (its sessions end), keeping its data for `start()`."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def _processes(self) -> list[int]:
        """The postmaster first (so that it starts no other), then its children."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return [postmaster, *_children(postmaster)]

    def pause(self) -> None:
        self._paused = self._processes()
        _signal_all(self._paused, signal.SIGSTOP)

    def resume(self) -> None:
        _signal_all(self._paused, signal.SIGCONT)

    def _run(self, program: str, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_postgres, str(self.bin / program), *args], check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
