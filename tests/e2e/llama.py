"""A real llama.cpp `llama-server` for the tests: finding the binary, running
it on a loopback port, and forcing its output with a grammar.

The binary comes from `.ci/llama_server.sh`, which CI runs before pytest and
whose path it exports as PARSEGATE_LLAMA_SERVER.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

ENV_VAR = "PARSEGATE_LLAMA_SERVER"

# What a raw-text gateway wants from the server: the model's text untouched,
# neither reasoning nor tool calls taken out of it.
RAW_TEXT_ARGS = ("--reasoning-format", "none", "--skip-chat-parsing")


def default_cache() -> Path:
    """Where .ci/llama_server.sh keeps its binaries by default."""
    override = os.environ.get("PARSEGATE_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "parsegate"


def find_llama_server() -> tuple[Path | None, str]:
    """The binary to test against, or None and why there is none.

    PARSEGATE_LLAMA_SERVER wins; without it, the newest binary that
    .ci/llama_server.sh left in its cache, then `llama-server` on PATH.
    """
    named = os.environ.get(ENV_VAR)
    if named:
        path = Path(named)
        if path.is_file() and os.access(path, os.X_OK):
            return path, ""
        return None, f"{ENV_VAR}={named} is not an executable file"
    cached = sorted(
        default_cache().glob("llama-server-*/llama-server"),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    if cached:
        return cached[0], ""
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path), ""
    return None, (
        f"no llama-server: set {ENV_VAR} or run `bash .ci/llama_server.sh` "
        "(builds it once into the cache, about 10 minutes on 2 cores)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerExited(RuntimeError):
    """The server process ended before it was ready."""


class LlamaServer:
    """One llama-server process on 127.0.0.1, its log in `log_path`."""

    def __init__(
        self,
        binary: Path,
        model: Path,
        log_path: Path,
        *,
        args: Sequence[str] = (),
        ready_timeout: float = 60.0,
    ) -> None:
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        # The free port is free when asked, not necessarily when the server
        # binds it: a server that exits at once is tried on another port.
        for attempt in range(3):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.command = [
                str(binary),
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "-m", str(model),
                "--jinja",
                # Two slots of 4096 tokens each: the byte-level vocabulary
                # makes prompts long (one tool is about 500 tokens).
                "-c", "8192",
                "-np", "2",
                "-t", "1",
                "--no-webui",
                *args,
            ]  # fmt: skip
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
            )
            try:
                self._wait_ready(ready_timeout)
                return
            except ServerExited:
                if attempt == 2:
                    self.stop()
                    raise
            except BaseException:
                self.stop()
                raise

    def _wait_ready(self, timeout: float) -> None:
        """Poll GET /health until it answers 200 (503 while the model loads).

        Waiting on the process between polls both paces the loop and notices
        at once a server that exits instead of starting.
        """
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                try:
                    code = self.process.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
                else:
                    raise ServerExited(f"llama-server exited with {code} before it was ready:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama-server not ready after {timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()


StartServer = Callable[..., LlamaServer]


def literal_grammar(text: str) -> str:
    """A GBNF grammar whose only sentence is `text`.

    Escapes follow llama.cpp's parse_char
    (https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md): `\\"`,
    `\\\\`, `\\n`, `\\r`, `\\t`, and `\\xHH`, `\\uHHHH`, `\\UHHHHHHHH` for code
    points. Everything outside printable ASCII is escaped, so the grammar is
    plain ASCII whatever the text.
    """
    out: list[str] = []
    for char in text:
        point = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= point < 0x7F:
            out.append(char)
        elif point == 0:
            # The grammar engine ends its code point strings with 0.
            raise ValueError("a GBNF grammar cannot produce NUL")
        elif 0xD800 <= point <= 0xDFFF:
            raise ValueError(f"lone surrogate U+{point:04X} is not text")
        elif point <= 0xFF:
            out.append(f"\\x{point:02X}")
        elif point <= 0xFFFF:
            out.append(f"\\u{point:04X}")
        else:
            out.append(f"\\U{point:08X}")
    return 'root ::= "' + "".join(out) + '"\n'
