"""Gateway macro-benchmark: every parsing surface next to the bare pass-through, in one run.

Processes, each pinned (taskset): the fake raw-text backend
(bench/fake_backend.py: 200 chunks of 4 characters, a Qwen3 reply with
`<think>` and a `<tool_call>`), the bare pass-through `pt-sse`
(bench/passthrough.py: FastAPI + httpx + sse-starlette, no parsing; both
copied from ../shared/bench) and parsegate (bench/gateway.yaml: qwen3 reasoning + qwen25 tool
calls, and the same model in template mode) with `--workers N` worker
processes, all on free loopback ports. The proxies get the first cores
(each parsegate worker a core of its own where the machine has them, the
pass-through the first), the backend and the load generator
(bench/stream_load.py) the others. The load runs against each target in
turn, a tool in every request, so that machine noise hits all alike.
Targets: `direct` (the backend itself), `pt-sse`, and parsegate's `chat`,
`responses` (/v1/responses), `messages` (/v1/messages) and `template`
(chat in template mode); `paired` adds `floor` (bench/aiohttp_floor.py:
FastAPI + aiohttp copying the stream's bytes, no framing or parsing), the
least a proxy on this stack costs.

  burst     32 streams as fast as the backend sends: proxy CPU per chunk
  paced     48 streams at 50 chunks/s, arrivals spread over 5 s: proxy CPU
            per chunk, the p99 gap between two chunks of one stream and
            its growth over the direct connection
  paired    paced, each parsegate surface and the pass-through loaded at
            the same time (a load generator each, same backend, same
            core): the ratio of their CPU per chunk in each pair, which
            machine noise moves far less than that of runs made in turn
  stepped   paired, with the backend writing every stream's next chunk at
            the same tick of one 20 ms clock, as a batching GPU server
            (vLLM, SGLang, llama.cpp) writes one token of each sequence per
            decode step; in `paced` and `paired` each stream keeps its own
            clock, so that chunks arrive one at a time (the worst case)
  whole     non-streamed requests: proxy CPU per request
  capacity  the most streams at 50 chunks/s that parsegate carries with
            every stream kept and the p99 gap at most 5 ms over the direct
            connection at the same count: from 32 per worker, doubling,
            then bisecting, bounded in probes and seconds

Proxy CPU is utime + stime from /proc/PID/stat of the proxy's processes
only, over the measured window, divided by the chunks the backend sent
(text chunks, the finish chunk and usage), not by the events the proxy
sent on, since parsing regroups them. Ratios are to `pt-sse` in the same
run. Parsing holds text back at a marker (`</think>`, `<tool_call>`, a
call's name), so parsegate's p99 gap on the tool text includes that wait;
the capacity search has the backend send marker-free text (its `plain`
preset), so that the gaps it compares measure the proxy's load alone.

    python -m bench.gateway_bench [--quick | --smoke] [--only burst,paced,paired,stepped,whole,capacity]
        [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bench.stream_load import process_tree
from bench.surface_requests import BODIES, CHUNKS, END, PATHS, REPO

PACED_DELAY_MS = 20  # 50 chunks/s per stream
GAP_GROWTH_MS = 5.0  # issue 23: the p99 gap grows by at most this over the direct connection
GOALS = {"burst": 0.7, "paced": 0.5}  # proxy CPU per chunk, parsegate / pass-through (issue 23)
CAPACITY_GOAL = 250  # streams at 50 chunks/s per worker (issue 23)
SURFACES = ["pt-sse", "chat", "responses", "messages", "template"]


@dataclass(frozen=True)
class Sizes:
    """How much each scenario runs: `--smoke` (seconds: the test), `--quick`, or in full."""

    repeats: int
    chunks: int  # backend chunks per response
    burst_streams: int
    burst_requests: int
    paced_streams: int
    # paced and capacity: requests one after the other on each connection; with two, all the
    # streams are open at once for a while (a stream lasts 4 s, arrivals are spread over 5 s)
    streams_per_connection: int
    ramp: float  # seconds over which paced arrivals are spread
    paced_warmup: int  # requests before the paced measurement (4 s each in full)
    whole_requests: int
    capacity_start: int  # streams per worker
    probes: int
    probe_seconds: float


FULL = Sizes(3, CHUNKS, 32, 1000, 48, 2, 5.0, 4, 1000, 32, 9, 600)
QUICK = Sizes(1, CHUNKS, 32, 128, 48, 2, 5.0, 4, 200, 32, 4, 240)
SMOKE = Sizes(1, 64, 4, 8, 4, 1, 0.5, 0, 8, 4, 1, 30)


@dataclass
class Bench:
    """One scenario's running processes and what the load needs to reach them."""

    python: str
    workers: int
    sizes: Sizes
    urls: dict[str, str] = field(default_factory=dict)  # backend, pt-sse, gateway
    pids: dict[str, int] = field(default_factory=dict)

    def request(self, target: str, stream: bool) -> tuple[str, str, str]:
        """(url, body, end marker) of one target; `template` is chat on the template-mode model."""
        surface = "chat" if target in ("direct", "pt-sse", "floor", "template") else target
        body = dict(BODIES[surface], stream=stream)
        if target == "template":
            body["model"] = "fake-template"
        if stream and surface == "chat":
            body["stream_options"] = {"include_usage": True}
        base = {"direct": self.urls["backend"], "pt-sse": self.urls["pt-sse"], "floor": self.urls["floor"]}
        base = base.get(target, self.urls["gateway"])
        return base + PATHS[surface], json.dumps(body), END[surface] if stream else ""

    def load(self, target: str, stream: bool = True, **options: object) -> dict:
        """One run of bench/stream_load.py against `target`, pinned to the load cores."""
        return self.loads_at_once([target], stream, **options)[target]

    def loads_at_once(self, targets: list[str], stream: bool = True, **options: object) -> dict[str, dict]:
        """A run of bench/stream_load.py against each of `targets`, all at the same time."""
        started = {target: self._start_loads(target, stream, options) for target in targets}
        return {target: self._row(merged([_output(process) for process in loads])) for target, loads in started.items()}

    def _start_loads(self, target: str, stream: bool, options: dict[str, object]) -> list[subprocess.Popen]:
        """The load on `target`: one generator, or with several workers one per
        load core, the streams shared out (one generator process reads at most
        a core's worth of chunks, less than several workers send)."""
        cores = cpu_plan(self.workers)[2]
        concurrency = int(options.get("concurrency", 1))
        parts = min(len(cores), concurrency) if self.workers > 1 and "concurrency" in options else 1
        if parts == 1:
            return [self._start_load(target, stream, options, cores)]
        per_stream = int(options["requests"]) / concurrency
        shares = [concurrency // parts + (index < concurrency % parts) for index in range(parts)]
        return [
            self._start_load(
                target, stream, {**options, "concurrency": share, "requests": round(share * per_stream)}, [core]
            )
            for share, core in zip(shares, cores, strict=False)
        ]

    def _start_load(self, target: str, stream: bool, options: dict[str, object], cores: list[int]) -> subprocess.Popen:
        url, body, end = self.request(target, stream)
        command = [*taskset(cores), self.python, "-m", "bench.stream_load", "--url", url]
        command += ["--body", body, "--end-marker", end, "--label", target]
        proxy = {"direct": None, "pt-sse": self.pids["pt-sse"], "floor": self.pids["floor"]}.get(
            target, self.pids["gateway"]
        )
        if proxy is not None:
            command += ["--pid", f"proxy={proxy}"]
        for name, value in options.items():
            command += [f"--{name.replace('_', '-')}", str(value)]
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def _row(self, row: dict) -> dict:
        proxy_cpu, ok = row["cpu_s"].get("proxy"), row["ok"]
        row["cpu_us_per_chunk"] = proxy_cpu * 1e6 / (ok * (self.sizes.chunks + 2)) if proxy_cpu and ok else None
        row["cpu_us_per_request"] = proxy_cpu * 1e6 / ok if proxy_cpu and ok else None
        return row

    def rounds(self, targets: list[str], stream: bool = True, **options: object) -> dict[str, list[dict]]:
        """Each target in turn, `repeats` times."""
        rows: dict[str, list[dict]] = {target: [] for target in targets}
        for repeat in range(self.sizes.repeats):
            for target in targets:
                row = self.load(target, stream, **options)
                rows[target].append(row)
                cpu = row["cpu_us_per_chunk"] if stream else row["cpu_us_per_request"]
                shown = [] if cpu is None else [f"{cpu:.1f} µs"]
                shown += [f"p99 gap {row['gap_ms_p99']} ms"] if stream else []
                shown.append(f"errors {row['errors']}")
                print(f"  [{repeat}] {target}: {', '.join(shown)}", flush=True)
        return rows


def _output(process: subprocess.Popen) -> dict:
    """The JSON line a load generator printed."""
    out, err = process.communicate(timeout=900)
    if process.returncode:
        raise SystemExit(f"the load generator failed:\n{err[-3000:]}")
    row: dict = json.loads(out.strip().splitlines()[-1])
    return row


def merged(rows: list[dict]) -> dict:
    """One row for load generators run side by side on one target: requests
    and errors summed; each counted the same proxy over its own window, so
    its CPU is the widest window's; percentiles cannot be pooled from
    summaries, so each gap and time to first byte is the worst of theirs."""
    if len(rows) == 1:
        return rows[0]
    row = dict(rows[0])
    for key in ("requests", "ok", "errors"):
        row[key] = sum(part[key] for part in rows)
    row["error_kinds"] = {}
    for part in rows:
        for kind, count in part["error_kinds"].items():
            row["error_kinds"][kind] = row["error_kinds"].get(kind, 0) + count
    for key in [key for key in row if key.startswith(("gap_ms", "ttfb_ms", "stream_p99")) or key == "wall_s"]:
        values = [part[key] for part in rows if part.get(key) is not None]
        row[key] = max(values) if values else None
    row["cpu_s"] = {name: max(part["cpu_s"][name] for part in rows) for name in rows[0]["cpu_s"]}
    return row


def cpu_plan(workers: int) -> tuple[list[int], list[int], list[int]]:
    """(proxy cores, backend cores, load generator cores): the proxy first,
    a core per worker where the machine has them."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("the bench needs two cores: the proxy on one, the backend and the load on another")
    proxy = cores[: min(workers, len(cores) - 1)]
    rest = cores[len(proxy) :]
    half = max(1, len(rest) // 2)
    backend, load = (rest[:half], rest[half:]) if len(rest) > 1 else (rest, rest)
    return proxy, backend, load


def taskset(cores: list[int]) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, cores))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_up(url: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def gateway_config(folder: Path, backend_url: str) -> Path:
    """bench/gateway.yaml with the backend's port and the template's absolute path."""
    config = yaml.safe_load((REPO / "bench" / "gateway.yaml").read_text())
    for model in config["models"]:
        model["backend"]["url"] = backend_url + "/v1"
        if "chat_template" in model:
            model["chat_template"] = str((REPO / "bench" / model["chat_template"]).resolve())
    path = folder / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def servers(python: str, workers: int, sizes: Sizes, delay_ms: int, preset: str, pace: str = "own") -> Iterator[Bench]:
    """The backend (its streams paced on their `own` clocks, or on one
    shared `step` clock), the pass-through and parsegate, pinned, on free ports."""
    proxy, backend_cores, _ = cpu_plan(workers)
    ports = {name: free_port() for name in ("backend", "pt-sse", "floor", "gateway")}
    bench = Bench(python, workers, sizes, {name: f"http://127.0.0.1:{port}" for name, port in ports.items()})
    backend = [python, str(REPO / "bench" / "fake_backend.py"), "--port", str(ports["backend"])]
    backend += ["--num-chunks", str(sizes.chunks), "--delay-ms", str(delay_ms), "--preset", preset, "--pace", pace]
    passthrough = [python, str(REPO / "bench" / "passthrough.py"), "--port", str(ports["pt-sse"]), "--mode", "sse"]
    passthrough += ["--backend", bench.urls["backend"]]
    floor = [python, str(REPO / "bench" / "aiohttp_floor.py"), "--port", str(ports["floor"]), "--backend"]
    floor.append(bench.urls["backend"])
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started: dict[str, subprocess.Popen] = {}
    with tempfile.TemporaryDirectory(prefix="parsegate-bench-") as folder:
        serve = [python, "-m", "gateway", "serve", "--config", str(gateway_config(Path(folder), bench.urls["backend"]))]
        serve += ["--port", str(ports["gateway"]), "--workers", str(workers)]
        try:
            if len(backend_cores) > 1:  # a process per core, sharing the port
                for core in backend_cores:
                    started[f"backend-{core}"] = subprocess.Popen([*taskset([core]), *backend, "--reuse-port"], **quiet)
            else:
                started["backend"] = subprocess.Popen([*taskset(backend_cores), *backend], **quiet)
            started["pt-sse"] = subprocess.Popen([*taskset(proxy[:1]), *passthrough], **quiet)
            started["floor"] = subprocess.Popen([*taskset(proxy[:1]), *floor], **quiet)
            # run from the scratch folder, so that files the gateway writes where it runs go with it
            here = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
            started["gateway"] = subprocess.Popen([*taskset(proxy), *serve], cwd=folder, env=here, **quiet)
            for url in bench.urls.values():
                wait_up(url + "/health")
            if workers > 1:  # a core for each worker process
                gateway = started["gateway"].pid
                deadline = time.monotonic() + 60
                while len(process_tree(gateway)) <= workers and time.monotonic() < deadline:
                    time.sleep(0.2)
                for index, child in enumerate(process_tree(gateway)[1:]):
                    os.sched_setaffinity(child, {proxy[index % len(proxy)]})
            bench.pids = {name: process.pid for name, process in started.items()}
            yield bench
        finally:
            for process in started.values():
                process.terminate()
            for process in started.values():
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)


def measured(rows: list[dict], key: str) -> float | None:
    """The median of `key` over the rows that have it; None when none has
    (a load with no stream that ended well, or no CPU time counted)."""
    values = [row[key] for row in rows if row.get(key) is not None]
    return statistics.median(values) if values else None


def median(rows: list[dict], key: str) -> float:
    """`measured`, for a figure every load gives."""
    value = measured(rows, key)
    if value is None:
        raise statistics.StatisticsError(f"no row has {key}")
    return value


def ratio_table(rows: dict[str, list[dict]], key: str, unit: str, goal: float | None) -> list[str]:
    """A row per target; one with no figure (its streams failed) says so
    with "—" and its errors, instead of stopping the bench."""
    floor = measured(rows["pt-sse"], key)
    lines = [f"| target | proxy CPU {unit} | / pt-sse | goal | met | errors | other CPU s |", "|" + "---|" * 7]
    for target, target_rows in rows.items():
        if target == "direct":
            continue
        figure = measured(target_rows, key)
        judged = target != "pt-sse" and goal is not None
        errors = sum(row["errors"] for row in target_rows)
        foreign = median(target_rows, "foreign_cpu_s")
        shown_goal = f"≤ {goal}×" if judged else ""
        if figure is None or floor is None:
            lines.append(f"| {target} | — | — | {shown_goal} | {'NO' if judged else ''} | {errors} | {foreign:.1f} |")
            continue
        ratio = figure / floor
        met = ("yes" if ratio <= goal else "NO") if judged and goal is not None else ""
        lines.append(f"| {target} | {figure:.1f} | {ratio:.2f}× | {shown_goal} | {met} | {errors} | {foreign:.1f} |")
    return lines


def burst(bench: Bench) -> list[str]:
    sizes = bench.sizes
    rows = bench.rounds(SURFACES, concurrency=sizes.burst_streams, requests=sizes.burst_requests, warmup=8)
    title = f"burst: {sizes.burst_streams} streams as fast as the backend sends, {sizes.chunks} chunks each"
    return [title, *ratio_table(rows, "cpu_us_per_chunk", "µs per chunk", GOALS["burst"])]


def paced(bench: Bench) -> list[str]:
    sizes, streams = bench.sizes, bench.sizes.paced_streams
    rows = bench.rounds(
        ["direct", *SURFACES],
        concurrency=streams,
        requests=streams * sizes.streams_per_connection,
        warmup=sizes.paced_warmup,
        ramp=sizes.ramp,
    )
    lines = [f"paced: {streams} streams at 50 chunks/s, arrivals spread over {sizes.ramp:g} s"]
    lines += ratio_table(rows, "cpu_us_per_chunk", "µs per chunk", GOALS["paced"])
    direct = median(rows["direct"], "gap_ms_p99")
    lines += ["", "| target | p99 gap ms | growth over direct ms | worst stream's p99 gap ms | TTFB p99 ms |"]
    lines.append("|" + "---|" * 5)
    for target, target_rows in rows.items():
        gap = median(target_rows, "gap_ms_p99")
        growth = "" if target == "direct" else f"{gap - direct:+.1f}"
        worst, ttfb = median(target_rows, "stream_p99_gap_ms_worst"), median(target_rows, "ttfb_ms_p99")
        lines.append(f"| {target} | {gap:.1f} | {growth} | {worst:.1f} | {ttfb:.1f} |")
    return lines


def paired(bench: Bench, title: str = "paired") -> list[str]:
    """Paced, each surface loaded together with the pass-through."""
    sizes, streams = bench.sizes, bench.sizes.paced_streams
    options = {
        "concurrency": streams,
        "requests": streams * sizes.streams_per_connection,
        "warmup": sizes.paced_warmup,
        "ramp": sizes.ramp,
    }
    pairs: dict[str, list[tuple[dict, dict]]] = {target: [] for target in ["floor", *SURFACES[1:]]}
    for repeat in range(sizes.repeats):
        for target in pairs:
            rows = bench.loads_at_once(["pt-sse", target], **options)
            pairs[target].append((rows["pt-sse"], rows[target]))
            shown = f"{rows[target]['cpu_us_per_chunk']:.1f} µs, pt-sse {rows['pt-sse']['cpu_us_per_chunk']:.1f} µs"
            print(f"  [{repeat}] {target} with pt-sse: {shown}", flush=True)
    goal = GOALS["paced"]
    lines = [
        f"{title}: {streams} paced streams on a surface and {streams} on pt-sse at the same time",
        "| target | proxy CPU µs per chunk | pt-sse's, same runs | / pt-sse, median of the pairs | goal | met | errors |",
        "|" + "---|" * 7,
    ]
    for target, runs in pairs.items():
        ratio = statistics.median(ours["cpu_us_per_chunk"] / theirs["cpu_us_per_chunk"] for theirs, ours in runs)
        figure = statistics.median(ours["cpu_us_per_chunk"] for _, ours in runs)
        pass_through = statistics.median(theirs["cpu_us_per_chunk"] for theirs, _ in runs)
        errors = sum(ours["errors"] + theirs["errors"] for theirs, ours in runs)
        judged = target != "floor"  # the stack's own floor, for scale
        met = ("yes" if ratio <= goal else "NO") if judged else ""
        shown_goal = f"≤ {goal}×" if judged else ""
        row = f"| {target} | {figure:.1f} | {pass_through:.1f} | {ratio:.2f}× | {shown_goal} | {met} | {errors} |"
        lines.append(row)
    return lines


def stepped(bench: Bench) -> list[str]:
    """`paired`, the backend's chunks on one shared clock (`servers(pace="step")`)."""
    return paired(bench, "stepped (every stream's chunks on one 20 ms clock)")


def whole(bench: Bench) -> list[str]:
    rows = bench.rounds(SURFACES, stream=False, concurrency=8, requests=bench.sizes.whole_requests, warmup=16)
    return [
        "whole: non-streamed requests, 8 at a time",
        *ratio_table(rows, "cpu_us_per_request", "µs per request", None),
    ]


def carries(bench: Bench, target: str, streams: int) -> tuple[bool, str]:
    """Whether `target` carries `streams` paced streams: every stream kept,
    the p99 gap within GAP_GROWTH_MS of the direct connection's."""
    sizes = bench.sizes
    options = {"concurrency": streams, "requests": streams * sizes.streams_per_connection, "ramp": sizes.ramp}
    direct, row = bench.load("direct", **options), bench.load(target, **options)
    growth = row["gap_ms_p99"] - direct["gap_ms_p99"]
    verdict = row["errors"] == 0 and direct["errors"] == 0 and growth <= GAP_GROWTH_MS
    cpu = row["cpu_us_per_chunk"] or 0.0
    return verdict, (
        f"{streams}: {'yes' if verdict else 'no'} (p99 gap {row['gap_ms_p99']} ms, direct {direct['gap_ms_p99']} ms, "
        f"errors {row['errors']}, {cpu:.0f} µs/chunk)"
    )


def capacity(bench: Bench, target: str) -> tuple[int, bool, list[str]]:
    """(streams carried, whether a count failed, the probes): double while
    carried, then bisect to within an eighth, at most `probes` probes and
    `probe_seconds`."""
    sizes = bench.sizes
    carried, failed, notes = 0, 0, []
    streams = sizes.capacity_start * bench.workers
    deadline = time.monotonic() + sizes.probe_seconds
    while len(notes) < sizes.probes and time.monotonic() < deadline:
        verdict, note = carries(bench, target, streams)
        notes.append(note)
        print(f"  {target}, {bench.workers} workers: {note}", flush=True)
        carried, failed = (streams, failed) if verdict else (carried, streams)
        if failed and failed - carried <= max(4, carried // 8):
            break
        streams = streams * 2 if not failed else (carried + failed) // 2
    return carried, bool(failed), notes


def capacity_table(found: list[tuple[str, int, int, bool, list[str]]]) -> list[str]:
    """The capacity rows, with each worker count's streams per worker against
    the fewest workers' (1.00 = linear scaling; issue 23 asks ≥ 0.85)."""
    lines = [
        f"capacity: streams at 50 chunks/s with every stream kept and the p99 gap ≤ direct + {GAP_GROWTH_MS:g} ms "
        "(marker-free text)",
        "| target | workers | streams carried | goal | per worker, / fewest workers | probes |",
        "|" + "---|" * 6,
    ]
    first: dict[str, tuple[int, int]] = {}
    for target, workers, carried, bounded, notes in found:
        base_workers, base = first.setdefault(target, (workers, carried))
        scaling = f"{carried / workers / (base / base_workers):.2f}" if base and workers != base_workers else ""
        goal = f"≥ {CAPACITY_GOAL * workers}" if target != "pt-sse" else ""
        shown = str(carried) if bounded else f"≥ {carried}"
        lines.append(f"| {target} | {workers} | {shown} | {goal} | {scaling} | {'; '.join(notes)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="one repeat, fewer requests and probes (about 6 minutes)")
    size.add_argument("--smoke", action="store_true", help="a few short streams: checks that the bench runs")
    parser.add_argument("--python", default=sys.executable, help="interpreter with the repo and the bench tools")
    parser.add_argument(
        "--workers",
        default="1",
        help="parsegate worker processes, a core each; a comma list (1,2,4,8) runs capacity once per count, "
        "the other scenarios with the first",
    )
    parser.add_argument("--only", default="", help="comma list of scenarios: burst,paced,paired,stepped,whole,capacity")
    parser.add_argument(
        "--capacity-targets", default="", help="comma list (default: chat, and pt-sse with one worker in full runs)"
    )
    args = parser.parse_args()
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    counts = [int(count) for count in args.workers.split(",")]
    chosen = set(filter(None, args.only.split(","))) or {"burst", "paced", "paired", "stepped", "whole", "capacity"}
    in_full = [] if args.quick or args.smoke else ["pt-sse"]
    targets = args.capacity_targets.split(",") if args.capacity_targets else ["chat", *in_full]
    for workers in counts:
        proxy, backend, load_cores = cpu_plan(workers)
        print(f"{workers} workers: parsegate on cores {proxy}, pass-through {proxy[:1]}, ", end="")
        print(f"backend {backend}, load {load_cores}" + ("" if len(proxy) == workers else " (workers share cores)"))
    # (scenario, the backend's delay per chunk in ms, the backend's text, its pace, what it runs)
    plan: list[tuple[str, int, str, str, Callable[[Bench], list[str]]]] = [
        ("burst", 0, "qwen3_tool", "own", burst),
        ("paced", PACED_DELAY_MS, "qwen3_tool", "own", paced),
        ("paired", PACED_DELAY_MS, "qwen3_tool", "own", paired),
        ("stepped", PACED_DELAY_MS, "qwen3_tool", "step", stepped),
        ("whole", 0, "qwen3_tool", "own", whole),
    ]
    report: list[str] = []
    for name, delay_ms, preset, pace, scenario in plan:
        if name in chosen:
            print(f"[{name}]", flush=True)
            with servers(args.python, counts[0], sizes, delay_ms, preset, pace) as bench:
                report += ["", *scenario(bench)]
    if "capacity" in chosen:
        print("[capacity]", flush=True)
        found = []
        for workers in counts:
            with servers(args.python, workers, sizes, PACED_DELAY_MS, "plain") as bench:
                for target in targets:
                    if target != "pt-sse" or workers == 1:  # the pass-through is one process
                        found.append((target, workers, *capacity(bench, target)))
        report += ["", *capacity_table(found)]
    print("\n".join(report), flush=True)


if __name__ == "__main__":
    main()
