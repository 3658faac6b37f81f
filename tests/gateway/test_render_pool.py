"""Template mode's render workers as a request sees them: a render whose
request is cancelled (its client left) does not leave its worker running
the template, and the next render gets a worker that answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.stream_load import cpu_seconds
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from gateway.templates.prompt_render import render_prompt
from gateway.templates.render_pool import RenderPool
from tests.gateway.test_template_mode import QWEN3
from tests.render_workers import render_workers

SPIN = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"  # minutes of CPU
CHAT = {"messages": [{"role": "user", "content": "Hi"}]}


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def _spinning_worker(others: set[int]) -> int:
    """The worker running the template: a new render worker that has spent
    a second of CPU, more than starting Python and importing jinja costs
    (polled, at most 60 s)."""
    for _ in range(600):
        busy = [pid for pid in render_workers() - others if cpu_seconds(pid) >= 1.0]
        if busy:
            return busy[0]
        await asyncio.sleep(0.1)
    raise AssertionError("no worker ever ran the template")


def test_a_cancelled_render_kills_its_worker_and_the_next_render_is_answered():
    async def scenario() -> None:
        others = render_workers()  # another test's gateway may hold some
        pool = RenderPool(workers=1, timeout=600, max_prompt_chars=100_000)
        spin = ChatTemplate(SPIN, where="spin.jinja")
        rendering = asyncio.ensure_future(pool.render(spin, CHAT, "spin"))
        worker = await _spinning_worker(others)
        rendering.cancel()
        ended, _ = await asyncio.wait([rendering], timeout=60)  # a bound, so that a worker left spinning fails
        assert ended and rendering.cancelled()
        assert not _alive(worker)  # killed and reaped, not left running the loop
        qwen3 = ChatTemplate(QWEN3.read_text(), eos_token="<|im_end|>", where=QWEN3.name)
        assert await pool.render(qwen3, CHAT, "qwen3") == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        await pool.close()
        assert render_workers() <= others

    asyncio.run(scenario())


def test_a_prompt_comes_back_from_its_worker_as_rendered_in_process():
    """The prompt travels back as UTF-8 text: non-ASCII, control characters,
    quotes and backslashes arrive as the template wrote them."""
    text = 'naïve 日本語 — "quoted" \\ back\tslash\x00\x1f \U0001f600 \u2028 end'
    chat = {"messages": [{"role": "system", "content": text}, {"role": "user", "content": text * 3}]}

    async def scenario() -> None:
        pool = RenderPool(workers=1, timeout=60, max_prompt_chars=100_000)
        qwen3 = ChatTemplate(QWEN3.read_text(), eos_token="<|im_end|>", where=QWEN3.name)
        try:
            assert await pool.render(qwen3, chat, "qwen3") == render_prompt(qwen3, chat)
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_a_template_that_writes_a_lone_surrogate_is_refused_and_its_worker_serves_on():
    """Such a prompt cannot be sent as UTF-8: the template's error says so,
    and the worker is not lost with it."""
    lone = ChatTemplate('{{ "\\ud800" }}', where="lone.jinja")

    async def scenario() -> None:
        others = render_workers()
        pool = RenderPool(workers=1, timeout=60, max_prompt_chars=100_000)
        try:
            with pytest.raises(ChatTemplateError, match="not Unicode"):
                await pool.render(lone, CHAT, "lone")
            workers = render_workers() - others
            qwen3 = ChatTemplate(QWEN3.read_text(), eos_token="<|im_end|>", where=QWEN3.name)
            assert await pool.render(qwen3, CHAT, "qwen3") == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            assert render_workers() - others == workers and len(workers) == 1
        finally:
            await pool.close()

    asyncio.run(scenario())
