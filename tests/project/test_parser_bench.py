"""`python -m bench.parser_bench --names` picks a format by any of its
names, in either spelling."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.project import ROOT

pytestmark = pytest.mark.bench


def test_names_select_a_format_by_any_alias():
    run = subprocess.run(
        [sys.executable, "-m", "bench.parser_bench", "--quick", "--names", "hy_v4,deepseek_v4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rows = [line for line in run.stdout.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| `deepseek_v4`, `deepseekv4`",  # tool-call rows
        "| `hunyuan`, `hy_v3`, `hy_v4`",
        "| `deepseek-v4`",  # reasoning rows, streamed on and off
        "| `deepseek-v4`",
        "| `hunyuan`, `hy_v3`, `hy_v4`",
        "| `hunyuan`, `hy_v3`, `hy_v4`",
    ]
