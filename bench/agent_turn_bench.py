"""A coding agent's turn: what it costs the gateway as the history grows.

Claude Code and Codex CLI send the whole conversation with every turn, so
the gateway reads, checks and converts more of it each time. The requests
are built here in their shapes (`../shared/agents/` describes what they
send): Claude Code's Messages request (a 7 KB system prompt, 12 tools
with 31 KB of schemas), Codex CLI's Responses request (21 KB of
developer and user messages, 9 tools with 18 KB of schemas, `store:
false`), each with N earlier turns of tool use (a shell call and its 1.5
KB of output). Targets, for each N: `claude-code` (`/v1/messages`),
`codex` (`/v1/responses`), `claude-code` to the template-mode model
(`template`: the prompt rendered with Qwen3's chat template), and the bare
pass-through relaying each request's chat equivalent (what parsegate
sends upstream, converted by parsegate's own code), one request at a time,
streamed, the backend answering two chunks of plain text. Figures: proxy
CPU per turn (utime + stime from /proc, the render workers included),
median of the repeats, and each against the pass-through's for the same
history; then what each KB of history adds.

    python -m bench.agent_turn_bench [--quick | --smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from bench.gateway_bench import QUICK, cpu_plan, servers, taskset
from bench.surface_requests import REPO
from gateway.api.compaction_seal import Seal
from gateway.api.messages_request import read_messages_request
from gateway.api.request import read_object
from gateway.api.responses_request import chat_request, responses_fields

_SENTENCE = "The tool reads files and runs commands in the working tree, and reports what it found. "
_LISTING = "total 48\n" + "\n".join(f"-rw-r--r-- 1 dev dev {i * 37:6d} Nov 25 09:13 file_{i:03d}.py" for i in range(30))


@dataclass(frozen=True)
class Sizes:
    histories: tuple[int, ...]  # earlier turns of tool use
    requests: int
    warmup: int
    repeats: int


FULL = Sizes((0, 30, 100), 300, 20, 3)
QUICK_SIZES = Sizes((0, 100), 100, 10, 1)
SMOKE = Sizes((0, 5), 10, 1, 1)


def prose(chars: int) -> str:
    """Plain words, `chars` long."""
    return (_SENTENCE * (chars // len(_SENTENCE) + 1))[:chars]


def _schema(fields: int, description: int) -> dict:
    properties = {f"field_{i}": {"type": "string", "description": prose(description)} for i in range(fields)}
    return {"type": "object", "properties": properties, "required": ["field_0"], "additionalProperties": False}


def claude_code_turn(turns: int) -> dict:
    """A Claude Code `/v1/messages` request after `turns` turns of tool use."""
    names = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "Task", "TodoWrite", "WebFetch", "WebSearch"]
    names += ["NotebookEdit", "ExitPlanMode"]
    tools = [{"name": name, "description": prose(1100), "input_schema": _schema(6, 230)} for name in names]
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": prose(620)}]}]
    for turn in range(turns):
        call = {
            "type": "tool_use",
            "id": f"toolu_{turn:04d}",
            "name": "Bash",
            "input": {"command": f"ls -la src/{turn}"},
        }
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {turn}: listing."}, call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn:04d}", "content": _LISTING}
        messages.append({"role": "user", "content": [result]})
    messages.append({"role": "user", "content": "Now fix the failing test."})
    system = [{"type": "text", "text": prose(2500)} for _ in range(3)]
    return {
        "model": "fake",
        "max_tokens": 32000,
        "stream": True,
        "system": system,
        "tools": tools,
        "messages": messages,
    }


def codex_turn(turns: int) -> dict:
    """A Codex CLI `/v1/responses` request after `turns` turns of tool use."""

    def message(role: str, chars: int) -> dict:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": prose(chars)}]}

    names = ["shell", "apply_patch", "update_plan", "view_image", "read_file", "list_dir", "grep_files"]
    names += ["web_search", "request_user_input"]
    tools = [
        {"type": "function", "name": name, "description": prose(900), "strict": False, "parameters": _schema(5, 200)}
        for name in names
    ]
    items = [message("developer", 17600), message("developer", 2800), message("user", 1000), message("user", 170)]
    for turn in range(turns):
        arguments = json.dumps({"command": ["bash", "-lc", f"ls -la src/{turn}"]})
        items.append({"type": "function_call", "call_id": f"call_{turn:04d}", "name": "shell", "arguments": arguments})
        items.append({"type": "function_call_output", "call_id": f"call_{turn:04d}", "output": _LISTING})
    return {"model": "fake", "stream": True, "store": False, "input": items, "tools": tools, "tool_choice": "auto"}


def chat_equivalent(surface: str, body: dict) -> dict:
    """The chat request parsegate sends upstream for `body`."""
    raw = orjson.dumps(body)
    if surface == "messages":
        return read_messages_request(raw)[1]
    request = read_object(raw)
    return chat_request(responses_fields(request), request, [], Seal(None))[0]


@dataclass(frozen=True)
class Target:
    name: str  # claude-code, codex, template
    surface: str  # messages, responses
    model: str

    def body(self, turns: int) -> dict:
        made = claude_code_turn(turns) if self.surface == "messages" else codex_turn(turns)
        return {**made, "model": self.model}


TARGETS = [
    Target("claude-code", "messages", "fake"),
    Target("codex", "responses", "fake"),
    Target("template", "messages", "fake-template"),
]
PATHS = {"messages": "/v1/messages", "responses": "/v1/responses", "chat": "/v1/chat/completions"}
END = {"messages": "message_stop", "responses": "response.completed", "chat": "[DONE]"}


def cpu_per_turn(
    python: str, url: str, body: dict, end: str, pid: int, sizes: Sizes, folder: Path
) -> tuple[float | None, int]:
    """(CPU ms of process `pid` per request, errors) for `body` sent one at a time."""
    path = folder / "body.json"
    path.write_bytes(orjson.dumps(body))
    command = [*taskset(cpu_plan(1)[2]), python, "-m", "bench.stream_load", "--url", url, "--body", f"@{path}"]
    command += ["--end-marker", end, "-c", "1", "-n", str(sizes.requests), "--warmup", str(sizes.warmup)]
    command += ["--pid", f"proxy={pid}"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    cpu, ok = row["cpu_s"].get("proxy"), row["ok"]
    return (cpu * 1e3 / ok if cpu and ok else None), row["errors"]


def measure(python: str, sizes: Sizes) -> dict[tuple[str, int], dict]:
    """Each target and its pass-through relay at each history length, the
    targets in turn within each repeat."""
    figures: dict[tuple[str, int], dict] = {}
    backend_sizes = replace(QUICK, chunks=2)
    with servers(python, 1, backend_sizes, delay_ms=0, preset="plain") as bench, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        gateway, relay = bench.pids["gateway"], bench.pids["pt-sse"]
        for _ in range(sizes.repeats):
            for turns in sizes.histories:
                for target in TARGETS:
                    body = target.body(turns)
                    row = figures.setdefault((target.name, turns), {"ms": [], "pt": [], "errors": 0})
                    row["kb"] = len(orjson.dumps(body)) / 1024
                    url = bench.urls["gateway"] + PATHS[target.surface]
                    ms, errors = cpu_per_turn(python, url, body, END[target.surface], gateway, sizes, folder)
                    relayed = chat_equivalent(target.surface, {**body, "model": "fake"})
                    pt_url = bench.urls["pt-sse"] + PATHS["chat"]
                    pt_ms, pt_errors = cpu_per_turn(python, pt_url, relayed, END["chat"], relay, sizes, folder)
                    row["ms"].append(ms)
                    row["pt"].append(pt_ms)
                    row["errors"] += errors + pt_errors
    return figures


def _median(values: list) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def report(figures: dict[tuple[str, int], dict], sizes: Sizes) -> list[str]:
    lines = [
        f"agent turns: one at a time, streamed, a two-chunk answer; {sizes.requests} per figure after "
        f"{sizes.warmup}, median of {sizes.repeats}",
        "| request | earlier turns | KB | parsegate CPU ms per turn | pt-sse relaying its chat request | / pt-sse "
        "| errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, turns), row in figures.items():
        ms, pt = _median(row["ms"]), _median(row["pt"])
        ratio = f"{ms / pt:.2f}×" if ms and pt else "—"
        shown = [f"{value:.2f}" if value is not None else "—" for value in (ms, pt)]
        lines.append(f"| {name} | {turns} | {row['kb']:.0f} | {shown[0]} | {shown[1]} | {ratio} | {row['errors']} |")
    shortest, longest = min(sizes.histories), max(sizes.histories)
    for target in TARGETS:
        low, high = figures[(target.name, shortest)], figures[(target.name, longest)]
        gateway = [_median(low["ms"]), _median(high["ms"])]
        relay = [_median(low["pt"]), _median(high["pt"])]
        kb = high["kb"] - low["kb"]
        if None not in gateway and None not in relay:
            lines.append(
                f"{target.name}: each KB of history adds {(gateway[1] - gateway[0]) / kb * 1e3:.1f} µs to parsegate, "
                f"{(relay[1] - relay[0]) / kb * 1e3:.1f} µs to the pass-through"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the repo and the bench tools")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="two history lengths, one repeat")
    mode.add_argument("--smoke", action="store_true", help="seconds: the test")
    args = parser.parse_args()
    sizes = SMOKE if args.smoke else QUICK_SIZES if args.quick else FULL
    print("\n".join(report(measure(args.python, sizes), sizes)), flush=True)


if __name__ == "__main__":
    main()
