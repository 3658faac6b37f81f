"""The agent CLIs' locked npm packages, installed once per test run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def installed_cli(folder: Path, binary: str, what: str) -> Path:
    """`folder`'s `node_modules/.bin/<binary>`, after `npm ci` there when the
    install is missing or older than the lock file; the test fails (never
    skips) without npm or when the install fails."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"the {what} tests need Node.js and npm on PATH, e.g. apt-get install nodejs npm")
    installed = folder / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < (folder / "package-lock.json").stat().st_mtime:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci in {folder} failed:\n{done.stdout}\n{done.stderr}")
    return folder / "node_modules" / ".bin" / binary
