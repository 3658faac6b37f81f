"""Every property test with random seeds, for a set time; run it before every stop:

    python -m tests.property_sweep --minutes 5

The suite draws the same property examples on every run (the "derandomized"
profile of tests/conftest.py), so its runs find nothing new. This runs the
property tests (the `property` marker) under the "random" profile instead,
round after round until the time is spent, each round with a fresh seed
(`--hypothesis-seed`), printed as the round starts. Each test keeps its own
number of examples: only the seed changes. A round goes on from the test
where the last one stopped (the first from a random one), and the test
running when the time is up is the round's last, so that a long enough
sweep runs every test, and a short one different tests each time. A
failing test is printed with the command that replays it; a round still
running `--grace` seconds after the time is up is interrupted, and the test
it was in is reported as stalled, with its seed.

Arguments after the options go to pytest: a file, a folder or `-k` sweeps
fewer tests. The exit status is 1 if a test failed or stalled.

This module is also the pytest plugin (`-p tests.property_sweep`) each
round runs with: it rotates the selected tests, stops the round when the
time is up, and writes what ran and failed to a report file.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# The plugin, in each round's pytest.


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("property sweep (tests/property_sweep.py)")
    group.addoption("--sweep-report", help="where to write what the round ran and what failed (JSON)")
    group.addoption("--sweep-start", type=int, default=0, help="begin at this test (modulo their number)")
    group.addoption("--sweep-until", type=float, default=None, help="start no test after this time (epoch seconds)")


class _Round:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.report = Path(config.getoption("sweep_report"))
        self.until = config.getoption("sweep_until")
        self.session: pytest.Session | None = None
        self.state: dict = {"total": 0, "start": 0, "ran": 0, "running": None, "failed": []}

    def write(self) -> None:
        self.report.write_text(json.dumps(self.state), encoding="utf-8")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)  # after `-m property` and `-k` have deselected
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        start = self.config.getoption("sweep_start") % len(items) if items else 0
        items[:] = items[start:] + items[:start]
        self.state.update(total=len(items), start=start)
        self.write()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.state["running"] = nodeid
        self.write()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.nodeid not in self.state["failed"]:
            self.state["failed"].append(report.nodeid)
        if report.when == "teardown":
            self.state["ran"] += 1
            self.state["running"] = None
            self.write()
            if self.until is not None and time.time() >= self.until and self.session is not None:
                self.session.shouldstop = "the sweep's time is up"


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("sweep_report"):
        config.pluginmanager.register(_Round(config), "property-sweep-round")


# The sweep.


def replay(nodeid: str, seed: int) -> str:
    return shlex.join(
        [
            "python",
            "-m",
            "pytest",
            nodeid,
            "-p",
            "no:cacheprovider",
            "--hypothesis-profile=random",
            f"--hypothesis-seed={seed}",
        ]
    )


def run_round(seed: int, start: int, until: float, grace: float, report: Path, pytest_args: list[str]) -> dict:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "property",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.property_sweep",
        "--hypothesis-profile=random",
        f"--hypothesis-seed={seed}",
        f"--sweep-start={start}",
        f"--sweep-until={until}",
        f"--sweep-report={report}",
        *pytest_args,
    ]
    report.unlink(missing_ok=True)
    process = subprocess.Popen(command, cwd=ROOT)
    stalled = None
    try:
        process.wait(timeout=max(until - time.time(), 0) + grace)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # pytest prints where it was
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stalled = True
    state = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    state.update(returncode=process.returncode, stalled=state.get("running") if stalled else None)
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.property_sweep",
        description="Run every property test with random seeds, round after round, for a set time.",
    )
    parser.add_argument("--minutes", type=float, default=5, help="how long to sweep (default 5)")
    parser.add_argument(
        "--grace",
        type=float,
        default=120,
        help="seconds a test may run past the time before it is stopped as stalled (default 120)",
    )
    options, pytest_args = parser.parse_known_args(argv)
    until = time.time() + options.minutes * 60
    seeds = random.SystemRandom()
    start = seeds.randrange(2**31)
    rounds, tests_run, problems = 0, 0, []
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "round.json"
        while time.time() < until:
            seed = seeds.randrange(2**32)
            rounds += 1
            print(f"\n=== property sweep, round {rounds}: --hypothesis-seed={seed}", flush=True)
            state = run_round(seed, start, until, options.grace, report, pytest_args)
            if not state.get("total"):
                print(f"no property test was collected or run (pytest exit status {state['returncode']})")
                return 1
            tests_run += state["ran"]
            start = (state["start"] + state["ran"]) % state["total"]
            for nodeid in state["failed"]:
                problems.append(f"FAILED {nodeid}\n  replay: {replay(nodeid, seed)}")
            if state["stalled"]:
                problems.append(f"STALLED {state['stalled']}\n  replay: {replay(state['stalled'], seed)}")
                break
            print(f"=== round {rounds}: {state['ran']} of {state['total']} property tests run", flush=True)
    print(f"\n=== property sweep: {rounds} rounds, {tests_run} tests run, {len(problems)} failed or stalled")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
