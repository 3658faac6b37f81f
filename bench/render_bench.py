"""Template mode's render of an agent's turn, stage by stage.

Two requests, each rendered with Qwen3's chat template as the bench's
template-mode model renders it: the captured Claude Code request
(`../shared/agents/captures/`, 48 KB; the agent-size prompt; in a clone
on its own, bench/agent_turn_bench.py's request in Claude Code's shape,
43 KB, stands in for it) and the same
request after 100 turns of tool use (a Bash call and its 2.5 KB of
output: about 300 KB). For each, the CPU time of each stage a render
crosses, timed in this process (median and range of the repeats):

- `read`: the Messages request read and converted to chat (every surface
  pays it; template mode's own cost starts after it)
- `job`: the job written for the worker (`render_job`)
- `job read`: the job read back, as the worker reads it
- `render`: the prompt rendered (`render_prompt`: the messages made what
  templates read, then the template), in the worker
- `render held`: the same, as a worker renders a request it holds (its
  messages converted and its tools' JSON written at its last render)
- `reply`: the prompt written back, and read by the gateway
- `after`: what the gateway does with the prompt (the reasoning check,
  the completions body written)

and `end to end`: `RenderPool.render` against a real worker process, the
CPU of this process and of the worker (`/proc`) per render, and its wall
time, for a request the worker holds none of, the same request again,
and an agent's next turn (`WAYS`).

    python -m bench.render_bench [--repeats N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.agent_turn_bench import chat_equivalent, claude_code_turn
from bench.surface_requests import REPO
from gateway.templates.chat_messages import RememberedMessages
from gateway.templates.chat_template import ChatTemplate, RememberedJson, prompt_opens_reasoning
from gateway.templates.prompt_render import Held, read_reply, render_job, render_prompt, reply_bytes
from gateway.templates.render_pool import RenderPool
from gateway.templates.sources import load_chat_template
from gateway.upstream.completion_request import completion_body

CAPTURE = REPO.parent / "shared" / "agents" / "captures" / "claude-20261125-091313-004-POST-v1_messages.json"
TEMPLATE = REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"
_OUTPUT = "\n".join(f"-rw-r--r-- 1 dev dev {i * 37:6d} Nov 25 09:13 src/module_{i:03d}/file.py" for i in range(36))
MAX_PROMPT_CHARS = 4_000_000


def captured_turn(turns: int) -> dict:
    """The captured Claude Code request after `turns` turns of tool use
    (the agent's loop on the captured request), or the agent turn bench's
    request in its shape where the capture is not beside the repo."""
    captured = json.loads(CAPTURE.read_bytes())["body"] if CAPTURE.is_file() else claude_code_turn(0)
    body = {**captured, "model": "fake"}
    messages = list(body["messages"])
    for turn in range(turns):
        call = {"type": "tool_use", "id": f"toolu_{turn:04d}", "name": "Bash", "input": {"command": f"ls -la {turn}"}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {turn}: listing."}, call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn:04d}", "content": _OUTPUT}
        messages.append({"role": "user", "content": [result]})
    return {**body, "messages": messages}


def timed(work: Callable[[], Any], repeats: int) -> list[float]:
    """CPU ms of each of `repeats` calls."""
    figures = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        figures.append((time.process_time() - start) * 1e3)
    return figures


def stages(template: ChatTemplate, body: dict, repeats: int) -> dict[str, list[float]]:
    raw = orjson.dumps(body)
    chat = chat_equivalent("messages", body)
    job = render_job(template, chat, MAX_PROMPT_CHARS).sent(Held())
    prompt = render_prompt(template, chat)
    reply = reply_bytes({"prompt": prompt})
    held = ChatTemplate(dict(template.sources), eos_token=template.eos_token, max_prompt_chars=MAX_PROMPT_CHARS)
    held.template_messages, tojson = RememberedMessages(), RememberedJson()
    held.use_tojson(tojson)
    tojson.keep(chat["tools"])

    def after() -> bytes:
        prompt_opens_reasoning(prompt)
        return orjson.dumps(completion_body(chat, prompt, template.stop_texts(), "vllm"))

    return {
        "read": timed(lambda: chat_equivalent("messages", orjson.loads(raw)), repeats),
        "job": timed(lambda: render_job(template, chat, MAX_PROMPT_CHARS).sent(Held()), repeats),
        "job read": timed(lambda: orjson.loads(job), repeats),
        "render": timed(lambda: render_prompt(template, chat), repeats),
        "render held": timed(lambda: render_prompt(held, chat), repeats),
        "reply": timed(lambda: read_reply(reply_bytes({"prompt": prompt})), repeats),
        "after": timed(after, repeats),
        "_sizes": [len(raw) / 1024, len(job) / 1024, len(prompt) / 1024, len(reply) / 1024],
    }


def _process_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")


# end to end: how each render's request relates to the worker's last one
WAYS = {
    "whole": "the worker holds none of it: the whole conversation sent and converted",
    "again": "the same request again",
    "next turn": "the request after one turn fewer: its last turn of tool use (two messages) sent and converted",
}


async def end_to_end(template: ChatTemplate, turns: int, way: str, renders: int) -> dict[str, float]:
    """CPU ms per render of this process and of the worker, and wall ms,
    over `renders` renders after one to start the worker."""
    chat = chat_equivalent("messages", captured_turn(turns))
    pool = RenderPool(1, 30.0, MAX_PROMPT_CHARS)
    try:
        await pool.render(template, chat, "bench")
        worker = pool._idle[0]  # the bench reads the worker's CPU
        gateway_start, worker_start = time.process_time(), _process_cpu_ms(worker.process.pid)
        wall_start = time.perf_counter()
        for _ in range(renders):
            # what the worker is taken to hold from its last job (its conversation is that request's)
            if way == "whole":
                worker.held = Held()
            elif way == "next turn":
                worker.held = Held(worker.held.tools, worker.held.messages[:-2])
            await pool.render(template, chat, "bench")
        wall = (time.perf_counter() - wall_start) * 1e3 / renders
        gateway = (time.process_time() - gateway_start) * 1e3 / renders
        spent = (_process_cpu_ms(worker.process.pid) - worker_start) / renders
        return {"gateway": gateway, "worker": spent, "wall": wall}
    finally:
        await pool.close()


def _figure(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"


REQUESTS = (("captured Claude Code", 0), ("+ 100 turns", 100))


def report(repeats: int, renders: int, rounds: int) -> list[str]:
    template = load_chat_template(TEMPLATE, eos_token="<|im_end|>")
    template.max_prompt_chars = MAX_PROMPT_CHARS  # as the worker's copy has it
    lines = [f"CPU ms per stage in one process, median (range) of {repeats}"]
    lines += [
        "| request | KB | prompt KB | read | job | job read | render | render held | reply | after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, turns in REQUESTS:
        figures = stages(template, captured_turn(turns), repeats)
        sizes = figures.pop("_sizes")
        cells = " | ".join(_figure(values) for values in figures.values())
        lines.append(f"| {name} | {sizes[0]:.0f} | {sizes[2]:.0f} | {cells} |")
    lines += ["", f"End to end (RenderPool.render, one worker): {rounds} rounds of {renders} renders"]
    lines += [f"- {way}: {meaning}" for way, meaning in WAYS.items()]
    lines += ["| request | way | gateway + worker CPU ms | CPU ms per render | wall ms |", "|---|---|---|---|---|"]
    for name, turns in REQUESTS:
        for way in WAYS:
            rows = [asyncio.run(end_to_end(template, turns, way, renders)) for _ in range(rounds)]
            split = " + ".join(f"{statistics.median(row[part] for row in rows):.2f}" for part in ("gateway", "worker"))
            total = _figure([row["gateway"] + row["worker"] for row in rows])
            lines.append(f"| {name} | {way} | {split} | {total} | {_figure([row['wall'] for row in rows])} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30, help="timings per stage")
    parser.add_argument("--renders", type=int, default=100, help="renders per end-to-end round")
    parser.add_argument("--rounds", type=int, default=5, help="end-to-end rounds")
    args = parser.parse_args()
    print("\n".join(report(args.repeats, args.renders, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
