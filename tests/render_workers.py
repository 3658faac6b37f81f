"""The render worker processes (templates/prompt_render.py) a test can see."""

from __future__ import annotations

import os
from pathlib import Path

from bench.stream_load import process_tree
from gateway.templates.render_pool import WORKER_MODULE


def render_workers() -> set[int]:
    """This process's descendants that run the render worker (the test
    process may have others: servers that other tests started)."""
    return {pid for pid in process_tree(os.getpid())[1:] if WORKER_MODULE.encode() in _command_line(pid)}


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""
